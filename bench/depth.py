"""How deep the hub pages of a KB are: for the names the most documents mention, how many of the
documents that name them their page lists and quotes, and how many summaries no page links to.

Usage: DATABASE_URL=... .venv/bin/python -m bench.depth --kb NAME [--top 20] [--vault DIR]
       (or with no URL, the embedded servers of the home, as every kbwiki command)

For each of the ``--top`` pages whose name key the most documents name (``wiki_mention_keys``):
- ``listed``: documents its "Mentioned in" lists (the mention index: every one of them);
- ``summ``: documents whose summary page's text (the document's first sentences, as the wiki shows
  them) holds the page's title or an alias as a whole word (the measure issue 23 counted hub pages
  by), and ``l/summ`` the share of them listed;
- ``prose``: documents whose prose (as the extractor reads it: code, tables and directives out, the
  first 50,000 characters) holds the page's title or an alias as a whole word, counted here apart
  from the index (case-sensitive for a name written with a capital, not for a lower-case term);
  ``raw``: the same over the stored text as it is;
- ``listed ÷ prose`` and the distinct documents the page quotes.
Then the summaries with no in-link: from a page's links (``wiki_links``) or from an entity or
concept page listing the document under "Mentioned in"; with ``--vault``, also counted in an
exported vault's files (what a reader of the export follows).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kbwiki.command import command_deps, find_kb, services
from wiki.extract.offline.limits import MAX_ANALYSED_CHARS
from wiki.extract.offline.prose import _prose_blocks

LINK = re.compile(r"\[\[([^\]|#]+)")


def _pattern(names: list[str]) -> re.Pattern[str]:
    """Whole-word matches of any of ``names``: case-sensitive when a name holds a capital."""
    parts = [
        f"(?{'' if any(c.isupper() for c in n) else 'i'}:(?<![\\w.-]){re.escape(n)}(?![\\w-]))" for n in names if n
    ]
    return re.compile("|".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", required=True)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--tenant", type=int, default=1)
    parser.add_argument("--vault", type=Path)
    args = parser.parse_args()
    with services():
        deps = command_deps()
        kb = find_kb(deps, args.tenant, args.kb)
        top = deps.mentions.most_named(kb.id, args.top)
        summaries, alone = deps.mentions.unlinked_summaries(kb.id)
        patterns = {row["key"]: _pattern([row["title"], *row["aliases"]]) for row in top}
        in_prose: dict[str, set[str]] = {key: set() for key in patterns}
        in_raw: dict[str, set[str]] = {key: set() for key in patterns}
        in_summary: dict[str, set[str]] = {key: set() for key in patterns}
        for page in deps.pages.iter_pages(kb.id):
            if page.page_type == "summary" and page.source_refs:
                text = page.content.split("**Source:**")[0]  # the document's own sentences, not its lists
                for key, pattern in patterns.items():
                    if pattern.search(text):
                        in_summary[key].add(page.source_refs[0].knowledge_id)
        for kid, content in deps.docs.iter_contents(kb.id):
            blocks, _code, _headings = _prose_blocks(content[:MAX_ANALYSED_CHARS])
            prose = "\n".join(blocks)
            for key, pattern in patterns.items():
                if pattern.search(prose):
                    in_prose[key].add(kid)
                if pattern.search(content):
                    in_raw[key].add(kid)
        print(
            f"{'page':<28} {'listed':>6} {'summ':>5} {'l/summ':>6} {'prose':>6} {'l/prose':>7} {'raw':>5} {'quoted':>6}"
        )
        for row in top:
            key = row["key"]
            listed = {kid for _, _, kid in deps.mentions.mentioned_in(kb.id, key, limit=100_000)}
            by_summary = len(in_summary[key] & listed) / max(1, len(in_summary[key]))
            by_prose = len(in_prose[key] & listed) / max(1, len(in_prose[key]))
            print(
                f"{row['title'][:28]:<28} {len(listed):>6} {len(in_summary[key]):>5} {by_summary:>6.2f}"
                f" {len(in_prose[key]):>6} {by_prose:>7.2f} {len(in_raw[key]):>5} {len(row['facts']):>6}"
            )
        print(f"summaries with no in-link: {alone} of {summaries} ({alone / max(1, summaries):.1%})")
        if args.vault:
            summaries = {p.stem for p in (args.vault / "summary").glob("*.md")}
            linked: set[str] = set()
            for path in args.vault.rglob("*.md"):
                targets = set(LINK.findall(path.read_text(encoding="utf-8")))
                linked |= {t.strip().rpartition("/")[2] for t in targets} - {path.stem}
            alone = summaries - linked
            share = len(alone) / max(1, len(summaries))
            print(f"vault summaries with no in-link: {len(alone)} of {len(summaries)} ({share:.1%})")


if __name__ == "__main__":
    main()
