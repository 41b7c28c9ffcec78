"""`fact_from` names every field of a fact: a field added to `Fact` and to FACT_COLUMNS but not to it
would silently keep its default on every fact read back (or, since it sets the fields without the
constructor, be missing)."""

from __future__ import annotations

from dataclasses import fields

from bot.memory.models import Fact, FactStatus, Origin, Source
from bot.storage.sql.rows import FACT_COLUMNS, fact_from


def test_every_field_of_a_fact_is_a_column_and_is_read_from_its_row() -> None:
    columns = [c.strip().removeprefix("f.") for c in FACT_COLUMNS.split(",")]
    names = [f.name for f in fields(Fact) if f.name != "sources"]
    assert sorted(columns) == sorted(names)
    row = {name: f"value of {name}" for name in columns} | {
        "id": 7,
        "status": "merged",
        "superseded_by": 9,
        "retrieval_count": 3,
        "sensitive": 1,
        "speaks_for_server": 1,
    }
    sources = (Source("m1", Origin("c1"), False, "u1"),)
    fact = fact_from(row, sources)
    assert fact.sources == sources
    assert fact.status is FactStatus.MERGED and fact.sensitive is True and fact.speaks_for_server is True
    for name in names:
        if name not in ("status", "sensitive", "speaks_for_server"):
            assert getattr(fact, name) == row[name], name
    assert fact == Fact(**{f.name: getattr(fact, f.name) for f in fields(Fact)})
    assert sorted(vars(fact)) == sorted(f.name for f in fields(Fact))
    assert not hasattr(Fact, "__post_init__")  # fact_from does not run the constructor
