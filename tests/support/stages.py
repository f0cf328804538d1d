"""Calling a stage function with the fields of a ``Deps`` it names, as the actors do."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_stage(stage: Callable[..., T], deps: Any, *args: Any, **kwargs: Any) -> T:
    """``stage(*args, **kwargs)`` plus every keyword parameter of ``stage`` that is a field of
    ``deps`` (``extractor_name`` from ``deps.extractor``), unless ``kwargs`` gives it."""
    params = inspect.signature(stage).parameters
    fields = {
        name: getattr(deps, name)
        for name in params
        if name not in kwargs and params[name].kind is inspect.Parameter.KEYWORD_ONLY and hasattr(deps, name)
    }
    if "extractor_name" in params and "extractor_name" not in kwargs:
        fields["extractor_name"] = deps.extractor.name
    return stage(*args, **fields, **kwargs)
