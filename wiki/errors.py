"""Every refusal kbwiki makes, as a named exception under one base class, ``KbwikiError``.

Importable from every layer (it imports nothing of kbwiki). The rules:

- A repository or ``kbwiki.services`` turns a driver error into one of these where it is raised
  (``repos.db``'s pool for PostgreSQL connection failures, ``repos.servers`` and
  ``repos.dead_letter_spool`` for their own PostgreSQL and Redis connections),
  keeping the driver error as ``__cause__``, so callers catch these, not psycopg's or redis's (the
  Redis calls the actors make on their own client still raise redis errors).
- Errors that callers already catch by a builtin kind keep it as a second base (``BadInput`` is a
  ``ValueError``, ``NotFound`` and its kinds a ``LookupError``), so ``except ValueError`` still works.
- The ``kbwiki`` command maps each kind to one line and an exit code in one place
  (``kbwiki.command.EXIT_CODES``).

Also defined here, once: the error cut (``ERROR_LIMIT_BYTES``, 8 KiB), the per-document fail
budget (:func:`fail_budget_spent`) and the text of a failure kept with a document or dead letter
(:func:`error_text`).
"""

from __future__ import annotations

import hashlib
import traceback

#: Bytes of UTF-8 kept of an error: ``task_dead_letters.last_error`` holds at most this much (the
#: migration's "8 KiB"), and the traceback tail a failed op keeps is cut to this many characters
#: first (the dead-letter write then cuts it to bytes).
ERROR_LIMIT_BYTES = 8192


