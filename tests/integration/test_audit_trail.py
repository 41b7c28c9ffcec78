"""The engine's reading of a scope's audit trail for the admin pages, on both backends: events as ids,
kinds, actors, times and counts (never a text), paged newest first; and the facts learned and forgotten
per UTC day, from the same events."""

from __future__ import annotations

from datetime import timedelta

from bot.memory.models import NewFact, Origin, iso, utcnow
from bot.memory.service import MemoryService

SCOPE = "guild:100000000000000001"


def fact(user: str, text: str, message: str) -> NewFact:
    return NewFact(SCOPE, user, user, text, [message], origins={message: Origin("200000000000000001")})


async def test_the_audit_trail_holds_ids_counts_and_actors_never_texts(service: MemoryService) -> None:
    await service.import_facts(
        [
            fact("7", "ana keeps bees", "300000000000000001"),
            fact("8", "bob plays the oboe", "300000000000000002"),
        ]
    )
    [bees, oboe] = [f.id for f in await service.export_facts(SCOPE, None)]
    assert await service.forget(SCOPE, "8", [oboe], actor="9") == 1
    events = await service.audit(SCOPE)
    assert [(e.kind, e.fact_id, e.user_id) for e in events] == [
        ("forgotten", None, "8"),
        ("added", bees, "7"),
    ]
    forgot = events[0]
    assert forgot.actor == "9" and forgot.counts == {"count": 1} and forgot.at.startswith(iso(utcnow())[:10])
    assert all("bees" not in repr(e) and "oboe" not in repr(e) for e in events)
    assert [e.id for e in await service.audit(SCOPE, limit=1, offset=1)] == [events[1].id]
    assert await service.audit("guild:100000000000000002") == []


async def test_facts_learned_and_forgotten_are_counted_per_day(service: MemoryService) -> None:
    await service.import_facts([fact("7", f"ana keeps hive {n}", f"30000000000000001{n}") for n in range(3)])
    first = (await service.export_facts(SCOPE, "7"))[0].id
    await service.forget(SCOPE, "7", [first], actor="7")
    today = iso(utcnow())[:10]
    since = iso(utcnow() - timedelta(days=30))
    assert await service.facts_per_day(SCOPE, since) == {today: {"learned": 2, "forgotten": 1}}
    assert await service.facts_per_day(SCOPE, iso(utcnow() + timedelta(days=1))) == {}
