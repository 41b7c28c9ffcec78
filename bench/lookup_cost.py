"""What the model's memory lookup (search_memory) costs: replies that use it, their calls and tokens.

After the cost benchmark's busy run has learned the script's facts, people ask the bot about each other,
through the chat path's own pieces: recall for the XML block, then `answer_with_tools` with the engine's
lookup as the search_memory handler, the real `GeminiClient` against the Gemini stand-in. Per person
three questions: small talk (no lookup), "do you remember <name>'s <pet>?" (a lookup only when the block
does not answer it) and "do you remember anything about <name>?" (a listing, then full texts of the
facts it cut). The stand-in's brain decides as `standins/brain.py` does: it looks up when asked "do you
remember ...?" and the block lacks the question's words, asks for cut texts in full, and answers from
what it found.
"""

from __future__ import annotations

from typing import Any

from bench.script import PEOPLE, PETS, SCOPE
from bench.script import brain as memory_brain
from bot.app import open_memory
from bot.chat.prompts import CHAT_MEMORY_PREAMBLE, SEARCH_MEMORY_TOOL, memory_guide
from bot.chat.tool_rounds import answer_with_tools
from bot.config import DEFAULT_PERSONA, Settings
from bot.llm.gemini import GeminiClient
from bot.memory.lookup import LookupRequest
from bot.memory.model_ports import ChatTurn, ToolCall
from bot.memory.recall import Audience, Participant
from standins.brain import remembered_reply, search_call

FIGURES = ("chat_calls", "prompt_tokens", "output_tokens")


def chat_brain(body: dict[str, Any]) -> str | list[dict[str, Any]]:
    """The bench brain for memory tasks, and a lookup-minded chat model for replies."""
    if not body.get("tools"):
        return memory_brain(body)
    return search_call(body) or remembered_reply(body) or "Nice!"


def questions() -> list[tuple[Participant, Participant, str]]:
    """(asker, subject, question): each person asks about the next one."""
    people = [Participant(uid, name) for uid, name in PEOPLE]
    out = []
    for index, subject in enumerate(people):
        asker = people[index - 1]
        pet = PETS[index % len(PETS)][0]
        out += [
            (asker, subject, f"any plans for the weekend, {subject.name}?"),
            (asker, subject, f"do you remember {subject.name}'s {pet}?"),
            (asker, subject, f"do you remember anything about {subject.name}?"),
        ]
    return out


async def run_replies(settings: Settings) -> dict[str, Any]:
    """Every question answered against the facts in `settings.database_path`; per reply its chat calls
    and tokens, summed for replies with and without a lookup."""
    service = await open_memory(settings)
    await service.start()
    client = service.llm
    assert isinstance(client, GeminiClient)
    totals = {kind: dict.fromkeys(("replies", "rounds", *FIGURES), 0) for kind in ("with_lookup", "without")}
    try:
        for asker, subject, question in questions():
            people = [asker, subject]
            audience = Audience(asker.user_id, lambda key: True)  # the script's channels are all public
            recalled = await service.recall(SCOPE, people, question, audience=audience)
            system = f"{DEFAULT_PERSONA}\n\n{memory_guide('Monday, 1 June 2026', memory_on=True)}"
            if recalled.block:
                system += f"\n\n{CHAT_MEMORY_PREAMBLE}\n{recalled.block}"
            shown = frozenset(recalled.fact_ids)

            async def lookup(
                call: ToolCall,
                people: list[Participant] = people,
                audience: Audience = audience,
                shown: frozenset[int] = shown,
            ) -> dict[str, Any]:
                request = LookupRequest.from_args(call.args)
                return await service.search_memory(SCOPE, people, request, audience=audience, shown=shown)

            rounds: list[int] = []  # calls per lookup round
            before = client.usage.snapshot()["chat"]
            stream = answer_with_tools(
                client,
                system=system,
                turns=[ChatTurn("user", f"{asker.name}: {question}")],
                tools=[SEARCH_MEMORY_TOOL],
                handlers={SEARCH_MEMORY_TOOL.name: lookup},
                on_round=lambda calls, rounds=rounds: rounds.append(len(calls)),
            )
            answer = "".join([piece async for piece in stream if isinstance(piece, str)])
            assert answer, question
            after = client.usage.snapshot()["chat"]
            figures = totals["with_lookup" if rounds else "without"]
            figures["replies"] += 1
            figures["rounds"] += len(rounds)
            figures["chat_calls"] += after["calls"] - before["calls"]
            for key in ("prompt_tokens", "output_tokens"):
                figures[key] += after[key] - before[key]
    finally:
        await service.close(record_usage=False)
    return totals


def report(totals: dict[str, Any]) -> list[list[Any]]:
    """Rows for a table: per kind of reply, how many and what one costs on average."""
    rows = []
    for kind, label in (("without", "replies without a lookup"), ("with_lookup", "replies with a lookup")):
        figures = totals[kind]
        count = figures["replies"] or 1
        rows.append(
            [
                label,
                figures["replies"],
                round(figures["rounds"] / count, 2),
                round(figures["chat_calls"] / count, 2),
                round(figures["prompt_tokens"] / count, 1),
                round(figures["output_tokens"] / count, 1),
            ]
        )
    return rows


HEADERS = [
    "",
    "replies",
    "lookup rounds / reply",
    "chat calls / reply",
    "prompt tokens / reply",
    "output / reply",
]
