"""The web face's security audit (issue 28), each finding reproduced over real HTTP (uvicorn on a
free port, a real PostgreSQL database): sessions, CSRF, Host checks, what strangers see, NUL bytes,
body limits, sign-in limits, KB names in Markdown, the message box, headers, KB list paging and
dead-letter groups, trusted proxies, the sign-out form."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kbwiki.web.app import create_app
from repos.dead_letters import TaskDeadLetterRepository
from stages.deps import build_deps
from tests.support.web import build_wiki, free_port, serving
from wiki.cursor import encode_cursor

TOKEN = "test-ops-token-0123456789"
HTTP_TIMEOUT_S = 60.0
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


def _boom(dead_letter_id: int, tenant_id: int) -> str:
    raise RuntimeError("requeue exploded")


@pytest.fixture()
def base(clean_db, wiki):
    """The URL of tenant 1's app with an ops token; its requeue raises (a 500 to look at)."""
    with serving(create_app(clean_db, tenant_id=1, ops_token=TOKEN, requeue=_boom)) as url:
        yield url


def _client(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S)


def _signed_in(base: str) -> tuple[httpx.Client, str]:
    """A client signed in with the ops token and the CSRF token of its session's forms."""
    c = _client(base)
    assert c.post("/ops/login", data={"token": TOKEN}).status_code == 303
    return c, CSRF.search(c.get("/ops").text).group(1)


def _exists(pool, dead_letter_id: int) -> bool:
    return TaskDeadLetterRepository(pool).get(dead_letter_id, tenant_id=1) is not None


# -- 1. sessions ------------------------------------------------------------------------------
def test_sign_out_ends_the_session_and_an_old_cookie_no_longer_acts(base, wiki, clean_db):
    c, csrf = _signed_in(base)
    cookie = c.cookies["kbwiki_ops"]
    other, _ = _signed_in(base)
    assert other.cookies["kbwiki_ops"] != cookie  # a random session per sign-in, not a value of the token
    assert c.post("/ops/logout", data={"csrf": csrf}).status_code == 303
    with _client(base) as thief:  # the cookie copied before sign-out
        thief.cookies.set("kbwiki_ops", cookie)
        assert 'name="csrf"' not in thief.get("/ops").text
        assert thief.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={"csrf": csrf}).status_code == 403
    assert _exists(clean_db, wiki.dead_letter_id)
    other.close()
    c.close()


def test_an_expired_session_no_longer_acts(base, wiki, clean_db):
    c, csrf = _signed_in(base)
    with clean_db.connection() as conn:  # eight hours later
        conn.execute("UPDATE web_sessions SET expires_at = now() - interval '1 second'")
    assert c.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={"csrf": csrf}).status_code == 403
    assert _exists(clean_db, wiki.dead_letter_id)
    c.close()


# -- 2. CSRF ----------------------------------------------------------------------------------
def test_csrf_token_is_bound_to_its_session(base, wiki, clean_db):
    a, csrf_a = _signed_in(base)
    b, csrf_b = _signed_in(base)
    assert csrf_a != csrf_b  # not one value computable from the token
    url = f"/ops/dead-letters/{wiki.dead_letter_id}/purge"
    assert b.post(url, data={"csrf": csrf_a}).status_code == 403  # another session's token
    assert b.post(url, data={}).status_code == 403  # none
    assert b.post(url, data={"csrf": csrf_b + "x"}).status_code == 403  # tampered
    assert _exists(clean_db, wiki.dead_letter_id)
    assert b.post(url, data={"csrf": csrf_b}).status_code == 303  # its own
    assert not _exists(clean_db, wiki.dead_letter_id)
    a.close()
    b.close()


