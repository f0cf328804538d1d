"""A count with its noun in the right number: "1 page", "2 pages", "1 summary", "3 summaries".

Every line kbwiki prints with a count goes through :func:`counted` (or :func:`noun` when the number
is formatted apart, e.g. with thousands separators). The regular English rules cover the nouns it
prints; an irregular one passes its plural. A dictionary of every noun (inflect, lemminflect) is
more than this needs.
"""

from __future__ import annotations

#: Endings that take "es" in the plural: "index" -> "indexes", "batch" -> "batches".
_ES_ENDINGS = ("s", "x", "z", "ch", "sh")


def noun(n: float, singular: str, plural: str | None = None) -> str:
    """``singular`` when ``n`` is 1, else ``plural``, or else the regular plural of ``singular``'s
    last word: "es" after s, x, z, ch and sh, "ies" for a consonant and y ("summary" ->
    "summaries", "entity" -> "entities", but "day" -> "days"), else "s" ("dead letter" -> "dead
    letters"). Zero takes the plural ("0 pages")."""
    if n == 1:
        return singular
    if plural is not None:
        return plural
    if singular.endswith(_ES_ENDINGS):
        return singular + "es"
    if len(singular) > 1 and singular.endswith("y") and singular[-2] not in "aeiou":
        return singular[:-1] + "ies"
    return singular + "s"


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``"<n> <noun>"``: ``counted(1, "summary")`` is "1 summary", ``counted(3, "summary")``
    "3 summaries" (see :func:`noun`)."""
    return f"{n} {noun(n, singular, plural)}"
