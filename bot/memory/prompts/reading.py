"""What every task's answer shares: how a model's answer is read, leniently, whatever model answered.

The schema a model is given stays strict; its answer is read kindly: the field names models commonly use
for the schema's, items that do not fit dropped one by one rather than the whole answer, a sensitivity
flag read on the safe side. And the words every instruction uses for what is sensitive.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

log = logging.getLogger(__name__)

SENSITIVE_CATEGORIES = (
    "health (illnesses, disabilities, medication, mental health), sex life or sexual orientation, "
    "religion or belief, political opinions, racial or ethnic origin, trade-union membership, criminal "
    "record or offences, precise finances (salary, income, debts, balances), and home address or "
    "contact data (phone number, e-mail, exact location)"
)


def renamed(value: Any, names: dict[str, tuple[str, ...]]) -> Any:
    """An answer item with the field names models commonly use read as the schema's ("fact" for
    "text", "id" for "target_fact_id"): the first one present, when the schema's own is missing."""
    if not isinstance(value, dict):
        return value
    value = dict(value)
    for field_name, others in names.items():
        if field_name not in value:
            for other in others:
                if other in value:
                    value[field_name] = value.pop(other)
                    break
    return value


def valid_items(items: Any, model: type[BaseModel]) -> Any:
    """The items that fit `model`: one malformed item must not cost the rest of the answer.

    The schema a model is given stays strict; this is how its answers are read.
    """
    if items is None:
        return []
    if not isinstance(items, list):
        return items  # not a list at all: let validation say so
    kept = []
    for item in items:
        try:
            kept.append(model.model_validate(item))
        except ValidationError as exc:
            log.info(
                "dropped an item of the answer that does not fit %s: %s", model.__name__, exc.errors()[0]
            )
    return kept


def some_fitting(items: Any, model: type[BaseModel], what: str) -> Any:
    """`valid_items`, but a list none of whose items fits is off the schema, not an empty answer."""
    kept = valid_items(items, model)
    if isinstance(items, list) and items and not kept:
        raise ValueError(f"none of its {what} fits the schema")
    return kept


def sensitive_flag(value: Any) -> Any:
    """null means no; any word but a clear no ("false", "no", "0") counts as sensitive, the safe side."""
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "0", "")
    return value


def task_schema(sentence: str) -> ConfigDict:
    """The description a model reads at the top of an answer's JSON schema: the task in one sentence.

    Pydantic would send the class docstring, which is written for engineers (and once told a small
    model about "error objects" and "another wrapping" instead of what to answer).
    """
    return ConfigDict(json_schema_extra={"description": sentence})


class Lenient(BaseModel):
    """Ids may come back as numbers, and empty values as null."""

    model_config = ConfigDict(coerce_numbers_to_str=True)