# -- 3. Host allow-list -----------------------------------------------------------------------
def test_a_host_outside_the_allow_list_is_refused(base, clean_db):
    port = base.rsplit(":", 1)[1]
    with _client(base) as c:
        # a page that rebound its DNS name to 127.0.0.1 sends its own name as Host
        assert c.get("/", headers={"Host": f"attacker.example:{port}"}).status_code == 400
        assert c.get("/", headers={"Host": f"localhost:{port}"}).status_code == 200
        assert c.get("/", headers={"Host": f"[::1]:{port}"}).status_code == 200
        assert c.get("/").status_code == 200  # 127.0.0.1
    with serving(create_app(clean_db, tenant_id=1, allowed_hosts=["wiki.example.org"])) as other, _client(other) as c:
        assert c.get("/", headers={"Host": "wiki.example.org"}).status_code == 200
        assert c.get("/").status_code == 400


def test_allowed_hosts_setting_defaults():
    from kbwiki.serve_cmd import allowed_hosts

    assert allowed_hosts("", "127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert allowed_hosts("", "127.0.0.2") == ["127.0.0.1", "localhost", "[::1]", "127.0.0.2"]
    assert allowed_hosts("", "::1") == ["127.0.0.1", "localhost", "[::1]"]
    assert allowed_hosts("", "0.0.0.0") == ["*"]  # with a warning (exposure_warnings)
    assert allowed_hosts(" wiki.example.org, *.example.net ", "0.0.0.0") == ["wiki.example.org", "*.example.net"]


# -- 4. bound beyond loopback without a token -------------------------------------------------
def test_exposed_without_token_warns_and_shows_headlines_only(clean_db, wiki):
    from kbwiki.serve_cmd import exposure_warnings

    assert exposure_warnings("127.0.0.1", None, "") == [] and exposure_warnings("::1", None, "") == []
    warnings = exposure_warnings("0.0.0.0", None, "")
    assert any("KBWIKI_WEB_OPS_TOKEN" in w for w in warnings)
    assert any("KBWIKI_WEB_ALLOWED_HOSTS" in w for w in warnings)
    with serving(create_app(clean_db, tenant_id=1)) as url, _client(url) as c:
        ops = c.get("/ops").text
        assert "RuntimeError: extractor exploded" in ops and "Traceback" not in ops
        letter = c.get(f"/ops/dead-letters/{wiki.dead_letter_id}").text
        assert "RuntimeError: extractor exploded" in letter
        assert "Traceback" not in letter and "dedup_key" not in letter  # no payload
        failed = TaskDeadLetterRepository(clean_db).get(wiki.dead_letter_id, tenant_id=1).related_id
        doc = c.get(f"/kb/{wiki.kb_id}/doc/{failed}").text
        assert "ValueError: cannot parse" in doc and "Traceback" not in doc


def test_strangers_see_headlines_only_on_loopback_with_a_token(base, wiki, clean_db):
    # bound to loopback behind a TLS proxy (the README's advice) every visitor is a loopback client
    letter_url = f"/ops/dead-letters/{wiki.dead_letter_id}"
    failed = TaskDeadLetterRepository(clean_db).get(wiki.dead_letter_id, tenant_id=1).related_id
    with _client(base) as c:
        ops, letter = c.get("/ops").text, c.get(letter_url).text
        doc = c.get(f"/kb/{wiki.kb_id}/doc/{failed}").text
    assert "RuntimeError: extractor exploded" in ops and "Traceback" not in ops
    assert "kbwiki dead-letters show" in ops  # where a local user reads the details
    assert "RuntimeError: extractor exploded" in letter
    assert "Traceback" not in letter and "dedup_key" not in letter  # no payload
    assert f"kbwiki dead-letters show {wiki.dead_letter_id}" in letter
    assert "ValueError: cannot parse" in doc and "Traceback" not in doc
    operator, _ = _signed_in(base)
    assert "Traceback" in operator.get("/ops").text
    whole = operator.get(letter_url).text
    assert "Traceback" in whole and "dedup_key" in whole
    operator.close()


# -- 5. NUL bytes -----------------------------------------------------------------------------
def test_nul_bytes_in_paths_and_query_parameters_are_400(base, wiki):
    kb = wiki.kb_id
    urls = [
        "/kb/%00",
        f"/kb/{kb}/page/a%00b",
        f"/kb/{kb}/graph/a%00b",
        f"/kb/{kb}/graph.json/a%00b",
        f"/kb/{kb}/backlinks.json/a%00b",
        f"/kb/{kb}/search?q=a%00b",
        f"/kb/{kb}/doc/a%00b",
        f"/kb/{kb}/doc/{wiki.doc_id}?page=a%00b",
        f"/kb/{kb}/page/alpha-engine?mentioned=%00",
        "/kb/%00/lint",
        "/?page=%00",
        "/ops?m=%00",
    ]
    # a connection each: uvicorn closes one whose app raised (a 500 before the fix)
    assert {u: httpx.get(base + u, timeout=HTTP_TIMEOUT_S).status_code for u in urls} == dict.fromkeys(urls, 400)


# -- 6. body limits before auth ---------------------------------------------------------------
def _raw(base: str, head: str, body: bytes = b"") -> str:
    """Send a raw HTTP/1.1 request and read the status line of the answer (within 30 s)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head.encode() + body)
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_a_huge_unauthenticated_upload_is_refused_before_its_body_is_read(base, wiki):
    # 200 MB announced, 1 KiB sent: the answer comes without waiting for (or spooling) the rest
    head = (
        f"POST /ops/dead-letters/{wiki.dead_letter_id}/purge HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 200000000\r\n\r\n"
    )
    assert _raw(base, head, b"--x\r\n" + b"a" * 1024).startswith("HTTP/1.1 413 ")


def test_a_chunked_body_over_the_limit_is_refused(base):
    head = (
        "POST /ops/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    chunk = b"token=" + b"a" * (16 * 1024 - 6)
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in [chunk] + [b"a" * 16 * 1024] * 7) + b"0\r\n\r\n"
    assert _raw(base, head, body).startswith("HTTP/1.1 413 ")


# -- 7. failed sign-ins -----------------------------------------------------------------------
def test_failed_sign_ins_are_limited_and_logged(base, capsys):
    with _client(base) as c:
        statuses = [c.post("/ops/login", data={"token": "wrong-token-wrong-token"}).status_code for _ in range(30)]
        assert 429 in statuses, statuses
        allowed = statuses.index(429)
        assert allowed >= 3 and set(statuses[:allowed]) == {303} and set(statuses[allowed:]) == {429}
        r = c.post("/ops/login", data={"token": TOKEN})  # locked out for now, even with the token
        assert r.status_code == 429 and "set-cookie" not in r.headers
    assert capsys.readouterr().err.count("failed ops sign-in from 127.0.0.1") == allowed


def test_failed_sign_ins_from_many_addresses_do_not_lock_the_operator_out(clean_db, wiki):
    # behind a proxy on loopback: seven addresses fail ten times each (a cross-site form in visitors'
    # browsers can do the same); a cap on all addresses together then refused the operator too
    app = create_app(clean_db, tenant_id=1, ops_token=TOKEN)
    with serving(app, trusted_proxies=["127.0.0.1"]) as url, _client(url) as c:
        for i in range(7):
            for _ in range(10):
                bad = c.post(
                    "/ops/login", data={"token": "wrong-token-wrong-token"}, headers={"X-Forwarded-For": f"10.0.0.{i}"}
                )
                assert bad.status_code == 303
        locked = c.post("/ops/login", data={"token": TOKEN}, headers={"X-Forwarded-For": "10.0.0.1"})
        operator = c.post("/ops/login", data={"token": TOKEN}, headers={"X-Forwarded-For": "192.0.2.7"})
    assert locked.status_code == 429  # the per-address limit stays
    assert operator.status_code == 303 and "kbwiki_ops=" in operator.headers.get("set-cookie", "")


@contextlib.contextmanager
def _kbwiki_serve(database_url: str, home: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """``kbwiki serve`` with an ops token and ``env`` as a subprocess on a free port, until the
    block ends; yields its base URL and the file its stderr goes to (complete once the block ends)."""
    port, log = free_port(), home / "serve.err"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "KBWIKI_HOME": str(home / "home"),
        "KBWIKI_WEB_OPS_TOKEN": TOKEN,
        **env,
    }
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kbwiki.cli", "serve", "--port", str(port)], env=env, stderr=err, text=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/", timeout=HTTP_TIMEOUT_S)
                break
            except httpx.TransportError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "kbwiki serve did not answer within 60 s"
                time.sleep(0.1)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_believes_x_forwarded_for_from_no_one_by_default(clean_db, database_url, tmp_path):
    # uvicorn's default believed it from any loopback client: a new claimed address per try
    with _kbwiki_serve(database_url, tmp_path) as (url, log), _client(url) as c:
        signed = c.post("/ops/login", data={"token": TOKEN}, headers={"X-Forwarded-Proto": "https"})
        statuses = [
            c.post(
                "/ops/login", data={"token": "wrong-token-wrong-token"}, headers={"X-Forwarded-For": f"10.0.0.{i}"}
            ).status_code
            for i in range(12)
        ]
    assert "secure" not in signed.headers["set-cookie"].lower()  # plain HTTP, whatever the header says
    assert statuses == [303] * 10 + [429] * 2
    assert log.read_text().count("failed ops sign-in from 127.0.0.1") == 10


def test_serve_believes_its_trusted_proxy_and_logs_no_control_characters(clean_db, database_url, tmp_path):
    with (
        _kbwiki_serve(database_url, tmp_path, KBWIKI_WEB_TRUSTED_PROXIES="127.0.0.1") as (url, log),
        _client(url) as c,
    ):
        wrong = {"token": "wrong-token-wrong-token"}
        assert c.post("/ops/login", data=wrong, headers={"X-Forwarded-For": "198.51.100.4"}).status_code == 303
        forged = b"\x1b[2J\x9b31m\x07forged\x1b]0;title\x07"  # clear screen, colour, bell, window title
        assert c.post("/ops/login", data=wrong, headers={"X-Forwarded-For": forged}).status_code == 303
        signed = c.post("/ops/login", data={"token": TOKEN}, headers={"X-Forwarded-Proto": "https"})
    assert "secure" in signed.headers["set-cookie"].lower()  # the proxy said the visitor came over TLS
    err = log.read_text()
    assert "failed ops sign-in from 198.51.100.4" in err
    assert "forged" in err and not any(ch in err for ch in "\x1b\x9b\x07")


def test_trusted_proxies_setting_is_addresses_or_networks():
    from kbwiki.serve_cmd import trusted_proxies
    from wiki.errors import BadSetting

    assert trusted_proxies("") == []
    assert trusted_proxies(" 127.0.0.1, ::1 ,10.0.0.0/8") == ["127.0.0.1", "::1", "10.0.0.0/8"]
    with pytest.raises(BadSetting, match="proxy.example"):
        trusted_proxies("127.0.0.1,proxy.example")


@pytest.mark.parametrize("setting", ["KBWIKI_WEB_OPS_TOKEN", "KBWIKI_API_TOKEN"])
def test_a_too_short_token_is_refused_without_echoing_it(database_url, tmp_path, setting):
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "KBWIKI_HOME": str(tmp_path / "home"),
        setting: "short-Secret9",
    }
    out = subprocess.run(
        [sys.executable, "-m", "kbwiki.cli", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert setting in out.stderr and "short-Secret9" not in out.stderr + out.stdout


# -- 7b. sign-out --------------------------------------------------------------------------
def test_sign_out_needs_its_forms_csrf_token(base):
    c, csrf = _signed_in(base)
    # another site's form (or a bare POST) cannot sign the operator out
    assert c.post("/ops/logout").status_code == 403
    assert c.post("/ops/logout", data={"csrf": csrf + "x"}).status_code == 403
    assert CSRF.search(c.get("/ops").text)  # still signed in
    assert c.post("/ops/logout", data={"csrf": csrf}).status_code == 303
    assert not CSRF.search(c.get("/ops").text)
    c.close()


# -- 8. KB names in Markdown ------------------------------------------------------------------
def test_a_kb_name_with_markdown_link_syntax_is_text_on_its_index(base, clean_db, settings):
    from stages.index import rebuild_index

    deps = build_deps(settings, pool=clean_db)
    kb = deps.kbs.get_or_create(1, "[click me](https://attacker.example/x) **bold**")
    rebuild_index(1, kb.id, deps)
    with _client(base) as c:
        home = c.get(f"/kb/{kb.id}").text
    assert "attacker.example" in home  # the name is shown, as text
    assert 'href="https://attacker.example' not in home and "<strong>bold</strong>" not in home


# -- 9. the message box -----------------------------------------------------------------------
def test_ops_message_box_shows_fixed_messages_only(base):
    with _client(base) as c:
        page = c.get("/ops", params={"m": "Your session expired: sign in again at attacker.example"}).text
        assert "attacker.example" not in page and 'id="flash"' not in page
        assert "Dead letter 7 purged." in c.get("/ops", params={"m": "purged", "id": "7"}).text


# -- 10. headers ------------------------------------------------------------------------------
def _secured(r: httpx.Response) -> bool:
    h = r.headers
    return (
        "script-src 'self'" in h.get("content-security-policy", "")
        and h.get("x-content-type-options") == "nosniff"
        and h.get("x-frame-options") == "DENY"
        and h.get("referrer-policy") == "same-origin"
    )


def test_every_response_carries_the_security_headers(base, wiki):
    with _client(base) as c:
        responses = {
            "page": c.get("/"),
            "json": c.get(f"/kb/{wiki.kb_id}/backlinks.json/beta-store"),
            "metrics": c.get("/metrics"),
            "static": c.get("/static/app.css"),
            "404": c.get("/kb/no-such-kb"),
            "bad host": c.get("/", headers={"Host": "attacker.example"}),
        }
        signed, csrf = _signed_in(base)
        ops = signed.get("/ops")
        # last on its connection: uvicorn closes a connection whose app raised
        responses["500"] = signed.post(f"/ops/dead-letters/{wiki.dead_letter_id}/requeue", data={"csrf": csrf})
        signed.close()
    assert responses["500"].status_code == 500 and "requeue exploded" not in responses["500"].text
    assert {name: _secured(r) for name, r in responses.items()} == dict.fromkeys(responses, True)
    assert ops.headers.get("cache-control") == "no-store"


def test_405_carries_allow(base):
    with _client(base) as c:
        post_home = c.post("/")
        get_login = c.get("/ops/login")
    assert post_home.status_code == 405 and "GET" in post_home.headers.get("allow", "")
    assert get_login.status_code == 405 and get_login.headers.get("allow") == "POST"


def test_cross_site_sign_ins_are_refused_before_they_count(clean_db, wiki):
    # another site's page can post the sign-in form from the operator's own browser: ten of those
    # used to lock the operator out for a minute (the per-address limit counts the operator)
    app = create_app(clean_db, tenant_id=1, ops_token=TOKEN)
    with serving(app) as url, _client(url) as c:
        cross = [
            c.post("/ops/login", data={"token": "wrong-token-wrong-token"}, headers={"Sec-Fetch-Site": "cross-site"})
            for _ in range(12)
        ]
        operator = c.post("/ops/login", data={"token": TOKEN}, headers={"Sec-Fetch-Site": "same-origin"})
    assert {r.status_code for r in cross} == {403}
    assert operator.status_code == 303 and "kbwiki_ops=" in operator.headers.get("set-cookie", "")


def test_an_id_of_thousands_of_digits_is_404_not_500(base):
    with _client(base) as c:
        view = c.get("/ops/dead-letters/" + "9" * 5000)
        action = c.post("/ops/dead-letters/" + "9" * 5000 + "/purge")
    assert view.status_code == 404 and action.status_code == 404


def test_search_says_its_body_varies_with_hx_request(base, wiki):
    kb_id = wiki.kb_id
    with _client(base) as c:
        page = c.get(f"/kb/{kb_id}/search", params={"q": "anything"})
        fragment = c.get(f"/kb/{kb_id}/search", params={"q": "anything"}, headers={"HX-Request": "true"})
    assert page.status_code == fragment.status_code == 200 and page.text != fragment.text
    assert "HX-Request" in page.headers.get("vary", "") and "HX-Request" in fragment.headers.get("vary", "")


# -- 11. KB list paging -----------------------------------------------------------------------
def test_kb_list_pages_past_200(base, clean_db):
    from repos.web import MAX_LIST

    with clean_db.connection() as conn:
        conn.execute(
            "INSERT INTO knowledge_bases (id, tenant_id, name)"
            " SELECT gen_random_uuid()::text, 1, 'kb-' || lpad(i::text, 4, '0') FROM generate_series(1, %s) i",
            (MAX_LIST + 5,),
        )
    names, url = [], "/"
    with _client(base) as c:
        for _ in range(3):
            page = c.get(url).text
            names += re.findall(r'<li><a href="/kb/[^"]+">([^<]+)</a>', page)
            more = re.search(r'<a href="([^"]+)" rel="next">', page)
            if more is None:
                break
            url = more.group(1)
    assert len(names) == MAX_LIST + 6 and len(set(names)) == len(names)  # every KB once, web-demo too


# -- 12. dead-letter groups -------------------------------------------------------------------
def test_dead_letters_differing_only_in_ids_form_one_group(base, wiki, clean_db):
    dead = TaskDeadLetterRepository(clean_db)
    for doc_id, n in [("7d243aa0-7e21-4ce3-b879-195e520bb868", 3), ("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", 12)]:
        dead.insert(
            task_type="wiki:map",
            tenant_id=1,
            scope="knowledge_base",
            scope_id=wiki.kb_id,
            payload={},
            last_error=f"KeyError: document {doc_id} not found after {n} tries\nTraceback ...",
            fail_count=1,
        )
    with _client(base) as c:
        groups = c.get("/ops").text.split('id="dead-letter-groups"')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>wiki:map</td><td><code>([^<]*)</code></td><td>(\d+)</td>", groups)
    assert rows == [("KeyError: document &lt;id&gt; not found after &lt;n&gt; tries", "2")]


def _forged(json_text: str) -> str:
    """A cursor of ``json_text`` as written (JSON escapes such as a lone surrogate's kept)."""
    return base64.urlsafe_b64encode(json_text.encode()).decode().rstrip("=")


def test_a_nul_or_lone_surrogate_in_a_cursor_or_query_is_refused_not_a_server_error(clean_db):
    # the attack trial: base64 cursors carried NUL and lone surrogates past the URL's NUL check to
    # psycopg, a 500 and a traceback in serve's log per request, on routes that need no sign-in
    wiki = build_wiki(clean_db)
    with serving(create_app(clean_db, tenant_id=1)) as base, httpx.Client(base_url=base, timeout=60.0) as c:
        for path, params in (
            (f"/kb/{wiki.kb_id}/pages", {"after": encode_cursor("az", "a\x00", "b")}),
            (f"/kb/{wiki.kb_id}/pages", {"after": _forged('["az","\\udfff","b"]')}),
            (f"/kb/{wiki.kb_id}/search", {"q": "x", "after": _forged('["search",1,-0.5,"\\ud800"]')}),
            (f"/api/v1/kbs/{wiki.kb_id}/pages", {"cursor": encode_cursor("pages", "a\x00", "b")}),
            (f"/api/v1/kbs/{wiki.kb_id}/search?q=a%ED%BF%BFb%00", None),  # a surrogate's UTF-8, and a NUL
        ):
            assert c.get(path, params=params).status_code == 400, (path, params)
