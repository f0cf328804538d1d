"""A scripted OpenAI-compatible chat server on a free port (stdlib ``http.server`` in a thread).

Each ``POST .../chat/completions`` takes the next response of the script (``push``); when the
script is empty, the ``responder`` (a function of the request's JSON) answers, else a 500 says the
script ran out. Every request is recorded with its arrival time (``requests``, ``times``), so a test
can assert what the client sent, how often, and how long it waited between tries; the request's
``Authorization`` header is added to its JSON as ``_authorization``. ``in_flight`` counts the
requests being answered and ``max_in_flight`` the most at once (a responder may read
``server.in_flight``, which includes its own request, to refuse above a capacity).

Responses are dicts made by ``answer`` (``with_usage`` changes its ``usage``), ``tool_call_answer``,
``error``, ``raw`` (a body that is not JSON: a web page where the API should be), ``stall`` and
``trickle`` (the answer one byte at a time, a pause before each); ``realistic`` builds a valid
answer from the document in the request (its own sentences as quotes), for end-to-end tests and
the bench; ``rejecting`` wraps a responder with a provider that refuses some output modes.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict], dict]
_DOC = re.compile(r'<document handle="d1" title="[^"]*">\n(.*)\n</document>', re.S)
_PAGE = re.compile(r"^(p\d+): (.+)$", re.M)
_DOC_TITLE = re.compile(r'<document handle="d1" title="([^"]*)">')


def answer(
    content: str | dict, finish_reason: str = "stop", reasoning: str | None = None, usage: tuple[int, int] | None = None
) -> dict:
    """A 200 completion with ``content`` (a dict is sent as JSON text)."""
    text = content if isinstance(content, str) else json.dumps(content)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    prompt, completion = usage or (0, max(len(text) // 4, 1))
    return {
        "status": 200,
        "json": {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        },
    }


def tool_call_answer(arguments: str | dict, content: str | None = None) -> dict:
    """A 200 completion whose answer is in a tool call's ``arguments`` (a dict is sent as JSON
    text) and whose ``content`` is ``content`` (null by default), ``finish_reason`` ``tool_calls``:
    what servers that implement structured output as a forced tool call send."""
    response = answer("", finish_reason="tool_calls")
    message = response["json"]["choices"][0]["message"]
    message["content"] = content
    message["tool_calls"] = [
        {
            "id": "call_scripted",
            "type": "function",
            "function": {
                "name": "wiki_extraction",
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
    ]
    return response


def raw(body: str, content_type: str = "text/html; charset=utf-8", status: int = 200) -> dict:
    """A response whose body is ``body`` as it is, of ``content_type``: a web page or a proxy's
    text where a chat completion should be."""
    return {"status": status, "body": body, "content_type": content_type}


def with_usage(response: dict, usage: dict | None) -> dict:
    """``response`` (an ``answer``) with its ``usage`` replaced by ``usage`` as given (any values,
    e.g. 1e19 tokens), or without one when None (a server that does not count)."""
    body = dict(response["json"])
    if usage is None:
        body.pop("usage", None)
    else:
        body["usage"] = usage
    return {**response, "json": body}


def error(status: int, message: str = "scripted error", headers: dict[str, str] | None = None) -> dict:
    """An HTTP error with an OpenAI-style error body."""
    return {
        "status": status,
        "headers": headers or {},
        "json": {"error": {"message": message, "type": "invalid_request_error", "code": None}},
    }


def stall(seconds: float, then: dict | None = None) -> dict:
    """Wait ``seconds`` before sending ``then`` (a client with a shorter timeout gives up first)."""
    return {"delay_s": seconds, **(then or answer("{}"))}


def trickle(every_s: float, then: dict | None = None) -> dict:
    """Send ``then`` (status line, headers and body) one byte at a time, ``every_s`` before each:
    a server that is never silent for long but never finishes."""
    return {"trickle_s": every_s, **(then or answer("{}"))}


def document_of(request: dict) -> tuple[str, list[tuple[str, str]]]:
    """The document text and the offered ``[(handle, title)]`` pages of a request."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    match = _DOC.search(user)
    return (match.group(1) if match else ""), _PAGE.findall(user.split("<document", 1)[0])


def mode_of(request: dict) -> str:
    """``json_schema``, ``json_object`` or ``fenced`` (no ``response_format``)."""
    return (request.get("response_format") or {}).get("type", "fenced")


