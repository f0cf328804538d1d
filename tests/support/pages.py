"""Realistic pages in bulk for tests that need a large KB (titles from the shipped corpus's words)."""

from __future__ import annotations

import itertools
import re

from tests.support.corpus import shipped_docs
from wiki.models import Page, SourceRef
from wiki.slugs import slugify


def stdlib_words(limit: int = 400) -> list[str]:
    """Distinct lowercase words (4+ letters) from the first shipped documents, in reading order."""
    seen: dict[str, None] = {}
    for doc in shipped_docs():
        for word in re.findall(r"[a-z]{4,}", doc.text.lower()):
            seen.setdefault(word)
            if len(seen) >= limit:
                return list(seen)
    return list(seen)


def make_pages(kb_id: str, n: int, tenant_id: int = 1) -> list[Page]:
    """``n`` entity/concept pages with two-word titles, one source ref each and a link to a neighbour."""
    words = stdlib_words()
    titles = (f"{a} {b}" for a, b in itertools.permutations(words, 2))
    pages = []
    for i, title in zip(range(n), titles):
        slug = slugify(title)
        pages.append(
            Page(
                tenant_id=tenant_id,
                knowledge_base_id=kb_id,
                slug=slug,
                title=title,
                page_type="entity" if i % 2 else "concept",
                content=f"{title} is a thing. See [[{slugify(words[i % len(words)])}|more]].\n" * 20,
                source_refs=[SourceRef(knowledge_id=f"doc-{i // 4}", title=f"Document {i // 4}")],
            )
        )
    return pages
