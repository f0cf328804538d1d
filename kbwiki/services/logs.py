"""What a server's log and a command's output say, as one line for a refusal or ``kbwiki status``."""

from __future__ import annotations

import os
import re
from pathlib import Path


def log_line(path: Path) -> str:
    """What a server log says about why it stopped, as one line: its last FATAL/PANIC/ERROR line
    (else its last line) and the line before it, and where the whole log is."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"no log at {path}"
    if not lines:
        return f"{path} is empty"
    errors = [i for i, line in enumerate(lines) if re.search(r"\b(FATAL|PANIC|ERROR)\b|# ", line)]
    last = errors[-1] if errors else len(lines) - 1
    # The line before often names the cause ("invalid value for parameter ..." before "FATAL:
    # configuration file ... contains errors").
    said = " / ".join(lines[max(0, last - 1) : last + 1])
    return f"{said} (log: {path})"


def last_line(text: str) -> str:
    """The last non-blank line of a command's output, or ``no output``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def log_size(path: Path) -> int:
    """The size of ``path`` in bytes (0 when it cannot be read): where this run's lines begin."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def log_since(path: str | Path, offset: int) -> list[str]:
    """The non-blank lines ``path`` got after its first ``offset`` bytes (all of them when it was
    cut shorter since); [] when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(offset if 0 <= offset <= fh.tell() else 0)
            text = fh.read().decode(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def stopped(alive: bool, said: list[str], missed_s: float) -> str:
    """Why a server no longer answers, in the words of ``Server.why_stopped``: ``it stopped: <the
    last of the log lines said>``, ``it stopped with nothing in its log (killed?)`` when ``said``
    is empty (SIGKILL), or, when its process is ``alive``, ``it did not answer for N s although its
    process runs`` (``missed_s``: hung, or every connection slot taken)."""
    if alive:
        return f"it did not answer for {missed_s:.0f} s although its process runs"
    return f"it stopped: {said[-1]}" if said else "it stopped with nothing in its log (killed?)"


def short_error(message: str) -> str:
    """The gist of a start's :class:`ServiceError` for one status line: its last PANIC or FATAL
    clause (``FATAL: could not write to file "pg_wal/...": No space left on device``), else the
    message; without the log's time prefix and path."""
    found = list(re.finditer(r"\b(PANIC|FATAL):\s+", message))
    if not found:
        return message
    gist = re.sub(r"\s+\(log: [^)]*\)$", "", re.sub(r"\s+", " ", message[found[-1].start() :].split(" / ")[0]))
    if "contains errors" in gist:  # "configuration file ... contains errors": the line before names the error
        before = re.search(r"\b(?:LOG|ERROR|WARNING):\s+([^/]*?)\s+/ [^/]*$", message[: found[-1].end()])
        if before:
            gist = f"{before.group(1)}; {gist}"
    return gist
