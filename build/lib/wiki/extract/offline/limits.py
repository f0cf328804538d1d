"""How much of a document the offline extractor reads, and how much it writes: the sizes of
its summary, body, items, leads and quotes."""

from __future__ import annotations

MAX_ANALYSED_CHARS = 50_000
PYSBD_PREFIX_CHARS = 2_500
YAKE_CHARS = 6_000
MAX_ENTITIES = 12
MAX_CONCEPTS = 12
MAX_ALIASES = 5
SUMMARY_CHARS = 300
DESCRIPTION_CHARS = 400
EVIDENCE_CHARS = 400
#: wordfreq Zipf frequency from which a lower-case identifier reads as an English word ("timeout"
#: 3.2, "callback" 2.8, "filename" 2.7): many modules have one, so a page of it would merge them;
#: "mmap" 1.3 and "readline" 1.3 stay names.
WORDLIKE_ZIPF = 2.5
#: Longest sentence quoted at all: evidence is whole sentences, never cut.
MAX_QUOTE_CHARS = 800
BODY_PARAGRAPHS = 3
BODY_PARAGRAPH_SENTENCES = 3
BODY_CHARS = 1200
