"""How the neighbourhood graph draws a page of each type: its colour, its Cytoscape.js shape and
what the legend says of it.

The one place these are decided: ``graph.html`` renders the legend from :data:`NODE_STYLES`, each
entry carrying its colour and shape as data attributes, and ``static/graph.js`` reads them back
from the legend to style the nodes, so what is drawn and what the legend explains cannot drift
apart. Every type has its own shape as well as its own colour, so a reader who cannot tell the
colours apart (or a grey printout) still can the types.
"""

from __future__ import annotations

from typing import NamedTuple

from wiki.models import PageType


class NodeStyle(NamedTuple):
    """A page type's node: ``colour`` (CSS hex), ``shape`` (a Cytoscape.js node shape, which the
    legend's swatch draws the same) and ``meaning`` (the legend's words for the type)."""

    colour: str
    shape: str
    meaning: str


#: Page type -> its node's style, in the legend's order (``graph.js`` draws a type missing here as
#: a dark grey circle).
NODE_STYLES: dict[str, NodeStyle] = {
    PageType.summary.value: NodeStyle("#6b7280", "round-rectangle", "one document's summary"),
    PageType.entity.value: NodeStyle("#2563eb", "ellipse", "a named thing: a person, product, module, place…"),
    PageType.concept.value: NodeStyle("#059669", "diamond", "a term or idea"),
    PageType.index.value: NodeStyle("#9333ea", "star", "the KB's index page"),
    PageType.disambiguation.value: NodeStyle(
        "#db2777", "hexagon", "lists the pages of code names sharing a bare name (Queue)"
    ),
}
