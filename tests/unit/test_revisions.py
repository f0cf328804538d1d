"""The pure side of page revisions (``wiki.revisions``): sources of an earlier version from the
kept deltas, which versions cite a document, writer labels and the diff."""

from __future__ import annotations

from wiki.models import SourceRef
from wiki.revisions import (
    MAX_DIFF_LINES,
    RefChanges,
    Writer,
    diff_lines,
    sources_at,
    sources_diff,
    versions_citing,
    writer_kind,
    written_by,
)


def _ref(i: int, title: str = "") -> SourceRef:
    return SourceRef(knowledge_id=f"d{i}", title=title or f"Doc {i}")


def _delta(version: int, here: list[tuple[int, SourceRef]] | None, nxt: list[SourceRef] | None) -> RefChanges:
    return RefChanges(version=version, refs_only_here=here, refs_only_next=nxt)


# versions: 1 [d1] -> 2 [d1, d2] -> 3 [d2, d3] (current)
CURRENT = [_ref(2), _ref(3)]
NEWER_FIRST = [_delta(2, [(0, _ref(1))], [_ref(3)]), _delta(1, [], [_ref(2)])]


def test_sources_of_each_kept_version_are_the_current_ones_with_newer_changes_undone():
    assert sources_at(CURRENT, NEWER_FIRST, 2) == [_ref(1), _ref(2)]
    assert sources_at(CURRENT, NEWER_FIRST, 1) == [_ref(1)]
    assert sources_at(CURRENT, NEWER_FIRST, 5) is None  # not kept
    unknown = [_delta(2, None, None), NEWER_FIRST[1]]
    assert sources_at(CURRENT, unknown, 2) is None and sources_at(CURRENT, unknown, 1) is None


def test_versions_citing_a_document_follow_it_through_the_deltas():
    assert versions_citing(CURRENT, NEWER_FIRST, {"d1"}) == [2, 1]
    assert versions_citing(CURRENT, NEWER_FIRST, {"d2"}) == [2]
    assert versions_citing(CURRENT, NEWER_FIRST, {"d3"}) == []  # only the current version cites it
    assert versions_citing(CURRENT, NEWER_FIRST, {"d9"}) == []
    # a renamed document (its ref's title changed) is still cited on both sides
    renamed = [_delta(1, [(0, _ref(2, "Old title"))], [_ref(2)])]
    assert versions_citing([_ref(2)], renamed, {"d2"}) == [1]
    # below a write whose changes were not kept, every version might cite it
    unknown = [_delta(3, [], []), _delta(2, None, None), _delta(1, [], [])]
    assert versions_citing([_ref(5)], unknown, {"d1"}) == [2, 1]


def test_writer_labels():
    assert written_by(Writer.batch, 41) == "batch:41" and written_by(Writer.crosslink) == "crosslink"
    assert writer_kind("revert:3") is Writer.revert and writer_kind("document:abc") is Writer.document
    assert writer_kind("") is None and writer_kind("someone") is None


def test_diff_lines_and_sources_diff():
    lines, cut = diff_lines("a\nb\nc\n", "a\nB\nc\nd\n")
    assert not cut
    assert [(line.kind, line.text) for line in lines] == [
        ("hunk", "@@ -1,3 +1,4 @@"),
        ("context", "a"),
        ("removed", "b"),
        ("added", "B"),
        ("context", "c"),
        ("added", "d"),
    ]
    assert diff_lines("same\n", "same\n") == ([], False)
    _, cut = diff_lines("x\n" * (MAX_DIFF_LINES + 1), "y\n")
    assert cut
    assert sources_diff([_ref(1), _ref(2)], [_ref(2), _ref(3)]) == ([_ref(1)], [_ref(3)])