def _sentences(text: str) -> list[str]:
    """Sentences of the prose paragraphs (blocks between blank lines with no markup, heading or
    indented line), so that each one, whitespace normalised, occurs in the normalised document."""
    markup = re.compile(r"\s*(\.\.|[*\-+] |\d+\. |:|\||([=\-~^*#`:+])\2{2,})|\s{2,}\S|\t")
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or any(markup.match(line) for line in lines):
            continue
        out += [
            s
            for s in re.split(r"(?<=[.!?])\s+", " ".join(block.split()))
            if 30 <= len(s) <= 300 and re.search(r"[a-z]{3}", s) and "`" not in s and "_" not in s
        ]
    return out


def realistic_content(request: dict) -> dict:
    """A valid answer built from the request's own document: the first sentences as summary and
    body, its most frequent capitalised terms as items with the sentences that hold them as
    quotes, and an offered page that the document names as ``same_as`` and a ``[[pN]]`` link."""
    text, pages = document_of(request)
    sentences = _sentences(text)
    if not sentences:
        sentences = [" ".join(text.split())[:200] or "An empty document."]
    terms = Counter(
        re.sub(r"^(?:The|An?|This|These|Each) ", "", m)
        for s in sentences
        for m in re.findall(r"\b[A-Z][A-Za-z0-9]{2,}(?: [A-Z][A-Za-z0-9]{2,}){0,2}\b", s)
        if not s.startswith(m) or m.startswith(("The ", "A ", "An ", "This ", "These ", "Each "))
    )
    terms = Counter({t: n for t, n in terms.items() if " " in t or not any(s.startswith(t) for s in sentences)})
    if len(terms) < 3:  # few names: the most repeated two-word phrases without stopwords
        from wiki.extract import is_stopword

        terms.update(
            p
            for s in sentences
            for p in re.findall(r"(?=\b([a-z]{3,} [a-z]{3,})\b)", s)
            if not any(is_stopword(w) for w in p.split())
        )
    items = []
    for term, _ in terms.most_common(6):
        quotes = [s for s in sentences if term in s][:2]
        items.append(
            {
                "name": term,
                "kind": "entity" if term.isupper() or " " not in term else "concept",
                "same_as": None,
                "aliases": [],
                "description": quotes[0],
                "evidence": [{"source": "d1", "quote": q} for q in quotes],
            }
        )
    body = " ".join(sentences[:3])
    for handle, title in pages:
        quotes = [s for s in sentences if title.lower() in s.lower()][:1]
        if quotes:
            items.append(
                {
                    "name": title,
                    "kind": "concept",
                    "same_as": handle,
                    "aliases": [],
                    "description": f"{title}, as this document uses it.",
                    "evidence": [{"source": "d1", "quote": quotes[0]}],
                }
            )
            body += f" It relies on [[{handle}]]."
            break
    return {"summary": sentences[0], "body": body, "items": items}


def is_merge_request(request: dict) -> bool:
    """Whether ``request`` is a merge call (``wiki.extract.llm.merges``), not an extraction."""
    return "You keep a wiki free of duplicate pages" in request["messages"][0]["content"]


def is_intro_request(request: dict) -> bool:
    """Whether ``request`` asks for the index page's introduction (``wiki.extract.llm.intro``)."""
    return "You write the introduction of a wiki" in request["messages"][0]["content"]


