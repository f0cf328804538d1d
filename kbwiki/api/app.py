"""The read API: JSON over HTTP under ``/api/v1`` of ``kbwiki serve``, for one tenant (the server's).

A FastAPI app that ``kbwiki.web.app.create_app`` mounts, so the web face's middleware covers it
too (the Host allow-list, NUL refusal, the body limit, the security headers). Every route is a
GET that reads through ``app.state.reader``, a :class:`kbwiki.reader.Reader` of the server's
tenant: another tenant's KB, page or document is a 404 like an unknown one. Answers are the
Reader's pydantic models; listings page with opaque cursors (``cursor`` in, ``next_cursor`` out).

Errors are ``{"error": {"code", "message"}}`` (:class:`kbwiki.api.models.ErrorOut`): 400 for bad
input (a bad cursor, page type, status or parameter), 401 for a missing or wrong bearer token,
404 for what is not there (or not the tenant's), 503 with ``Retry-After`` while the database is
away. With a token (``KBWIKI_API_TOKEN``) every route but ``/openapi.json`` needs
``Authorization: Bearer <token>``; without one the API is open, as the web face is.

The OpenAPI document is FastAPI's, at ``/api/v1/openapi.json``. No Swagger UI: it loads its
scripts from a CDN, which the web face's Content-Security-Policy (scripts from this server only)
refuses.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg_pool import ConnectionPool
from starlette.exceptions import HTTPException

from kbwiki.api.models import ErrorBody, ErrorOut
from kbwiki.outage import RETRY_AFTER_S, RETRY_TEXT, SERVER_AWAY, OutageLog
from kbwiki.reader import (
    DEFAULT_LIMIT,
    MAX_HOPS,
    MAX_LIMIT,
    SEARCH_DEFAULT_LIMIT,
    DocumentEvidence,
    DocumentListing,
    GraphOut,
    KbOut,
    LintOut,
    Paged,
    PageOut,
    PageSource,
    Reader,
    SearchHit,
)
from repos.listing import LISTED_STATUSES
from repos.web import RANK_WINDOW
from wiki.errors import BadInput, NotFound
from wiki.models import PageLite, PageType

#: Where ``create_app`` mounts the API.
PREFIX = "/api/v1"
#: The ``code`` of an error answer per HTTP status.
CODES = {
    400: "bad_input",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    503: "unavailable",
    500: "internal",
}
#: ``WWW-Authenticate`` of a 401 (RFC 6750): no token, or a wrong one.
CHALLENGE = 'Bearer realm="kbwiki"'
CHALLENGE_WRONG = 'Bearer realm="kbwiki", error="invalid_token"'

# -- parameters ---------------------------------------------------------------------------------

KbId = Annotated[str, Path(description="The KB's id (as `/kbs` lists it).")]
Slug = Annotated[str, Path(description="A page's slug, percent-encoded (slugs may hold any letter, CJK too).")]
Cursor = Annotated[
    str | None,
    Query(description="The `next_cursor` of the previous page of the same listing; none for the first page."),
]
Limit = Annotated[int, Query(description=f"Rows a page: clamped to 1..{MAX_LIMIT}.")]
TypeFilter = Annotated[PageType | None, Query(alias="type", description="Only pages of this type.")]
# the statuses a listing shows (Literal of the tuple: the OpenAPI document lists them)
Status = Annotated[Literal[LISTED_STATUSES] | None, Query(description="Only documents of this status.")]


def reader(request: Request) -> Reader:
    """The app's :class:`Reader` (of the server's tenant)."""
    return request.app.state.reader


Read = Annotated[Reader, Depends(reader)]

_bearer = HTTPBearer(auto_error=False, description="`KBWIKI_API_TOKEN`, when the server sets it.")


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Refuses (401) a request without ``Authorization: Bearer <the app's token>``; the tokens
    are compared in constant time."""
    token: str = request.app.state.api_token
    if credentials is None:
        raise HTTPException(401, "this API needs Authorization: Bearer <token>", {"WWW-Authenticate": CHALLENGE})
    if not hmac.compare_digest(credentials.credentials.encode(), token.encode()):
        raise HTTPException(401, "wrong bearer token", {"WWW-Authenticate": CHALLENGE_WRONG})


# -- routes -------------------------------------------------------------------------------------

router = APIRouter()


