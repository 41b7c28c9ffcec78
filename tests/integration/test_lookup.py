"""The model's memory lookup (search_memory) in the engine: whom it may name, what it may return, and
how much, over the real store."""

from __future__ import annotations

from typing import Any

from bot.memory.lookup import FULL_TOKEN_BUDGET, LIST_TOKEN_BUDGET, LookupRequest, find_person
from bot.memory.models import NewFact
from bot.memory.recall import Audience, Participant, estimate_tokens
from bot.memory.service import MemoryService
from bot.storage import AsyncStore, Store
from tests.fakes import FakeEmbedder, angled

SCOPE = "dm"
ALICE, BOB, CAROL = Participant("1", "Alice"), Participant("2", "Bob"), Participant("3", "Çarol")
PEOPLE = [ALICE, BOB, CAROL]


async def add(
    store: AsyncStore,
    embedder: FakeEmbedder,
    who: Participant,
    text: str,
    degrees: float,
    *,
    sensitive: bool = False,
) -> int:
    embedder.vectors[text] = angled(degrees)
    fact = NewFact(SCOPE, who.user_id, who.name, text, [], embedding=angled(degrees), sensitive=sensitive)
    [fid] = await store.call(Store.add_facts, [fact])
    return fid


def test_a_person_is_named_by_id_mention_or_name_and_never_guessed() -> None:
    assert find_person(PEOPLE, "2") == BOB and find_person(PEOPLE, "<@!3>") == CAROL
    assert find_person(PEOPLE, "@alice") == ALICE and find_person(PEOPLE, "carol") == CAROL  # accents aside
    assert find_person(PEOPLE, "Bo") == BOB  # the one name it begins
    assert find_person([*PEOPLE, Participant("4", "Bobby")], "Bo") is None  # two: no guess
    assert find_person(PEOPLE, "dave") is None and find_person(PEOPLE, "") is None
    assert LookupRequest.from_args({"person": " Bob ", "ids": "#12, fact-15 and 3"}) == LookupRequest(
        "Bob", "", (12, 15, 3)
    )
    assert LookupRequest.from_args({"person": "Bob", "query": "dogs", "ids": [4, "5"]}).ids == (4, 5)


async def test_a_lookup_answers_under_the_replys_audience_and_only_for_people_present(
    service: MemoryService, embedder: FakeEmbedder
) -> None:
    bees = await add(
        service.store,
        embedder,
        ALICE,
        "Alice keeps bees on her roof in the old town of Porto and sells the honey at the market",
        10,
    )
    salary = await add(service.store, embedder, ALICE, "Alice's salary is 90k", 20, sensitive=True)
    oboe = await add(service.store, embedder, CAROL, "Çarol plays the oboe", 10)
    embedder.vectors["bees salary"] = angled(15)
    to_alice, to_bob = Audience(ALICE.user_id), Audience(BOB.user_id)

    async def search(request: LookupRequest, audience: Audience, **kwargs: Any) -> dict[str, Any]:
        return await service.search_memory(SCOPE, PEOPLE, request, audience=audience, **kwargs)

    mine = await search(LookupRequest("Alice", "bees salary"), to_alice)
    assert sorted(f["id"] for f in mine["facts"]) == [bees, salary]
    assert [f["text"].endswith("…") for f in mine["facts"] if f["id"] == bees] == [True]
    theirs = await search(LookupRequest("Alice", "bees salary"), to_bob)
    assert [f["id"] for f in theirs["facts"]] == [bees]
    # Ids are read only where the same rules allow: the sensitive fact not for bob, carol's never as alice's.
    full = await search(LookupRequest("Alice", ids=(bees, salary, oboe, 999)), to_bob)
    assert full["facts"] == [
        {
            "id": bees,
            "text": "Alice keeps bees on her roof in the old town of Porto and sells the honey at the market",
            "said": full["facts"][0]["said"],
        }
    ]
    # Facts the block already showed are not repeated; the model is told where they are.
    shown = await search(LookupRequest("Alice", "bees salary"), to_bob, shown={bees})
    assert shown["facts"] == [] and "already in the background block" in str(shown["hint"])
    # An opted-out person is as unknown as someone never heard of; someone absent cannot be named.
    await service.set_opt_out(SCOPE, CAROL.user_id, True)
    assert (await search(LookupRequest("Carol"), to_alice))["facts"] == []
    assert (await search(LookupRequest("Carol", ids=(oboe,)), to_alice))["facts"] == []
    assert "not in this conversation" in str((await search(LookupRequest("Dave", "bees"), to_alice))["error"])
    # Forgotten is gone.
    await service.forget(SCOPE, ALICE.user_id, [bees])
    assert (await search(LookupRequest("Alice", ids=(bees,)), to_alice))["facts"] == []


async def test_a_lookup_answer_stays_within_its_token_budget(
    service: MemoryService, embedder: FakeEmbedder
) -> None:
    for i in range(40):
        await add(
            service.store,
            embedder,
            BOB,
            f"Bob collected stamp number {i} from a long-forgotten country far away",
            i,
        )
    listed = await service.search_memory(SCOPE, PEOPLE, LookupRequest("Bob"), audience=Audience(BOB.user_id))
    entries = listed["facts"]
    assert 0 < len(entries) <= 10
    ids = tuple(e["id"] for e in entries)
    full = await service.search_memory(
        SCOPE, PEOPLE, LookupRequest("Bob", ids=ids), audience=Audience(BOB.user_id)
    )
    for answer, budget in ((listed, LIST_TOKEN_BUDGET), (full, FULL_TOKEN_BUDGET)):
        assert sum(estimate_tokens(e["text"]) + 8 for e in answer["facts"]) <= budget
    many = [
        await add(service.store, embedder, BOB, "Bob " + "very " * 60 + "long", 50 + i) for i in range(10)
    ]
    cut = await service.search_memory(
        SCOPE, PEOPLE, LookupRequest("Bob", ids=tuple(many)), audience=Audience(BOB.user_id)
    )
    assert len(cut["facts"]) < 10 and "did not fit" in cut["more"]


async def test_a_general_lookup_lists_the_newest_facts_past_what_the_block_showed(
    service: MemoryService, embedder: FakeEmbedder
) -> None:
    older = [await add(service.store, embedder, BOB, f"Bob visited town number {i}", 80) for i in range(3)]
    newer = [await add(service.store, embedder, BOB, f"Bob sang song number {i}", 80) for i in range(3)]
    debt = await add(service.store, embedder, BOB, "Bob owes money", 80, sensitive=True)  # the newest
    embedder.vectors["everything about Bob"] = angled(0)  # far from all of them: no search finds them
    embedded = len(embedder.calls)
    listed = await service.search_memory(
        SCOPE, PEOPLE, LookupRequest("Bob", "everything about Bob"), audience=Audience(ALICE.user_id)
    )
    assert [f["id"] for f in listed["facts"]] == [*newer[::-1], *older[::-1]]  # not his sensitive one
    assert len(embedder.calls) == embedded  # nothing to search for, nothing embedded
    past = await service.search_memory(
        SCOPE, PEOPLE, LookupRequest("Bob", "anything"), audience=Audience(BOB.user_id), shown=set(newer)
    )
    assert [f["id"] for f in past["facts"]] == [debt, *older[::-1]]
