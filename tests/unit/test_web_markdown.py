"""A page's Markdown as HTML: wiki links become links, nothing in the text can run script."""

from kbwiki.web.markdown import render_markdown


def href(slug: str) -> str:
    return f"/p/{slug}"


def test_wiki_links_become_links_outside_code():
    html = render_markdown(
        "See [[beta-store|Beta Store]], [[entity/alpha]] and `[[not-a-link]]`.",
        href,
        live=lambda slug: slug == "beta-store",
    )
    assert '<a href="/p/beta-store" class="wikilink"' in html
    assert '<a href="/p/alpha" class="wikilink dead"' in html  # folder prefix dropped, no live page
    assert "<code>[[not-a-link]]</code>" in html


def test_raw_html_and_script_urls_are_inert():
    html = render_markdown(
        '<img src=x onerror="alert(1)"> <script>alert(2)</script>\n\n'
        "[x](javascript:alert(3)) ![i](javascript:alert(4)) [[a|<b onmouseover=alert(5)>]]",
        href,
    )
    assert "<img src=x" not in html and "<script>" not in html and "<b " not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html
    assert 'href="javascript' not in html and 'src="javascript' not in html