@router.get("/kbs", response_model=Paged[KbOut], summary="The server tenant's knowledge bases, by name")
def list_kbs(read: Read, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> Paged[KbOut]:
    return read.kbs(after=cursor, limit=limit)


@router.get("/kbs/{kb}/documents", response_model=Paged[DocumentListing], summary="A KB's documents, by source URI")
def list_documents(
    read: Read, kb: KbId, status: Status = None, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Paged[DocumentListing]:
    return read.documents(kb, status=status, after=cursor, limit=limit)


@router.get(
    "/kbs/{kb}/documents/{id}",
    response_model=DocumentEvidence,
    summary="A document: its text's head, the pages citing and naming it, what a page quotes of it",
)
def document_evidence(
    read: Read,
    kb: KbId,
    id: Annotated[str, Path(description="The document's id.")],  # noqa: A002  (the URL's name)
    page: Annotated[str | None, Query(description="A page's slug: the sentences it quotes from the document.")] = None,
) -> DocumentEvidence:
    return read.evidence(kb, id, page=page)


@router.get("/kbs/{kb}/pages", response_model=Paged[PageLite], summary="A KB's pages A-Z")
def list_pages(
    read: Read, kb: KbId, page_type: TypeFilter = None, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Paged[PageLite]:
    return read.pages(kb, page_type=_plain(page_type), after=cursor, limit=limit)


@router.get("/kbs/{kb}/pages/{slug}", response_model=PageOut, summary="A page: its Markdown, out-links and sources")
def get_page(read: Read, kb: KbId, slug: Slug) -> PageOut:
    return read.page(kb, slug)


@router.get("/kbs/{kb}/pages/{slug}/backlinks", response_model=Paged[PageLite], summary="Pages linking to a page")
def list_backlinks(
    read: Read, kb: KbId, slug: Slug, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Paged[PageLite]:
    return read.backlinks(kb, slug, after=cursor, limit=limit)


@router.get(
    "/kbs/{kb}/pages/{slug}/sources", response_model=Paged[PageSource], summary="The documents a page cites, in order"
)
def list_sources(
    read: Read, kb: KbId, slug: Slug, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Paged[PageSource]:
    return read.sources(kb, slug, after=cursor, limit=limit)


@router.get("/kbs/{kb}/pages/{slug}/graph", response_model=GraphOut, summary="The pages within some links of a page")
def page_graph(
    read: Read,
    kb: KbId,
    slug: Slug,
    hops: Annotated[int, Query(description=f"Links away: clamped to 1..{MAX_HOPS}.")] = 2,
) -> GraphOut:
    return read.graph(kb, slug, hops=hops)


@router.get("/kbs/{kb}/search", response_model=Paged[SearchHit], summary="Titles, aliases and text (CJK too)")
def search(
    read: Read,
    kb: KbId,
    q: Annotated[str, Query(description="Words to find; titles and aliases match first, then page text.")] = "",
    page_type: TypeFilter = None,
    cursor: Cursor = None,
    limit: Annotated[
        int, Query(description=f"Hits a page: clamped to 1..{RANK_WINDOW}; paging ends after {RANK_WINDOW} hits.")
    ] = SEARCH_DEFAULT_LIMIT,
) -> Paged[SearchHit]:
    return read.search(kb, q, page_type=_plain(page_type), after=cursor, limit=limit)


@router.get("/kbs/{kb}/lint", response_model=LintOut, summary="The KB's latest lint report")
def lint_report(read: Read, kb: KbId) -> LintOut:
    return read.lint(kb)


def _plain(page_type: PageType | None) -> str | None:
    return None if page_type is None else page_type.value


# -- errors -------------------------------------------------------------------------------------


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The error answer ``{"error": {"code", "message"}}`` with ``status``."""
    body = ErrorOut(error=ErrorBody(code=CODES.get(status, "error"), message=message))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


async def _not_found(request: Request, exc: NotFound) -> JSONResponse:
    return error(404, str(exc))


async def _bad_input(request: Request, exc: BadInput) -> JSONResponse:
    return error(400, str(exc))


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    said = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors()[:3])
    return error(400, said or "bad request")


async def _http(request: Request, exc: HTTPException) -> JSONResponse:
    return error(exc.status_code, str(exc.detail), exc.headers)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    request.app.state.outage.seen(exc)
    return error(
        503,
        RETRY_TEXT,
        {"Retry-After": str(RETRY_AFTER_S)},
    )


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    # the traceback goes to the log (Starlette logs it); the client gets one line
    return error(500, "something went wrong on the server's side")


# -- the app ------------------------------------------------------------------------------------

_ERRORS = {
    400: {"model": ErrorOut, "description": "Bad input: a bad cursor, page type, status or parameter."},
    404: {"model": ErrorOut, "description": "No such KB, page or document (or not this server's tenant's)."},
    503: {"model": ErrorOut, "description": "The database is not answering; retry after `Retry-After` seconds."},
}
_UNAUTHORIZED = {401: {"model": ErrorOut, "description": "Missing or wrong bearer token."}}


def create_api(pool: ConnectionPool, tenant_id: int, api_token: str | None = None) -> FastAPI:
    """The read API of tenant ``tenant_id``'s KBs in ``pool``, to mount at :data:`PREFIX`.
    ``api_token``: the bearer token every route but ``/openapi.json`` requires (None: open)."""
    app = FastAPI(
        title="kbwiki read API",
        version="1",
        summary="One tenant's wikis, read: KBs, documents, pages, search, links, graphs, lint reports.",
        openapi_url="/openapi.json",
        docs_url=None,  # Swagger UI and ReDoc load scripts from a CDN: the CSP refuses them
        redoc_url=None,
        # operation ids are the handlers' names (``list_pages``), not FastAPI's path-derived ones
        generate_unique_id_function=lambda route: route.name,
        exception_handlers={
            NotFound: _not_found,
            BadInput: _bad_input,
            RequestValidationError: _invalid,
            HTTPException: _http,
            **dict.fromkeys(SERVER_AWAY, _unavailable),
            500: _internal,
        },
    )
    app.state.reader = Reader(pool, tenant_id)
    app.state.api_token = api_token

    @app.middleware("http")
    async def no_store(request: Request, call_next):
        # answers may sit behind a token: no cache along the way keeps one for the next client
        response = await call_next(request)
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    app.state.outage = OutageLog("the API answers 503")
    app.include_router(
        router,
        dependencies=[Depends(require_token)] if api_token else [],
        responses={**_ERRORS, **(_UNAUTHORIZED if api_token else {})},
    )

    def openapi() -> dict:
        # FastAPI documents a 422 for every route with parameters; this API answers 400 instead
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes, servers=[{"url": PREFIX}]
            )
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    operation.get("responses", {}).pop("422", None)
            for unused in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(unused, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    return app
