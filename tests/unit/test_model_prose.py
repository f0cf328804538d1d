"""A model's prose answer (the index introduction, page leads) becomes one plain paragraph: what a
new user's fake model sent in links, headings and lists reached readers before."""

from __future__ import annotations

from wiki.extract.llm.intro import plain_paragraph
from wiki.extract.llm.leads import MAX_LEAD_CHARS


def test_links_become_their_text_and_a_handle_its_pages_title():
    text = "X is linked to [[Mira Kalden]], [[p1|the engine]] and [[P2]], see [the docs](https://example.org)."
    assert plain_paragraph(text, 600, {"p2": "Harlow Works"}) == (
        "X is linked to Mira Kalden, the engine and Harlow Works, see the docs."
    )


def test_headings_are_dropped_and_list_and_quote_marks_with_them():
    text = "# T\n\n## History\nMira Kalden is important.\n- a list item\n1. first\n> quoted\n<think>no</think>"
    assert plain_paragraph("<think>plan</think>" + text, 600) == (
        "Mira Kalden is important. a list item first quoted no"  # a tag is never kept (issue 26)
    )
    assert plain_paragraph("## Only a heading", 600) == ""


def test_brackets_left_over_are_defused_and_a_long_answer_is_cut_at_a_sentence():
    assert "[[" not in plain_paragraph("an open [[bracket and ]] a close", 600)
    long = "The engine turns widgets. " * 100
    cut = plain_paragraph(long, MAX_LEAD_CHARS)
    assert len(cut) <= MAX_LEAD_CHARS and cut.endswith("widgets.")


def test_heading_marks_copied_into_a_line_are_dropped_and_csharp_keeps_its_own():
    """A judge found "LVM2: ## How snapshot is used by LVM2" in a lead (a source's heading copied)."""
    assert plain_paragraph("LVM2: ## How snapshot is used by LVM2, in C# too.", 600) == (
        "LVM2: How snapshot is used by LVM2, in C# too."
    )
