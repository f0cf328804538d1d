"""Document text: binary refusal, decoding, cleanup, cutting, HTML/RST conversion, titles."""

from __future__ import annotations

import time

import pytest

from wiki.rst import rst_to_text
from wiki.text import (
    BadDocument,
    clean_text,
    cut,
    decode,
    document_text,
    document_title,
    html_to_text,
    is_binary,
    prose_size,
)

# --- bytes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3 text-looking pdf",
        b"PK\x03\x04" + b"a" * 100,
        b"\x89PNG\r\n\x1a\n" + b"a" * 100,
        b"\x7fELF" + b"a" * 100,
        b"\x1f\x8b\x08" + b"a" * 100,
        b"plain text with a NUL\x00 inside",
        bytes(range(1, 32)) * 10,
    ],
)
def test_binary_detected(data: bytes) -> None:
    assert is_binary(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"# Title\n\nSome text.\tTabbed.\r\n",
        "上海中心大厦 Café Müller 🎉".encode(),
        b"\xef\xbb\xbfBOM text",
        "UTF-16 text".encode("utf-16"),
        b"\x1b[31mcolored log\x1b[0m line\n" * 5,
        b"a" * 9000 + b"\x00",  # NUL after the sniffed window
    ],
)
def test_text_not_binary(data: bytes) -> None:
    assert not is_binary(data)


def test_control_ratio_threshold() -> None:
    assert not is_binary(b"\x01" * 29 + b"a" * 71)
    assert is_binary(b"\x01" * 31 + b"a" * 69)


def test_decode_strips_bom_and_replaces_invalid() -> None:
    assert decode(b"\xef\xbb\xbfhello") == "hello"
    assert decode(b"caf\xe9 ok") == "caf\ufffd ok"
    assert decode(b"\xff\xfe\x00") is not None
    assert decode("上海".encode()) == "上海"
    assert decode("utf16 é".encode("utf-16")) == "utf16 é"


# --- clean -------------------------------------------------------------------------------


def test_clean_text_controls_newlines_spaces() -> None:
    raw = "a\x00b\x07c\r\nd\re\x85f\x9fg\tt  \n\n\n\n\n\nh   \ufeffi"
    assert clean_text(raw) == "abc\nd\nef g\tt\n\n\nh   i".replace("ef g", "efg")


def test_clean_text_nfc() -> None:
    assert clean_text("Cafe\u0301") == "Café"


def test_clean_text_surrogates() -> None:
    cleaned = clean_text("x\ud800y\udc00z\ud83d\ude00")
    assert cleaned == "xyz😀"
    cleaned.encode("utf-8")  # must not raise


def test_clean_text_keeps_two_blank_lines() -> None:
    assert clean_text("a\n\n\nb") == "a\n\n\nb"
    assert clean_text("a\n\n\n\nb") == "a\n\n\nb"
    assert clean_text("\n\n  lead\n") == "  lead"


# --- cut ---------------------------------------------------------------------------------


def test_cut_not_needed() -> None:
    assert cut("short", 100) == ("short", False)


def test_cut_at_paragraph() -> None:
    text = "First paragraph here.\n\nSecond paragraph. " + "x" * 100
    out, was_cut = cut(text, 40)
    assert was_cut
    assert out == "First paragraph here."


def test_cut_at_sentence() -> None:
    text = "One sentence here. Two sentence here. Three goes on and on and on."
    out, was_cut = cut(text, 45)
    assert was_cut
    assert out == "One sentence here. Two sentence here."
    out, _ = cut("第一句话很长很长。第二句话也很长很长。第三句", 20)
    assert out == "第一句话很长很长。第二句话也很长很长。"


def test_cut_falls_back_to_space_then_hard() -> None:
    out, was_cut = cut("word " * 50, 23)
    assert was_cut and len(out) <= 23 and out.endswith("word")
    out, was_cut = cut("x" * 100, 30)
    assert (out, was_cut) == ("x" * 30, True)
    with pytest.raises(ValueError):
        cut("abc", 0)


# --- formats -----------------------------------------------------------------------------


def test_html_to_text() -> None:
    html = (
        "<html><head><style>p{color:red}</style><script>var secret=1;</script></head><body>"
        "<h1>Main Title</h1><p>Hello <a href='http://example.org/x'>linked words</a>"
        "<img src='pic.png' alt='picture alt'> world.</p><h2>Part Two</h2><p>更多内容</p></body></html>"
    )
    text = html_to_text(html)
    assert "# Main Title" in text
    assert "## Part Two" in text
    assert "linked words" in text and "http://example.org" not in text
    assert "pic.png" not in text and "picture alt" not in text
    assert "secret" not in text and "color:red" not in text
    assert "更多内容" in text


RST = """\
.. _intro-label:

=======
Kernel
=======

Intro with :ref:`the guide <guide-label>`, :c:func:`kmalloc` and ``GFP_KERNEL``,
and a `web link <https://example.org>`_ plus :doc:`~core.api.memory`.

Memory
------

.. note::
   Be careful with :c:type:`struct page`.

.. toctree::
   :maxdepth: 2

   hidden-file-one

.. code-block:: c

   int x = 1;

Example::

    $ make menuconfig

.. a comment that
   spans lines

Details
~~~~~~~

.. |sub| replace:: substituted

----

The end.
"""


