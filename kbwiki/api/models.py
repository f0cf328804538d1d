"""Shapes only the read API answers: its errors. Everything else is ``kbwiki.reader``'s."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorBody(BaseModel):
    """What went wrong: ``code`` a stable word (``not_found``, ``bad_input``, ``unauthorized``,
    ``method_not_allowed``, ``unavailable``, ``internal``), ``message`` one line for a person."""

    code: str
    message: str


class ErrorOut(BaseModel):
    """Every error answer of the read API: ``{"error": {"code": ..., "message": ...}}``."""

    error: ErrorBody
