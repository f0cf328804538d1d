"""Which names of a KB have a page, and which documents' sentences a page is made of (issue 23).

A document's extraction gives, beside the items it makes pages of on its own (``Extraction.items``:
it defines them, or talks about them in two sentences or more), the other names it mentions
(``Extraction.mentions``), each with what the document says of it: how many of its sentences name
it, of how many it is the subject, and its best sentence about it. Reduce keeps one row per (name
key, document) of both in the mention index (``wiki_mentions``, ``repos.mentions``); a page of a
name key is a function of that key's rows only:

- whether it exists (``page_worthy``), from counters kept per key (``KeyStats``);
- its title and aliases, from the names the rows give (``wiki.merge.canonical_name``);
- its lead and its quotes, from the rows with the best ``score`` (a definition first, then the
  document that says most of it), one quote per document first: a bounded walk of an index.

So a page reads the same whatever order its documents arrived in, and a later document that
defines it better takes the lead over. Everything here is pure; the rows come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from wiki.dedup import is_code_name, name_key
from wiki.extract import lexicon
from wiki.models import Document, ExtractedItem, Extraction, Fact
from wiki.render import lead_rank
from wiki.slugs import has_cjk, slugify

#: What ``ExtractedItem.rank`` / ``MentionRow.rank`` say of a row's lead sentence.
RANKS = {3: "a definition (X is a ...)", 2: "what X does or provides", 1: "a central fact about X", 0: "no lead"}
#: A term (a lower-case phrase) defined in one document gets a page once this many documents name it.
TERM_MIN_DOCS = 2
#: A proper name, acronym or code name gets a page once this many documents name it (and some
#: document says something of it as its subject), even where nothing says "X is a ...".
NAME_MIN_DOCS = 3
#: A name this many documents name gets a page even where no sentence defines it or states a
#: central fact of it, when a document or one of its sections is titled by it and some sentence has
#: it for its subject ("Workqueue guarantees that ..."): what readers of the corpus look up; that
#: sentence leads it (``score``: the rows with a subject sentence first).
NAME_HUB_DOCS = 5
#: A proper name the subject of this many sentences of one document gets a page.
NAME_MIN_SUBJECT = 2
#: A name this many documents name gets a page whatever they say of it, when one of them has a
#: sentence to quote of it (``best``): a hub of the corpus ("kmalloc" in 40 linux-doc documents,
#: "workqueue" in 30, none with it for the subject of a sentence that says what it is).
NAME_MANY_DOCS = 10
#: A lower-case hub title is rarer than this (wordfreq's Zipf scale, the offline extractor's jargon
#: threshold): "kmalloc", "workqueue", "dmesg", not "instantiate" (which lemminflect lacks).
HUB_ZIPF = 2.0
#: Endings of English words the lexicon may lack ("instantiate", "atomically", "unmapped"): no
#: lower-case hub title ends so ("kmalloc", "workqueue" do not).
_ENGLISH_SUFFIXES = ("ly", "ed", "ing", "ate", "ize", "ise")
#: Quotes a page shows, from this many documents at most (one each first, then a second of each).
MAX_QUOTES = 8
#: Quotes one document gives a page at most.
QUOTES_PER_SOURCE = 2
#: Longest sentence a row keeps (characters): a longer one is no quote a reader reads through.
MAX_ROW_SENTENCE_CHARS = 600
#: Characters a lead is best near (``score``): long enough to say what the thing is, short enough to read.
LEAD_CHARS = 120


@dataclass(frozen=True)
class MentionRow:
    """One document's mention of one name key (a ``wiki_mentions`` row).

    ``earned``: the document alone makes it a page (it was among ``Extraction.items``);
    ``named``: the document takes it for a proper name, acronym or code name; ``titled``: the
    document's title or one of its headings names it; ``parent``: the name
    key of the class or module it is a member of ("" for none); ``score``: its place among the
    key's rows (``score``); ``doc_title`` is filled by reads that join the document.
    """

    key: str
    knowledge_id: str
    name: str
    kind: str
    earned: bool
    named: bool
    sentences: int
    subject: int
    rank: int
    score: int
    lead: str
    quotes: tuple[str, ...]
    aliases: tuple[str, ...]
    parent: str
    summary_slug: str
    titled: bool = False
    doc_title: str = ""

    def order(self) -> tuple[int, str, str]:
        """Sort key of the key's rows, best first: ``score`` down, then summary slug, then id
        (what ``repos.mentions`` orders by), so every choice among them is the same in any order."""
        return -self.score, self.summary_slug, self.knowledge_id


@dataclass
class KeyStats:
    """Counters of one name key's rows, kept per key so whether it has a page is one row's read:
    ``docs`` rows, ``earned`` of them among items, ``named`` taken for a name, ``discussed`` a name
    the subject of ``NAME_MIN_SUBJECT`` sentences or more, ``defined`` with a definition (rank 3),
    ``described`` with any lead (rank 1 or more), ``entity`` of kind entity, ``titled`` from a
    document whose title or one of whose headings names it, ``subjects`` from a document with a
    sentence that has it for its subject."""

    docs: int = 0
    earned: int = 0
    named: int = 0
    discussed: int = 0
    defined: int = 0
    described: int = 0
    entity: int = 0
    titled: int = 0
    subjects: int = 0

    def apply(self, row: MentionRow, sign: int = 1) -> None:
        """Count ``row`` in (``sign`` 1) or out (-1)."""
        self.docs += sign
        self.earned += sign * row.earned
        self.named += sign * row.named
        self.discussed += sign * (row.named and row.subject >= NAME_MIN_SUBJECT)
        self.defined += sign * (row.rank >= 3)
        self.described += sign * (row.rank >= 1)
        self.entity += sign * (row.kind == "entity")
        self.titled += sign * row.titled
        self.subjects += sign * (row.subject >= 1)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def page_worthy(stats: KeyStats) -> bool:
    """Whether a name key with these counters has a page (docs/decisions.md, issue 23):

    - a document makes it a page on its own (``earned``: it defines it, or it is the subject of
      two sentences there, or a section of a reference is headed by it);
    - a term defined somewhere (a definition, rank 3) that ``TERM_MIN_DOCS`` documents name (a
      term no document defines is left: what it does or has is no lead of a general term);
    - a proper name, acronym or code name (so most documents naming it take it) that some
      document says something of as its subject (a lead, rank 1 or more) and that is the subject
      of ``NAME_MIN_SUBJECT`` sentences of one document or named by ``NAME_MIN_DOCS`` documents;
    - a name ``NAME_HUB_DOCS`` documents name, one of which (or one of whose sections) it titles,
      and some sentence has for its subject.

    ``hub_worthy`` adds the names many documents name, by the shape of their title.

    Generic everyday words never get here: the extractor does not name them."""
    if stats.docs <= 0:
        return False
    if stats.earned:
        return True
    if stats.defined and stats.docs >= TERM_MIN_DOCS:
        return True
    # most of its documents must take it for a name: one title-cased heading ("User Space",
    # "Documentation") does not make a phrase the others write in lower case a name
    named = 2 * stats.named > stats.docs
    if named and stats.described and (stats.discussed or stats.docs >= NAME_MIN_DOCS):
        return True
    return bool(named and stats.titled and stats.subjects and stats.docs >= NAME_HUB_DOCS)


def hub_worthy(stats: KeyStats, title: str | None = None) -> bool:
    """Whether a name ``page_worthy`` leaves gets a page as a hub of the corpus: most of the
    ``NAME_MANY_DOCS`` or more documents naming it take it for a name (most of them for a thing, not
    a term: the demo's "iterable" and "charset" hubs were led by "Iterables are converted to strings
    ..." and "Charset is None for ..."), some sentence has it for its
    subject (its lead then: ``score`` puts that row first), and its title is an acronym
    ("UART", "EINVAL"), a code name ("PAGE_SIZE", "x86_64") or a lower-case word no dictionary
    knows ("kmalloc", "workqueue", "dmesg"). Capitalised words (first names, vendors: "Alex",
    "Samsung") and dictionary words ("instantiate", "atomically") do not: tried on linux-doc,
    they made pages of whatever sentence named them. The page exists where one of its documents has
    a sentence to quote of it (``best``). With no ``title``, only the counters are looked at (the
    keys whose title to ask for)."""
    if stats.docs < NAME_MANY_DOCS or 2 * stats.named <= stats.docs or not stats.subjects:
        return False
    if 2 * stats.entity <= stats.docs:
        return False  # a term of the corpus ("iterable", "charset": a docstring's parameter), no thing
    if title is None:
        return True
    if " " in title:
        return False
    letters = "".join(ch for ch in title if ch.isalpha())
    if not letters:
        return False
    if is_code_name(title) or any(ch.isdigit() for ch in title) or title.endswith("()"):
        return True
    if letters.isupper():
        return len(letters) >= 2
    return (
        title.islower()
        and title.isalpha()
        and not lexicon.dictionary_word(title)
        and lexicon.zipf(title) < HUB_ZIPF
        and not title.endswith(_ENGLISH_SUFFIXES)
    )


def may_have_page(stats: KeyStats) -> bool:
    """Whether a key's counters may give it a page (``page_worthy``, or ``hub_worthy`` before its
    title is known): the keys whose names and best rows are worth reading."""
    return page_worthy(stats) or hub_worthy(stats)


def has_page(stats: KeyStats, title: str, chosen: list[MentionRow]) -> bool:
    """Whether a key has a page: something to lead or quote (``chosen``, its ``best`` rows: a key
    with nothing to say gets none, not a placeholder) and ``page_worthy`` or ``hub_worthy`` with
    its ``title``."""
    return bool(chosen) and (page_worthy(stats) or hub_worthy(stats, title))


def score(rank: int, subject: int, sentences: int, lead: str) -> int:
    """A row's place among its key's rows, higher first: the rank of its lead, then how many of
    its document's sentences have the name as their subject, then how many name it, then how near
    ``LEAD_CHARS`` its lead is. Fits a PostgreSQL integer."""
    closeness = 9_999 - min(abs(len(lead) - LEAD_CHARS), 9_999) if lead else 0
    return rank * 100_000_000 + min(subject, 99) * 1_000_000 + min(sentences, 99) * 10_000 + closeness


def _rank(item: ExtractedItem) -> int:
    """The item's rank: the extractor's, else its description's (``wiki.render.lead_rank``, 0-2,
    one up: a model's description always says something of the item)."""
    if item.rank is not None:
        return item.rank
    return lead_rank(item.description) + 1 if item.description else 0


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ROW_SENTENCE_CHARS else ""


