"""One RST document read both ways: as ingest text (``document_text``) and as the offline
extractor's prose, raw and after ingest; both read its RST by ``wiki.rst``'s definitions."""

from __future__ import annotations

from wiki.extract.offline.prose import _prose_blocks
from wiki.text import document_text

RST = """\
=======
Kernel
=======

The allocator hands out pages [1]_ through :c:func:`kmalloc` and :func:`~os.path.join`,
as :ref:`the memory guide <mm-guide>` explains; see the `project site <intro.html>`_
and `Frobnicator`_ for the rest.

Flags
-----

.. note::
   The |name| flags live in ``include/linux/gfp.h``.

.. toctree::
   :maxdepth: 2

   hidden-page

=========  ===============
Flag       Meaning
=========  ===============
GFP_ZERO   zero the pages
=========  ===============

Pages are zeroed when the caller asks for it::

    ptr = kzalloc(size, GFP_KERNEL);

.. _Frobnicator: https://example.org/frob
.. [1] The footnote text.
"""


def test_one_rst_document_as_ingest_text_and_as_extractor_prose() -> None:
    text = document_text("guide.rst", RST.encode())
    lines = text.splitlines()
    # section titles (over- and underlined, underlined) are headings in order of appearance
    assert [line for line in lines if line.startswith("#")] == ["# Kernel", "## Flags"]
    # a role shows its text (the last part after "~"), a hyperlink reference its text
    assert "The allocator hands out pages [1]_ through kmalloc and join," in lines
    assert "as the memory guide explains; see the project site" in lines
    assert "and Frobnicator for the rest." in lines
    # a note keeps its content, a toctree and the targets go
    assert "The |name| flags live in `include/linux/gfp.h`." in lines
    assert "hidden-page" not in text and "maxdepth" not in text and "example.org" not in text
    # a simple table stays as written, a literal block is fenced code
    assert "GFP_ZERO   zero the pages" in lines
    assert "```\nptr = kzalloc(size, GFP_KERNEL);\n```" in text

    # raw: titles, directives with their content, the table, the literal block and the targets
    # are no prose; a role keeps its whole dotted name, and a reference without a target is a code span
    allocator = "The allocator hands out pages through kmalloc and {}, as the memory guide explains;"
    assert _prose_blocks(RST) == (
        [
            allocator.format("os.path.join") + " see the project site and Frobnicator for the rest.",
            "Pages are zeroed when the caller asks for it:",
        ],
        ["kmalloc", "os.path.join", "the memory guide", "Frobnicator"],
        {},
    )
    # after ingest: the headings head their blocks, the table's rows are still no prose
    assert _prose_blocks(text) == (
        [
            allocator.format("join") + " see the project site and Frobnicator for the rest.",
            "The name flags live in include/linux/gfp.h.",
            "Pages are zeroed when the caller asks for it:",
            "[1] The footnote text.",
        ],
        ["include/linux/gfp.h"],
        {0: "Kernel", 1: "Flags"},
    )


def test_the_extractor_takes_no_bare_doctest_prompt_for_an_underline() -> None:
    # ">>>" is an RST adornment, but in a docstring it is a prompt: the line above stays prose
    assert _prose_blocks("Usage\n>>>\n")[0] == ["Usage"]
    assert _prose_blocks("Usage\n~~~\n")[0] == []


def test_a_line_opening_with_a_role_is_prose_and_a_field_is_its_own_unit():
    """A line that opens with a role (":class:`Foo` ...") continues its paragraph; only a field
    marker with a blank (or the line's end) after it starts a unit of its own. The extractor took
    both for fields: "Buffers follow the\\n:ref:`buffer protocol <bufferobjects>` rules." was cut
    in two and the role's target text leaked into the sentence."""
    text = (
        "Buffers follow the\n:ref:`buffer protocol <bufferobjects>` rules of the interpreter.\n\n"
        ":param size: how many bytes to read."
    )
    blocks, code, _headings = _prose_blocks(text)
    assert blocks == ["Buffers follow the buffer protocol rules of the interpreter.", "how many bytes to read."]
    assert not any("bufferobjects" in c for c in code)
