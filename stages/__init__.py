"""Stage functions: one stage's orchestration over the repositories it names in its signature
(and the extractor), plain Python testable without a broker. Actors call them."""