def rows_of(doc: Document, extraction: Extraction, summary_slug: str) -> dict[str, MentionRow]:
    """The mention rows of one document, by name key: its items (``earned``) and its mentions, a
    key named twice (two spellings, or an item and a mention) merged into one row, its names kept
    as aliases. Pure: the same extraction always gives the same rows."""
    rows: dict[str, MentionRow] = {}
    for earned, items in ((True, extraction.items), (False, extraction.mentions)):
        for item in items:
            key = name_key(item.name)
            rank = _rank(item)
            # a translation's sentences quote nothing on the page of a Latin name
            foreign = (lambda text: has_cjk(text)) if not has_cjk(item.name) else (lambda text: False)
            lead = _sentence(item.description) if rank and not foreign(item.description) else ""
            quotes = tuple(q for q in dict.fromkeys(_sentence(e) for e in item.evidence) if q and not foreign(q))[
                :QUOTES_PER_SOURCE
            ]
            row = MentionRow(
                key=key,
                knowledge_id=doc.id,
                name=item.name,
                kind=item.kind,
                earned=earned,
                named=item.named,
                sentences=item.sentences,
                subject=item.subject,
                rank=rank if lead else 0,
                score=0,
                lead=lead,
                quotes=quotes,
                aliases=tuple(a for a in item.aliases if a != item.name),
                parent=name_key(item.parent) if item.parent else "",
                summary_slug=summary_slug,
                titled=item.titled,
                doc_title=doc.title,
            )
            rows[key] = _merged(rows[key], row) if key in rows else row
    return {key: replace(row, score=score(row.rank, row.subject, row.sentences, row.lead)) for key, row in rows.items()}


