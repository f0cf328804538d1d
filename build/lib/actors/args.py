"""Pydantic models of actor keyword arguments: every message is validated before any work."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# A message whose arguments do not validate will not validate on a retry either: actors declare
# ``throws=BAD_MESSAGE`` so Dramatiq fails it at once (the dead-letter middleware keeps it).
BAD_MESSAGE = (ValidationError,)


class KbArgs(BaseModel):
    """Arguments of every per-KB trigger actor."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: int = Field(ge=0)
    knowledge_base_id: str = Field(min_length=1, max_length=64)


class MapArgs(KbArgs):
    """``wiki_map``: one document op."""

    knowledge_id: str = Field(min_length=1, max_length=64)
    op_id: int = Field(ge=1)


class SubmitArgs(KbArgs):
    """``wiki_submit``: a producer app hands over one document."""

    title: str = Field(min_length=1, max_length=2000)
    content: str
    source_uri: str = Field(default="", max_length=2000)


class RetractArgs(KbArgs):
    """``wiki_retract``: a producer app deletes one document."""

    knowledge_id: str = Field(min_length=1, max_length=64)