def error_text(exc: BaseException) -> str:
    """``"<Type>: <first line of the message>"`` (the headline a list or a grouping shows), then the
    end of ``exc``'s traceback (where it failed), within ``ERROR_LIMIT_BYTES`` characters in all."""
    message = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    head = head[: ERROR_LIMIT_BYTES // 8]
    tail = "".join(traceback.format_exception(exc))
    return f"{head}\n{tail[-(ERROR_LIMIT_BYTES - len(head) - 1) :]}"


#: Characters of an error's headline (``dead-letters list`` prints one per row).
HEADLINE_CHARS = 160


def error_headline(error: str) -> str:
    """The line that says what went wrong: the first line, or the last one of a bare traceback.

    ``error_text`` stores ``"<Type>: <message>"`` first; rows stored before it, a bare traceback
    (maybe cut from the front), whose last line is the exception.
    """
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return ""
    # a bare traceback, or one cut from the front ("in handle_request"): its last line is the exception
    line = lines[-1] if lines[0].startswith(("Traceback", "File ")) or ":" not in lines[0] else lines[0]
    return line if len(line) <= HEADLINE_CHARS else line[: HEADLINE_CHARS - 1] + "…"


def fail_budget_spent(fails: int | None, max_fail_retries: int) -> bool:
    """Whether a document op that failed ``fails`` times has used up its in-batch retry budget.

    ``max_fail_retries`` is ``Settings.wiki_max_fail_retries`` (5 by default): the op is tried that
    many times again after its first failure, then it becomes a ``wiki:ingest`` dead letter and
    its document ``failed``. ``fails`` None (the op is gone) never spends it.
    """
    return fails is not None and fails > max_fail_retries


class KbwikiError(Exception):
    """Base of every error kbwiki raises on purpose; the message is one line a user can act on."""


# --- bad input ---------------------------------------------------------------------------------


class BadInput(KbwikiError, ValueError):
    """An argument kbwiki refuses before writing anything: empty where required, wider than its
    column, a malformed cursor, an unknown option value."""


class EmptyDedupKey(BadInput):
    """An empty dedup key where one must name a document: it must never mean "every row"."""


class BadDocument(BadInput):
    """A document that cannot become wiki text. ``reason`` is a short stable code
    ("binary", "unsupported type", ...) for logs and the documents' ``error`` column; the
    message adds ``detail`` when given."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class OutsideRoot(BadInput):
    """A folder or file to ingest that is not under the folder its KB's source URIs are relative
    to (``kbwiki.source_root``): its files have no path there."""


class BadSetting(KbwikiError, RuntimeError):
    """A setting is refused (an environment variable with a bad value) or unset where a process
    needs it (DATABASE_URL outside the ``kbwiki`` command, which starts local servers instead)."""


# --- knowledge bases and dead letters ---------------------------------------------------------


class NotFound(KbwikiError, LookupError):
    """What a read names does not exist for the caller: an unknown, deleted or other tenant's KB,
    page or document look alike on purpose. The read API answers it 404."""


class UnknownKnowledgeBase(NotFound):
    """The KB does not exist, is deleted, or belongs to another tenant (the three look alike to a
    caller on purpose: a tenant learns nothing of another's KBs)."""


class KnowledgeBaseDeleted(UnknownKnowledgeBase):
    """The KB was live when the work started and was deleted meanwhile (or was already deleted)."""


class UnknownDocument(NotFound):
    """No document with this knowledge id or source URI in the KB."""


class UnknownPage(NotFound):
    """No live page with this slug in the KB, or no kept version of it with this number."""


class RevertRefused(KbwikiError):
    """A page cannot be reverted to the version asked: it is the current one, its content and
    sources are the current ones, its sources were not kept, or it cites documents deleted since."""


class DeadLetterNotFound(NotFound):
    """No dead letter with this id (of this tenant)."""


class RequeueRefused(KbwikiError):
    """The dead letter cannot be re-sent (its KB is gone, its actor is unknown, it holds no message)."""


class ResumeRefused(KbwikiError):
    """``kbwiki resume`` would change nothing: the KB's token budget is still spent (raise it, or
    pass ``--reset-budget``)."""


class ExportRefused(KbwikiError):
    """The export folder cannot be written without destroying files kbwiki did not write."""


class ExportEdited(ExportRefused):
    """Files an earlier export wrote were edited since (their SHA-256 no longer matches the
    marker's): a re-export would overwrite or remove them, so nothing is written without ``--force``."""


class RollbackRefused(KbwikiError):
    """``kbwiki migrate --rollback`` would drop every table without the consent it needs: a yes at
    the prompt or ``--yes`` (stdin not a terminal), and ``--force`` while KBs hold documents or pages."""


class WaitTimedOut(KbwikiError, TimeoutError):
    """A ``--wait`` ran out before the KB's lanes were empty (work is only done while a worker runs)."""


class Interrupted(KbwikiError):
    """The user stopped a command (Ctrl-C) while it waited or sent work: the message says what is
    kept and goes on (the queued work) and how to follow or finish it. Exit code 130 (128 +
    SIGINT), as a shell gives a command Ctrl-C ends."""


class DocumentsFailed(KbwikiError):
    """An ``ingest --wait`` ended with documents of the KB failed (they wrote no page)."""


class StoreConflict(KbwikiError, RuntimeError):
    """A row kept changing under concurrent writers for more attempts than a write makes."""


# --- servers -----------------------------------------------------------------------------------


class ServersUnreachable(KbwikiError, ConnectionError):
    """PostgreSQL or Redis does not answer (down, wrong URL, or gone while a command ran)."""


class DatabaseUnreachable(ServersUnreachable):
    """PostgreSQL refused or lost the connection, or the pool had none within its timeout."""


class RedisUnreachable(ServersUnreachable):
    """Redis refused or lost the connection or timed out."""


class CannotListen(KbwikiError):
    """``kbwiki serve`` cannot listen on its address: the port is in use, the host is not an
    address of this machine, or the port is privileged."""


class ServiceError(KbwikiError):
    """A local (embedded) server could not be found, started, reached or stopped; the message says why."""


# --- extraction --------------------------------------------------------------------------------


class SchemaOutdated(KbwikiError):
    """The configured database lacks migrations this version needs (``kbwiki migrate`` applies them)."""


class ExtractionError(KbwikiError):
    """Extraction failed for good: the document itself cannot give a valid extraction (e.g. no
    usable sentence). Retrying cannot help: the document ends ``skipped`` with the reason."""


class ExtractionUnavailable(KbwikiError):
    """Extraction failed for now: the extractor could not run (a model server timed out or refused).
    The op counts the failure against the document's fail budget (:func:`fail_budget_spent`) and
    is tried again after a backoff."""


class MissingExtra(ExtractionUnavailable, ImportError):
    """A part of kbwiki installed apart (an extra: ``cjk``, ``llm``, ``web``) is not installed; the
    message names the extra and the ``pip install`` that adds it (``wiki.extras``). A command ends
    on it; a document whose extraction needs it waits as for any unavailable extractor (its
    failure counted, tried again after a backoff, a dead letter past its budget), so nothing is
    lost before the extra is installed and the worker restarted."""


# --- the language model (the LLM extractor) ---------------------------------------------------

#: Characters of a raw answer kept in an error for triage (dead letters keep 8 KiB of the error).
RAW_KEPT_CHARS = 4000


class LLMError(ExtractionUnavailable):
    """Base of the LLM extractor's errors: extraction failed for now, unless ``for_good`` (retrying the
    document cannot help). What each subclass means and who owns it:

    - ``LLMUnavailable``: the endpoint did not answer (timeouts, 408, 429, 5xx) through all of the
      client's own retries; the map stage counts it and tries the document again later.
    - ``LLMConfigError``: the endpoint refused the request itself (400 in every output mode, 401,
      403, 404, 422): retrying cannot help until the configuration changes, so the map stage records it
      once for the KB and pauses the KB's model work. Its subclass ``LLMOutOfCredit`` (402, or the
      provider's words for an empty balance under another status) pauses the same way, until
      ``kbwiki resume`` or a configuration change.
    - ``LLMOutputInvalid``: the model answered, but the answer is truncated, empty, not JSON or has
      too many invalid items; counted like ``LLMUnavailable``, a dead letter once the document's budget
      is spent; ``raw`` keeps the answer for triage.
    - ``LLMRefused``: the provider's content filter stopped the answer: not retried (``for_good``),
      the document becomes a dead letter at once.
    """

    for_good = False


class LLMUnavailable(LLMError):
    """The endpoint stayed unreachable or overloaded through the client's retries."""


class LLMConfigError(LLMError):
    """The endpoint refused the request (``status``: 400, 401, 403, 404 or 422); ``message`` is the
    provider's own words. Not retried: the KB waits until its configuration changes. ``kind`` is
    stored with the KB's pause (``wiki_llm_config_errors.kind``)."""

    kind = "config"

    def __init__(self, status: int, message: str = "", base_url: str | None = None, model: str = "") -> None:
        self.status, self.message, self.base_url, self.model = status, message, base_url, model
        super().__init__(
            f"the model endpoint refused the request with HTTP {status} "
            f"(base URL {base_url or 'default'}, model {model}): {message}"
        )


class LLMNotAChatEndpoint(LLMConfigError):
    """The endpoint answered 200 with something that is not a chat completion (a web page, text,
    other JSON): the base URL most likely names a web UI or another API. ``message`` says what came
    back, in one line (``wiki.extract.llm.client.not_a_completion``); paused like a refused
    configuration."""

    def __init__(self, message: str, base_url: str | None = None, model: str = "") -> None:
        self.status, self.message, self.base_url, self.model = 200, message, base_url, model
        LLMError.__init__(self, f"{message} (base URL {base_url or 'default'}, model {model})")


class LLMOutOfCredit(LLMConfigError):
    """The provider says the account has no credit or quota left (``status`` is the HTTP status it
    used: 402, or 429 with ``insufficient_quota``, or a 400/403 whose words say so; see
    ``wiki.extract.llm.client.out_of_credit``). Not retried: the KB waits until ``kbwiki resume``
    (after topping up) or a configuration change."""

    kind = "credit"


class LLMOutputInvalid(LLMError):
    """The answer cannot be made valid; ``reason`` says why, ``raw`` is the answer (cut)."""

    def __init__(self, reason: str, raw: str = "") -> None:
        self.reason, self.raw = reason, raw[:RAW_KEPT_CHARS]
        super().__init__(f"invalid model output: {reason}" + (f"\n--- raw answer ---\n{self.raw}" if raw else ""))

    @property
    def signature(self) -> str:
        """16 hex digits of ``reason``: two tries of a document that fail with the same signature
        failed the same way (the reason names the fields and rules), and the map stage stops asking
        (``stages.map``). The same answer always gives the same reason."""
        return hashlib.sha256(self.reason.encode()).hexdigest()[:16]


class LLMRefused(LLMOutputInvalid):
    """The provider's content filter stopped the answer (``finish_reason == "content_filter"``)."""

    for_good = True


# --- ownership of a batch (internal: the stage gives up its batch and another run finishes it) ----


class LockLost(KbwikiError, RuntimeError):
    """The active-batch lock expired or was removed while its batch ran: the batch stops before
    writing (the PostgreSQL fence would refuse a batch that was overtaken anyway; this is the
    cheap early answer)."""


class FenceLost(KbwikiError, RuntimeError):
    """A batch's fencing token is no longer current: a later batch of the lane started, so this
    one must write nothing more (its claimed rows are left to the next batch)."""
