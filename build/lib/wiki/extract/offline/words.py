"""The plain word lists of the offline extractor's rules, kept as data: ``words.toml`` (each list
with what it is for), read once at import into frozensets."""

from __future__ import annotations

import tomllib
from pathlib import Path

_LISTS: dict[str, list[str]] = tomllib.loads((Path(__file__).parent / "words.toml").read_text(encoding="utf-8"))

FILE_EXT = frozenset(_LISTS["file_ext"])
NOT_NAMES = frozenset(_LISTS["not_names"])
SCENE_OPENERS = frozenset(_LISTS["scene_openers"])
NOUN_PHRASE_NEXT = frozenset(_LISTS["noun_phrase_next"])
OBJECT_OPENERS = frozenset(_LISTS["object_openers"])
NOT_INSTRUCTIONS = frozenset(_LISTS["not_instructions"])
FINITE = frozenset(_LISTS["finite"])
CLAUSE_OPENERS = frozenset(_LISTS["clause_openers"])
PASSIVE_NEXT = frozenset(_LISTS["passive_next"])
MODAL_VERBS = frozenset(_LISTS["modal_verbs"])
AUXILIARY_VERBS = frozenset(_LISTS["auxiliary_verbs"])
RULE_MODALS = frozenset(_LISTS["rule_modals"])
AFTER_VERB = frozenset(_LISTS["after_verb"])
PURPOSE_PARTICIPLES = frozenset(_LISTS["purpose_participles"])
DOCSTRING_OPENERS = frozenset(_LISTS["docstring_openers"])
DEICTIC = frozenset(_LISTS["deictic"])
CENTRAL_PARTICIPLES = frozenset(_LISTS["central_participles"])
CENTRAL_VERBS = frozenset(_LISTS["central_verbs"])