def test_rst_to_text() -> None:
    text = rst_to_text(RST)
    lines = text.splitlines()
    assert "# Kernel" in lines
    assert "## Memory" in lines
    assert "### Details" in lines
    assert not any(set(line) <= set("=-~") and line for line in lines)
    assert "the guide" in text and "guide-label" not in text
    assert "kmalloc" in text and ":c:func:" not in text
    assert "`GFP_KERNEL`" in text and "``GFP" not in text
    assert "web link" in text and "https://example.org" not in text
    assert "memory" in text and "~core" not in text
    assert "Be careful with struct page." in lines
    assert ".. note::" not in text
    assert "hidden-file-one" not in text and "maxdepth" not in text
    assert "```c\nint x = 1;\n```" in text
    assert "Example:" in lines and "```\n$ make menuconfig\n```" in text
    assert "comment" not in text and "spans lines" not in text
    assert "intro-label" not in text and "substituted" not in text
    assert "The end." in lines


@pytest.mark.timing
def test_rst_fast_on_large_file() -> None:
    big = RST * (200_000 // len(RST) + 1)
    start = time.perf_counter()
    text = rst_to_text(big)
    elapsed = time.perf_counter() - start
    assert text.count("## Memory") == big.count("\nMemory\n------")
    assert elapsed < 1.0, f"rst_to_text took {elapsed:.2f} s"


# --- document_text -----------------------------------------------------------------------


def test_document_text_markdown_and_txt_as_is() -> None:
    data = b"# Title\r\n\r\nBody\x07 text  \n"
    assert document_text("notes.md", data) == "# Title\n\nBody text"
    assert document_text("NOTES.TXT", b"plain") == "plain"
    assert document_text("a.markdown", b"md") == "md"


def test_document_text_dispatch() -> None:
    assert "## Memory" in document_text("guide.rst", RST.encode())
    assert "# Head" in document_text("page.HTML", b"<h1>Head</h1><p>x</p>")
    assert "para" in document_text("page.htm", b"<p>para</p>")


def test_document_text_invalid_utf8_kept() -> None:
    assert document_text("x.txt", b"caf\xe9 au lait") == "caf\ufffd au lait"


def test_document_text_refuses_binary_and_unknown() -> None:
    with pytest.raises(BadDocument) as err:
        document_text("report.pdf", b"%PDF-1.4 ...")
    assert err.value.reason == "binary"
    with pytest.raises(BadDocument) as err:
        document_text("notes.md", b"abc\x00def")
    assert err.value.reason == "binary"
    with pytest.raises(BadDocument) as err:
        document_text("data.csv", b"a,b\n1,2\n")
    assert err.value.reason == "unsupported type"
    assert "data.csv" in str(err.value)
    assert isinstance(err.value, ValueError)


# --- document_title ----------------------------------------------------------------------


def test_title_from_first_heading() -> None:
    assert document_title("x.md", "intro\n\n## Second Level\n\n# First Level") == "Second Level"
    assert document_title("x.md", "# **Bold** _and_ `Code` Title #\n") == "Bold and Code Title"
    assert document_title("x.md", "# About [[acme|Acme]] and [docs](http://x)") == "About Acme and docs"


def test_title_skips_code_and_deeper_headings() -> None:
    text = "```bash\n# not a title\n```\n### Too deep\n"
    assert document_title("install_guide-v2.md", text) == "install guide v2"


def test_title_setext_and_front_matter() -> None:
    assert document_title("x.md", "My Title\n========\n\ntext") == "My Title"
    assert document_title("x.md", "---\ntitle: meta\n---\nbody") == "x"


def test_title_fallbacks_and_limits() -> None:
    assert document_title("docs/sub/上海_中心-大厦.md", "no heading") == "上海 中心 大厦"
    assert document_title("C:\\files\\my-notes.txt", "") == "my notes"
    assert document_title(".md", "") == ".md"
    assert document_title("___.md", "") == "Untitled"
    long_title = document_title("x.md", "# " + "word " * 100)
    assert len(long_title) <= 200 and "\n" not in long_title and long_title.endswith("word")
    assert document_title("x.md", "#    \n") == "x"


# --- near-empty per script -------------------------------------------------------------------


def test_prose_size_counts_cjk_characters_for_what_they_say() -> None:
    assert prose_size("  Too short.  ") == len("Too short.")
    japanese = "富士山は日本で最も高い山である。"  # 16 characters, one whole sentence
    assert prose_size(japanese) == len(japanese) + 2 * 15  # the full stop 。 is not a CJK letter
    assert prose_size(japanese) >= 40 > len(japanese)  # the default min_document_chars
    assert prose_size("東京") < 40


def test_lint_counts_a_short_japanese_page_like_its_document() -> None:
    from wiki.lint import prose_length

    page = "富士山は日本で最も高い山である。"
    assert prose_length(page) == prose_size(page) >= 40


def test_rst_tables_of_every_directive_are_dropped() -> None:
    rst = "Flags\n=====\n\nThe flags of a picture.\n\n"
    for directive in ("list-table", "flat-table", "csv-table"):
        rst += f".. {directive}::\n    :header-rows:  0\n\n    * - ``FROB_FLAG``\n      - 0x0080\n"
        rst += f"      - ``FROB_MATRIX`` must be used for this {directive} picture.\n\n"
    text = rst_to_text(rst)
    assert "The flags of a picture." in text
    assert "must be used" not in text and "0x0080" not in text
