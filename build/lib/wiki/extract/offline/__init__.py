"""The offline extractor: deterministic, no network, good enough for a useful wiki from real docs.

Pipeline for one document (Markdown, reStructuredText or plain text):

1. keep the first ``MAX_ANALYSED_CHARS`` characters; drop code (fences, ``::`` literal blocks,
   doctest lines), tables, headings and directives; strip inline markup, remembering the inline
   code spans (they name functions, modules and constants);
2. split prose into sentences: ``pysbd`` for the first ``PYSBD_PREFIX_CHARS`` of prose (the part
   the summary and body come from; pysbd costs about 2 ms per KB) and ``segtok`` (the splitter
   yake itself uses, ~15x faster) for the rest, so a 50 KB document stays well under 150 ms;
3. summary = the first informative sentence; body = 1-3 short paragraphs of leading informative
   sentences;
4. entities = capitalised multi-word names, proper nouns seen capitalised mid-sentence, acronyms
   and code identifiers, ranked by frequency and first position; concepts = ``yake`` keyphrases
   (Campos et al., 2020) of the first ``YAKE_CHARS`` of prose that do not repeat an entity;
5. each item gets a one-sentence description (a definitional sentence "X is/provides/... " from
   the document when there is one) and up to 3 evidence sentences quoted from the document.

Re-exports only. The modules, each importing only those listed before it: ``limits`` (how much
is read and written), ``words`` (the rules' word lists, kept as data in ``words.toml``), ``prose``
(steps 1 and 2, and which sentences are fit to summarise or quote), ``names`` (step 4's names),
``ranks`` (how well a sentence says what a name is), ``leads`` (the leads of code names from the
sentence under their heading) and ``extractor`` (``OfflineExtractor``: the steps together, and
step 5's evidence).
"""

from __future__ import annotations

from wiki.extract.offline.extractor import OfflineExtractor
from wiki.extract.offline.limits import MAX_ANALYSED_CHARS, MAX_CONCEPTS, MAX_ENTITIES

__all__ = ["MAX_ANALYSED_CHARS", "MAX_CONCEPTS", "MAX_ENTITIES", "OfflineExtractor"]
