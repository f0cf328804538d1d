"""One structured call beside the extraction (a merge decision, page leads): the output-mode ladder
of the extractor, and the answer's JSON envelope or nothing.

The mode starts at the one the extractor remembered for the endpoint and model and moves down the
same ladder (``extractor.MODES``) on a 400; a prompt refused as too long for the model's context
gives no answer (such a call refines the wiki: it must not pause the KB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from wiki.errors import LLMOutputInvalid
from wiki.extract.llm import unknown_fields
from wiki.extract.llm.client import ChatAnswer, ChatClient, ModeRejected
from wiki.extract.llm.extractor import MODES, _parse, _remember, next_mode, remembered_mode

E = TypeVar("E", bound=BaseModel)


@dataclass
class CallStats:
    """One call's tokens and outcome as ``ask`` counts them: ``calls`` 1 once answered, the tokens
    (``estimated_tokens``: of those, counted here for want of a plausible usage), the output
    ``mode`` taken and the ``modes_rejected`` before it; ``invalid`` when no envelope came of it."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: int = 0
    mode: str | None = None
    invalid: bool = False
    modes_rejected: list[str] = field(default_factory=list)


def ask(
    client: ChatClient,
    messages_for: Callable[[bool, bool], list[dict[str, str]]],
    schema: dict[str, Any],
    shape: type[E],
    stats: CallStats,
    *,
    deadline: float | None,
) -> E | None:
    """One completion in the first output mode the endpoint takes, counted in ``stats``; returns
    its ``envelope`` as ``shape``, or None (``stats.invalid``) when the prompt is too long for the
    model's context or the answer is no such envelope.

    ``messages_for(with_schema, fenced)`` builds the prompt for a mode; modes the endpoint refused
    are appended to ``stats.modes_rejected``. Raises ``LLMConfigError`` (a 400 in every mode, or
    401, 402, 403, 404, 422) and ``LLMUnavailable`` (transport retries or ``deadline`` spent)."""
    c = client.config
    mode = remembered_mode(c.base_url, c.model) or MODES[0]
    while True:
        try:
            answer = client.complete(
                messages_for(mode != "json_schema", mode == "fenced"), mode, schema, deadline=deadline
            )
        except ModeRejected as exc:
            if exc.too_long:
                stats.invalid = True
                return None
            mode = next_mode(mode, exc, c, stats.modes_rejected)
            continue
        _remember(c.base_url, c.model, mode)
        break
    stats.mode, stats.calls = mode, 1
    stats.prompt_tokens, stats.completion_tokens = answer.prompt_tokens, answer.completion_tokens
    stats.estimated_tokens = answer.estimated_tokens
    found = envelope(answer, mode, shape)
    stats.invalid = found is None
    return found


def envelope(answer: ChatAnswer, mode: str, shape: type[E]) -> E | None:
    """The answer's JSON object validated as ``shape``; None when the answer was cut, filtered or
    empty, or is not that JSON."""
    if answer.finish_reason != "stop" or not answer.content.strip():
        return None
    try:
        data, _ = _parse(answer.content, mode)
        return shape.model_validate(data)
    except (LLMOutputInvalid, ValidationError):
        return None


def entries(found: BaseModel, values: list, shape: type[E], where: str) -> tuple[list[E], set[str]]:
    """The entries of ``values`` (the list ``where`` of the envelope ``found``) valid as ``shape``, in
    order, and the unknown fields (``unknown_fields.collect``) of the envelope and of those entries."""
    unknown = unknown_fields.collect(found)
    valid: list[E] = []
    for value in values:
        try:
            entry = shape.model_validate(value)
        except ValidationError:
            continue
        unknown |= unknown_fields.collect(entry, f"{where}[]")
        valid.append(entry)
    return valid, unknown
