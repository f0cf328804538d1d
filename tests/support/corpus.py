"""The documents tests ingest: a corpus the project ships in ``tests/data/corpus`` (never the
running interpreter's files, which differ between Python builds).

The corpus is a frozen snapshot of kbwiki's own module documentation (one Markdown file per
module, as ``kbwiki.corpus.module_markdown`` lays it out: module docstring, then one section per
public class and function), so it is the project's own text and does not change when the code's
docstrings do. Read with the same reader as ``kbwiki ingest``: titles are the module names
(``wiki.links``), source URIs the file names (``wiki.links.md``), in sorted order.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kbwiki.corpus import CorpusDoc, Rejected, iter_folder_docs

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


@cache
def _docs() -> tuple[CorpusDoc, ...]:
    docs = [d for d in iter_folder_docs(CORPUS) if not isinstance(d, Rejected)]
    assert len(docs) >= 40, f"the shipped corpus at {CORPUS} is incomplete"
    return tuple(docs)


def shipped_docs() -> list[CorpusDoc]:
    """Every document of the shipped corpus, sorted by file name (49 documents, 344 to 6,990
    characters)."""
    return list(_docs())


def shipped_doc(title: str) -> CorpusDoc:
    """The shipped document titled ``title`` (a module name); ``KeyError`` when there is none."""
    for doc in _docs():
        if doc.title == title:
            return doc
    raise KeyError(title)
