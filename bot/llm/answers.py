"""Reading what a model answered, the same way whichever provider answered it.

JSON answers are read leniently (a fence or a sentence around the JSON, a bare list for a one-list
schema) and then checked against their schema: an answer off the schema is `OffSchemaAnswer` (a reply to
this input), any other unusable answer `MalformedAnswer` (worth another try). Embeddings must be
directions (no NaN, not all zero) and are normalised to unit length, as cosine search assumes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import pydantic

T = TypeVar("T", bound=pydantic.BaseModel)

_FENCED = re.compile(r"```[A-Za-z]*\s*(.*?)\s*```", re.S)


class MalformedAnswer(Exception):
    """The model answered 200 but not with what we asked for; worth another try."""


class OffSchemaAnswer(MalformedAnswer):
    """A structured answer that does not fit its schema: a reply to this input, not an outage."""


def read_answer(schema: type[T], answer: str, provider: str) -> T:
    """The answer's JSON validated against `schema`, leniently (see `strip_fences`, `_bare_list_as`)."""
    text = strip_fences(answer)
    try:
        return schema.model_validate_json(text)
    except pydantic.ValidationError as exc:
        wrapped = _bare_list_as(schema, text)
        if wrapped is not None:
            return wrapped
        raise OffSchemaAnswer(describe_invalid(schema, text, exc, provider)) from exc


def describe_invalid(
    schema: type[pydantic.BaseModel], text: str, exc: pydantic.ValidationError, provider: str
) -> str:
    """One line for the logs: invalid JSON (often a cut-off answer) or JSON of the wrong shape."""
    errors = exc.errors()
    first: dict[str, Any] = dict(errors[0]) if errors else {}
    if first.get("type") == "json_invalid":
        return (
            f"{provider} answered with invalid JSON ({first.get('msg', 'invalid')}; {len(text)} characters)"
        )
    where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
    return (
        f"{provider} answered with JSON that does not fit {schema.__name__} "
        f"({where}: {first.get('msg', 'invalid')})"
    )


def strip_fences(text: str) -> str:
    """The JSON in a model's text: as it is, else inside a ``` fence, else from the first { to the last }.

    Models asked for JSON sometimes add a fence or a sentence around it; the schema check comes after.
    """
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or not stripped:
        return stripped
    fenced = _FENCED.search(stripped)
    if fenced:
        return fenced.group(1)
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def _bare_list_as(schema: type[T], text: str) -> T | None:
    """`[...]` read as `{"facts": [...]}` when the schema's one required field is that list (the others
    having defaults); None when it does not fit."""
    fields = [(name, f) for name, f in schema.model_fields.items() if f.is_required()]
    if len(fields) != 1 or not str(fields[0][1].annotation).startswith("list["):
        return None
    try:
        items = json.loads(text)
        return schema.model_validate({fields[0][0]: items}) if isinstance(items, list) else None
    except (ValueError, pydantic.ValidationError):
        return None


def checked_vectors(batch: list[list[float]], expected: int, provider: str) -> list[list[float]]:
    """`batch` when it has one direction per text; MalformedAnswer otherwise (worth another try)."""
    if len(batch) != expected:
        raise MalformedAnswer(f"{provider} returned {len(batch)} embeddings for {expected} texts")
    if any(not all(map(math.isfinite, v)) or not any(v) for v in batch):
        # A NaN or all-zero vector would match nothing (or everything) in cosine search.
        raise MalformedAnswer(f"{provider} returned an embedding that is not a direction (NaN or zero)")
    return batch


def normalised(values: Sequence[float]) -> list[float]:
    """`values` scaled to unit length (cosine search assumes it; truncated vectors are not)."""
    norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0 or not math.isfinite(norm):
        return [float(v) for v in values]
    return [v / norm for v in values]


def plain_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """`schema`'s JSON Schema as a model reads it in its instruction: nested shapes written in place
    (no `$defs` to follow) and no titles. A 1.5B model shown the pydantic form answered with the schema
    itself (`{"$defs": ...}`) on a selection (bench/quality.py, 2026-11-26)."""
    full = schema.model_json_schema()
    defs = full.pop("$defs", {})

    def inline(node: Any, names: bool = False) -> Any:
        """`names`: the keys are field names (under "properties"), one of which may be "title"."""
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v, k == "properties") for k, v in node.items() if names or k != "title"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return dict(inline(full))