def _merged(first: MentionRow, other: MentionRow) -> MentionRow:
    """One row of a key a document names twice: the first's name and kind (an item comes before
    a mention), the better lead, both sets of quotes and names, the larger counts."""
    best = other if other.rank > first.rank else first
    names = [first.name, *first.aliases, other.name, *other.aliases]
    return replace(
        first,
        earned=first.earned or other.earned,
        named=first.named or other.named,
        titled=first.titled or other.titled,
        sentences=max(first.sentences, other.sentences),
        subject=max(first.subject, other.subject),
        rank=best.rank,
        lead=best.lead,
        quotes=tuple(dict.fromkeys([*best.quotes, *first.quotes, *other.quotes]))[:QUOTES_PER_SOURCE],
        aliases=tuple(n for n in dict.fromkeys(names) if n != first.name),
        parent=first.parent or other.parent,
    )


def stats_after(
    before: Mapping[str, KeyStats], dropped: Iterable[MentionRow], added: Iterable[MentionRow]
) -> dict[str, KeyStats]:
    """Per key, ``before`` (the stored counters) with the ``dropped`` rows counted out and the
    ``added`` rows counted in: the counters once a batch is written."""
    out = {key: KeyStats(**s.as_dict()) for key, s in before.items()}
    for sign, rows in ((-1, dropped), (1, added)):
        for row in rows:
            out.setdefault(row.key, KeyStats()).apply(row, sign)
    return out