def intro_answer(request: dict) -> dict:
    """An introduction naming the first and last document titles the request lists."""
    titles = re.findall(r"^- ([^:\n]+):", request["messages"][0]["content"], re.M)
    text = f"This knowledge base collects {len(titles)} documents, from {titles[0]} to {titles[-1]}."
    return answer(text, usage=(len(request["messages"][0]["content"]) // 4, len(text) // 4))


def is_lead_request(request: dict) -> bool:
    """Whether ``request`` asks for page leads (``wiki.extract.llm.leads``)."""
    return "You write the opening paragraph of wiki pages" in request["messages"][0]["content"]


def lead_content(request: dict) -> dict:
    """A lead for every page the request lists: "<title> is <its first contribution line>, as N
    sources describe it." (N: the page's contribution lines)."""
    listing = request["messages"][-1]["content"]
    leads = []
    for handle, title, lines in re.findall(r'^(p\d+): "([^"\n]*)" \(\w+\)\n((?:  - .*\n?)*)', listing, re.M):
        found = re.findall(r"^  - (.*)$", lines, re.M)
        first = found[0].split(" (quoted:")[0].rstrip(".") if found else "a topic"
        leads.append({"page": handle, "lead": f"{title}: {first}, as {len(found)} sources describe it."})
    return {"leads": leads}


def realistic(request: dict) -> dict:
    """``realistic_content`` as a completion in the request's mode (fenced when no response_format);
    a merge call is answered "every item new" (``{"decisions": []}``), a lead call with
    ``lead_content``, an index introduction with ``intro_answer``."""
    if is_intro_request(request):
        return intro_answer(request)
    if is_lead_request(request):
        content = json.dumps(lead_content(request))
    else:
        content = json.dumps({"decisions": []} if is_merge_request(request) else realistic_content(request))
    if mode_of(request) == "fenced":
        content = f"Here is the extraction.\n```json\n{content}\n```\n"
    prompt = sum(len(m["content"]) for m in request["messages"]) // 4
    return answer(content, usage=(prompt, len(content) // 4))


def rejecting(modes: set[str], then: Responder = realistic) -> Responder:
    """A provider that answers 400 to requests in ``modes`` and ``then`` to the others."""

    def respond(request: dict) -> dict:
        if mode_of(request) in modes:
            return error(400, f"response_format {mode_of(request)} is not supported by this model")
        return then(request)

    return respond


class ScriptedLLM:
    """The server; use as a context manager. ``url`` is the base URL to configure (``.../v1``)."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self.script: list[dict] = []
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                body["_authorization"] = self.headers.get("Authorization", "")  # for scripts that check keys
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    spec = server._next(body, self.path)
                    if spec.get("delay_s"):
                        time.sleep(spec["delay_s"])
                finally:  # before the answer is sent: the client may send its next request at once
                    with server.lock:
                        server.in_flight -= 1
                payload = spec["body"].encode() if "body" in spec else json.dumps(spec.get("json", {})).encode()
                if spec.get("trickle_s"):
                    self._trickle(spec, payload)
                    return
                try:
                    self.send_response(spec.get("status", 200))
                    self.send_header("Content-Type", spec.get("content_type", "application/json"))
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in spec.get("headers", {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client timed out and left
                    pass

            def _trickle(self, spec: dict, payload: bytes) -> None:
                head = f"HTTP/1.1 {spec.get('status', 200)} OK\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {len(payload)}\r\n\r\n"
                for byte in head.encode() + payload:
                    time.sleep(spec["trickle_s"])
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client gave up and left
                        return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def push(self, *responses: dict) -> ScriptedLLM:
        """Append responses to the script (taken in order, one per request)."""
        with self.lock:
            self.script.extend(responses)
        return self

    def _next(self, body: dict, path: str) -> dict:
        with self.lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            if not path.endswith("/chat/completions"):
                return error(404, f"no route {path}")
            if self.script:
                return self.script.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return error(500, "the test's script ran out")

    @property
    def calls(self) -> int:
        with self.lock:
            return len(self.requests)

    def __enter__(self) -> ScriptedLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def fresh_llm(responder: Responder | None = None) -> Iterator[ScriptedLLM]:
    """A running ``ScriptedLLM(responder)`` with no output mode remembered from an earlier server
    (``forget_modes`` before and after): what each test's ``server`` fixture yields."""
    from wiki.extract.llm.extractor import forget_modes

    forget_modes()
    with ScriptedLLM(responder) as server:
        yield server
    forget_modes()


class AnswerGate:
    """A responder that holds the map answers of ``responder`` (``realistic`` by default) until the
    test lets their documents through: ``allow(n)`` lets the next ``n`` documents to ask pass (every
    call about one of them: its sections, retries), ``open()`` lets every document pass from now
    on; calls about no document (merges, leads, the index intro) always pass. A call waits at most
    ``timeout_s`` (then passes). With it an end-to-end test holds worker processes in the state it
    needs (maps under way with their claims, some documents done) instead of racing them;
    ``passed`` holds the titles let through."""

    def __init__(self, responder: Responder | None = None, timeout_s: float = 120.0) -> None:
        self.responder = responder or realistic
        self.timeout_s = timeout_s
        self.passed: set[str] = set()
        self._allowed = 0
        self._open = False
        self._cond = threading.Condition()

    def __call__(self, request: dict) -> dict:
        user = next((m["content"] for m in request["messages"] if m["role"] == "user"), "")
        found = _DOC_TITLE.search(user)
        if found:
            title = found.group(1)
            with self._cond:
                self._cond.wait_for(
                    lambda: self._open or title in self.passed or len(self.passed) < self._allowed,
                    timeout=self.timeout_s,
                )
                self.passed.add(title)
        return self.responder(request)

    def allow(self, n: int) -> None:
        """Let ``n`` more documents through."""
        with self._cond:
            self._allowed += n
            self._cond.notify_all()

    def open(self) -> None:
        """Let every document through from now on."""
        with self._cond:
            self._open = True
            self._cond.notify_all()
