"""What the Reader and the read API are tested on beyond ``build_wiki``: a document of the other
tenant, many pages and documents to page through, and a stored lint report."""

from __future__ import annotations

from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from repos.pages import WikiPageRepository
from stages.deps import build_deps
from stages.lint import run_lint
from tests.support.pages import make_pages
from tests.support.web import WikiFixture
from wiki.settings import Settings


def other_tenant_document(pool, wiki: WikiFixture) -> str:
    """The id of a document of tenant 2's KB ``secret``."""
    kb = KnowledgeBaseRepository(pool).get_or_create(2, "secret")
    assert kb.id == wiki.other_kb_id
    doc, _ = DocumentRepository(pool).upsert(kb, title="Secret doc", source_uri="secret.md", content="Hidden text.")
    return doc.id


def grow(pool, wiki: WikiFixture, pages: int = 57, documents: int = 23) -> None:
    """``pages`` more pages (entities and concepts, "thing" in their text) and ``documents`` more
    documents in tenant 1's KB."""
    WikiPageRepository(pool).bulk_insert(make_pages(wiki.kb_id, pages))
    kb = KnowledgeBaseRepository(pool).get_or_create(1, "web-demo")
    docs = DocumentRepository(pool)
    for i in range(documents):
        docs.upsert(kb, title=f"Doc {i}", source_uri=f"more/{i:03}.md", content=f"Text of document {i}.")


def store_lint_report(pool, wiki: WikiFixture):
    """Run lint on tenant 1's KB (its report is stored) and return the report."""
    return run_lint(1, wiki.kb_id, build_deps(Settings(), pool=pool))