def name_deltas(dropped: Iterable[MentionRow], added: Iterable[MentionRow]) -> dict[tuple[str, str, bool], int]:
    """{(key, name, is an alias): change in the number of documents giving it} for a batch."""
    out: dict[tuple[str, str, bool], int] = {}
    for sign, rows in ((-1, dropped), (1, added)):
        for row in rows:
            out[(row.key, row.name, False)] = out.get((row.key, row.name, False), 0) + sign
            for alias in row.aliases:
                out[(row.key, alias, True)] = out.get((row.key, alias, True), 0) + sign
    return {k: v for k, v in out.items() if v}


#: Documents that only name a page's subject (rank 0: no sentence says what it is or does) are
#: quoted while fewer documents than this are: enough for a hub's depth, never crowding out
#: the documents that say something of it.
MENTION_QUOTES = 5


def best(rows: Iterable[MentionRow], limit: int = MAX_QUOTES) -> list[MentionRow]:
    """The ``limit`` best rows with something to quote (a lead or a quote), best first; rows of
    rank 0 only among the first ``MENTION_QUOTES`` (they sort after every row of rank 1 or more)."""
    ordered = sorted((r for r in rows if r.lead or r.quotes), key=MentionRow.order)
    return [r for i, r in enumerate(ordered) if r.rank or i < MENTION_QUOTES][:limit]


def facts_of(rows: list[MentionRow]) -> dict[str, Fact]:
    """``wiki_pages.facts`` of a page from its best rows (``best``), numbered in that order: the
    lead is the first description, the quotes the rows' own quotes (``wiki.render.render_item_page``)."""
    # a lead the extractor wrote ("`Directory` is a class of ...") is no sentence of the document:
    # only the rows' own sentences are quoted
    return {
        row.knowledge_id: Fact(
            doc_title=row.doc_title,
            summary_slug=row.summary_slug,
            description=row.lead,
            evidence=row.quotes,
            name=row.name,
            aliases=row.aliases,
            kind=row.kind,
            seq=seq,
        )
        for seq, row in enumerate(rows, 1)
    }


#: Pages sharing a bare name that get a disambiguation page.
DISAMBIGUATION_MIN = 2


def bare_name(key: str) -> str:
    """The bare name a qualified code name goes by in prose ("Queue" of "queue.Queue", "findall" of
    "re.findall"), "" for a name with no qualifier. Two pages of one bare name get a disambiguation
    page (``DISAMBIGUATION_MIN``): the qualified pages keep the bare name as an alias (what a reader
    types) but no mention of it is linked to one of them (``wiki.dedup.link_aliases``)."""
    if "." not in key or not is_code_name(key):
        return ""
    tail = key.rpartition(".")[2]
    return tail if tail.isidentifier() else ""


def disambiguation_slug(bare: str) -> str:
    """The slug of the disambiguation page of a bare name: its slug and "-disambiguation" (the
    bare slug itself may be a module's page: "queue")."""
    return f"{slugify(bare)}-disambiguation"
