"""Gemini calls, embedding requests and tokens per 100 messages: the bot's pipeline against the seed plan's.

A scripted 1,000-message conversation among 8 people in 3 channels (bench/script.py) runs through the
full pipeline: `MemoryService.capture()` -> durable buffer -> size-triggered flushes -> one extraction
call per flush -> one batched embedding request -> one consolidation call per flush for the facts that
have candidates -> one transaction. The real `GeminiClient` talks to the Gemini stand-in, whose
generate_handler (`bench.script.brain`) answers the memory tasks the way a careful model would.

The seed plan's figures come from running its per-message design on the same script against the same
stand-in and brain: one extraction call per message; per extracted fact one embedding request, then up
to three similar facts of that person (the same candidate distance the bot uses) and one decision call
per candidate; a MERGE embeds its merged text (one more request). Both use the bot's prompts, so token
differences come from the shape of the calls alone.

Then the model's memory lookup (search_memory, `bench/lookup_cost.py`): people ask the bot about each
other against what the busy run learned, and the report counts the replies that looked things up, their
lookup rounds, and the chat calls and tokens a reply costs with and without one.

Paces run for the bot: "busy" (every flush is a full 50-message chunk, as in a busy channel) and
simulated ones (a message every 5 or 20 s across the three channels on a simulated clock, so quieter
channels flush when they go quiet, as configured by default). Each pace runs twice: with community
memory (MEMORY_COMMUNITY, the default: the same extraction call also answers the server's community
facts and an episode per channel, and the episodes ride in the flush's one embedding request) and
without it, the people's facts alone, as before community memory.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import lookup_cost
from bench.common import CACHE, DOCS, machine, ratio, table, write_json
from bench.script import CHANNELS, SCOPE, conversation, messages
from bot.app import open_memory
from bot.config import Settings
from bot.llm.gemini import GeminiClient
from bot.memory.consolidate import resolved
from bot.memory.extract import extract_chunk
from bot.memory.model_ports import Purpose
from bot.memory.models import COMMUNITY_ID, BufferedMessage, Decision, NewFact, Operation
from bot.memory.prompts.consolidation import CONSOLIDATE_SYSTEM, ConsolidationResult, consolidation_prompt
from bot.memory.service import MemoryService
from bot.storage import Store
from standins.gemini import GeminiStandIn

DIMENSIONS = 768
SEED_CANDIDATES = 3
GENERATE_PURPOSES = ("extract", "consolidate")
# "busy": every flush a full 50-message chunk; then simulated paces, seconds between messages overall.
# The last pace shows the quiet trigger relaxed (MEMORY_FLUSH_QUIET_SECONDS=600, MAX_AGE=1800).
PACES: tuple[tuple[str, str, float | None, dict[str, Any]], ...] = (
    ("bot_busy", "busy", None, {}),
    ("bot_every_5s", "1 msg/5 s", 5.0, {}),
    ("bot_every_20s", "1 msg/20 s", 20.0, {}),
    (
        "bot_every_20s_quiet600",
        "1 msg/20 s, quiet 600 s",
        20.0,
        {"memory_flush_quiet_seconds": 600, "memory_flush_max_age_seconds": 1800},
    ),
)
OFF = "_no_community"  # the key suffix of a run without community memory (people's facts only)
# Every pace with community memory (the default), then without it (MEMORY_COMMUNITY=false).
BOT_RUNS: tuple[tuple[str, float | None, dict[str, Any]], ...] = (
    *((key, pace, overrides) for key, _, pace, overrides in PACES),
    *((key + OFF, pace, {**overrides, "memory_community": False}) for key, _, pace, overrides in PACES),
)
DESIGNS = (
    *((f"bot, {label}", key) for key, label, _, _ in PACES),
    ("seed plan", "seed"),
)
ROWS = (
    ("generate", "requests", "generate calls"),
    ("extract", "requests", "  extraction calls"),
    ("consolidate", "requests", "  consolidation / decision calls"),
    ("embed", "requests", "embedding requests"),
    ("embed", "texts", "  texts embedded"),
    ("extract", "prompt_tokens", "extraction prompt tokens"),
    ("extract", "output_tokens", "extraction output tokens"),
    ("consolidate", "prompt_tokens", "consolidation prompt tokens"),
    ("consolidate", "output_tokens", "consolidation output tokens"),
    ("embed", "prompt_tokens", "embedding input tokens"),
)
TOKEN_KINDS = ("prompt_tokens", "output_tokens")
BUSY_BUDGET = {"generate": 5.0, "embed": 2.0}  # per 100 messages in a busy channel (issue 21)


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _settings(base_url: str, path: Path, **overrides: Any) -> Settings:
    base = Settings(
        gemini_api_key="bench-key",
        gemini_base_url=base_url,
        database_path=path,
        embedding_dimensions=DIMENSIONS,
        gemini_max_retries=0,
    )
    return replace(base, **overrides)


def _usage(client: GeminiClient, standin: GeminiStandIn) -> dict[str, dict[str, int]]:
    """Requests and tokens per purpose as the stand-in counted them (usageMetadata / its own counters)."""
    snapshot = client.usage.snapshot()
    out: dict[str, dict[str, int]] = {}
    for purpose in GENERATE_PURPOSES:
        c = snapshot[purpose]
        out[purpose] = {
            "requests": c["calls"],
            "prompt_tokens": c["prompt_tokens"],
            "output_tokens": c["output_tokens"],
        }
    embed = standin.counters["embed"]
    out["embed"] = {
        "requests": embed["requests"],
        "prompt_tokens": embed["prompt_tokens"],
        "output_tokens": 0,
        "texts": embed["texts"],
    }
    return out


async def _wait_idle(service: MemoryService, timeout: float = 120.0) -> None:
    """Until everything captured is written and every buffer has been flushed."""
    deadline = time.monotonic() + timeout
    await service.capture_buffer.wait_written()
    while await service.store.call(Store.count_pending) or service.capture_buffer.flushes_running:
        if time.monotonic() > deadline:
            raise TimeoutError("the pipeline did not drain")
        await asyncio.sleep(0.05)


async def run_bot(
    standin: GeminiStandIn,
    script: list[BufferedMessage],
    path: Path,
    *,
    pace: float | None,
    overrides: dict[str, Any],
) -> dict[str, Any]:
    """The whole script through MemoryService; returns usage per purpose and what the store holds."""
    _remove(path)
    standin.reset_counters()
    standin.requests.clear()
    settings = _settings(standin.base_url, path, **overrides)
    service = await open_memory(settings)
    service.share_calls_between(lambda channel_id: True)  # the script's channels are all public
    buffer = service.capture_buffer
    now = [time.time()]
    if pace is not None:  # the scheduler sees a simulated clock: one message every `pace` seconds
        buffer.clock = lambda: now[0]
        buffer.policy = replace(buffer.policy, tick_seconds=0.01)
    await service.start()
    flushes: Counter[str] = Counter()
    original = service.flush_channels

    async def counted(channel_ids: list[str]) -> int:
        flushes["+".join(channel_ids)] += 1
        return await original(channel_ids)

    buffer.flush_fn = counted
    start = now[0]
    for i, message in enumerate(script):
        if pace is not None:
            now[0] = start + pace * i
            await _settle(service)
        service.capture(message, guild_id=SCOPE.split(":")[1])
        if pace is None and i % 10 == 9:
            await asyncio.sleep(0.01)
    if pace is not None:
        now[0] += 3600  # the conversation ends; every buffer goes quiet
    else:  # let the size trigger take every full chunk, then flush what is left (none at 1,000 messages)
        await service.capture_buffer.wait_written()
        while service.capture_buffer.flushes_running or any(
            p.count >= settings.memory_flush_max_messages
            for p in await service.store.call(Store.pending_channels)
        ):
            await asyncio.sleep(0.05)
        await service.flush_now()
    await _wait_idle(service)
    assert isinstance(service.llm, GeminiClient)
    usage = _usage(service.llm, standin)
    stats = await service.store.call(Store.stats)
    events = Counter(e["kind"] for e in await service.store.call(Store.events, SCOPE, None, 100_000))
    community = await service.store.call(Store.list_facts, SCOPE, COMMUNITY_ID, all_statuses=True)
    episodes = await service.list_episodes(SCOPE, limit=100_000) if settings.memory_community else []
    await service.close()
    batch_sizes = Counter(len(r.json["requests"]) for r in standin.of_kind("embed"))
    return {
        "settings": overrides,
        "usage": usage,
        "flushes": dict(flushes),
        "embed_batch_sizes": {str(k): v for k, v in sorted(batch_sizes.items())},
        "facts": stats["facts"],
        "community_facts": dict(Counter(f.status.value for f in community)),
        "episodes": len(episodes),
        "events": dict(events),
    }


async def _settle(service: MemoryService) -> None:
    """Let the writer commit and the scheduler (ticking every 10 ms) start and finish what is due."""
    await service.capture_buffer.wait_written()
    await asyncio.sleep(0.012)
    while service.capture_buffer.flushes_running:
        await asyncio.sleep(0.005)


async def run_seed(standin: GeminiStandIn, script: list[BufferedMessage], path: Path) -> dict[str, Any]:
    """The seed plan's per-message design on the same script, against the same stand-in."""
    _remove(path)
    standin.reset_counters()
    standin.requests.clear()
    settings = _settings(standin.base_url, path)
    client = GeminiClient.from_settings(settings)
    store = Store.open(path, embedding_model=settings.embedding_model, dimensions=DIMENSIONS)
    decisions: Counter[str] = Counter()
    for message in script:
        # one extraction call per message, people's facts only (the seed plan has no community memory)
        facts = (await extract_chunk(client, [message], community=False)).facts
        for fact in facts:
            [fact.embedding] = await client.embed([fact.text], "document")  # one request per fact
            candidates = store.knn(
                fact.scope,
                fact.user_id,
                fact.embedding,
                SEED_CANDIDATES,
                settings.consolidate_candidate_distance,
            )
            chosen = None
            for candidate, _ in candidates:  # one decision call per candidate
                result = await client.generate_json(
                    Purpose.CONSOLIDATE,
                    system=CONSOLIDATE_SYSTEM,
                    prompt=consolidation_prompt(
                        [
                            {
                                "new_fact": 0,
                                "person": fact.user_name,
                                "text": fact.text,
                                "candidates": [
                                    {
                                        "id": candidate.id,
                                        "text": candidate.text,
                                        "recorded_at": candidate.recorded_at[:10],
                                    }
                                ],
                            }
                        ]
                    ),
                    schema=ConsolidationResult,
                )
                decision = result.decisions[0] if result.decisions else None
                if chosen is None and decision is not None and decision.decision != "KEEP":
                    chosen = decision
            store.apply_flush(
                [resolved(await _seed_operation(client, fact, chosen))], consumed_message_ids=[]
            )
            decisions[chosen.decision if chosen else "ADD" if not candidates else "KEEP"] += 1
    usage = _usage(client, standin)
    stats = store.stats()
    store.close()
    await client.aclose()
    return {"usage": usage, "facts": stats["facts"], "decisions": dict(decisions)}


async def _seed_operation(client: GeminiClient, fact: NewFact, chosen: Any) -> Operation:
    if chosen is None:
        return Operation(Decision.KEEP, fact)
    if chosen.decision == "MERGE":
        [vector] = await client.embed([chosen.merged_text], "document")
        return Operation(Decision.MERGE, fact, chosen.target_fact_id, chosen.merged_text, vector)
    return Operation(Decision(chosen.decision), fact, chosen.target_fact_id)


def per_100(usage: dict[str, dict[str, int]], messages_count: int) -> dict[str, dict[str, float]]:
    scale = 100 / messages_count
    out = {
        purpose: {k: round(v * scale, 2) for k, v in figures.items()} for purpose, figures in usage.items()
    }
    out["generate"] = {
        key: round(sum(usage[p][key] for p in GENERATE_PURPOSES) * scale, 2)
        for key in ("requests", "prompt_tokens", "output_tokens")
    }
    return out


def _rows(data: list[dict[str, Any]]) -> list[list[Any]]:
    """ROWS and the tokens' total for each design's per-100 figures."""
    rows = [[label, *(d[purpose].get(key, 0) for d in data)] for purpose, key, label in ROWS]
    sums = [sum(d[p][k] for p in ("extract", "consolidate", "embed") for k in TOKEN_KINDS) for d in data]
    return [*rows, ["all tokens (prompt + output)", *sums]]


def report(results: dict[str, Any]) -> None:
    data = [results[key]["per_100"] for _, key in DESIGNS]
    rows = [[*row, ratio(row[-1], row[1])] for row in _rows(data)]
    print(f"\nPer 100 messages ({results['messages']:,} scripted messages, 8 people, 3 channels)")
    print("bot: with community memory (MEMORY_COMMUNITY, the default)")
    print(table(["", *(label for label, _ in DESIGNS), "seed / bot busy"], rows))
    print("\nCommunity memory (community facts + an episode per channel) against people's facts only")
    keys = [k for key, _, _, _ in PACES for k in (key + OFF, key)]
    headers = [f"{label}, {state}" for _, label, _, _ in PACES for state in ("off", "on")]
    print(table(["", *headers], _rows([results[k]["per_100"] for k in keys])))
    busy = results["bot_busy"]["per_100"]
    print(
        f"busy channel with community memory: {busy['generate']['requests']} generate calls "
        f"(budget {BUSY_BUDGET['generate']}), {busy['embed']['requests']} embedding requests "
        f"(budget {BUSY_BUDGET['embed']}) per 100 messages"
    )
    print("\nReplies about people, after the busy run (search_memory: at most 2 lookup rounds a reply)")
    print(table(lookup_cost.HEADERS, lookup_cost.report(results["lookups"])))


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    designs = [("bot, busy, no community memory", "bot_busy" + OFF), *DESIGNS]
    purposes = [("extract", "extraction"), ("consolidate", "consolidation"), ("embed", "embedding requests")]
    fig, ax = plt.subplots(figsize=(10.5, 4.6))
    width = 0.13
    for i, (label, key) in enumerate(designs):
        values = [results[key]["per_100"][p]["requests"] for p, _ in purposes]
        offset = (i - (len(designs) - 1) / 2) * width
        bars = ax.bar([x + offset for x in range(len(purposes))], values, width, label=label)
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(range(len(purposes)), [name for _, name in purposes])
    ax.set_ylabel("requests per 100 messages")
    ax.set_yscale("log")
    ax.set_title("Gemini requests per 100 messages, by purpose (bot: with community memory)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def main_async(total: int) -> dict[str, Any]:
    lines = conversation(total)
    workdir = CACHE / "cost"
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "messages": total,
        "channels": {c: sum(line.channel_id == c for line in lines) for c in CHANNELS},
        "self_statements": Counter(line.statement for line in lines if line.statement),
    }
    async with GeminiStandIn() as standin:
        from bench.script import brain

        standin.generate_handler = brain
        for key, pace, overrides in BOT_RUNS:
            print(f"running the bot's pipeline ({key}) ...", flush=True)
            script = list(messages(lines))
            results[key] = await run_bot(
                standin, script, workdir / f"{key}.sqlite3", pace=pace, overrides=overrides
            )
        print("asking the bot about people (memory lookups) ...", flush=True)
        standin.generate_handler = lookup_cost.chat_brain
        results["lookups"] = await lookup_cost.run_replies(
            _settings(standin.base_url, workdir / "bot_busy.sqlite3")
        )
        standin.generate_handler = brain
        print("running the seed plan's per-message design ...", flush=True)
        results["seed"] = await run_seed(standin, list(messages(lines)), workdir / "seed.sqlite3")
    for key in [*(k for k, _, _ in BOT_RUNS), "seed"]:
        results[key]["per_100"] = per_100(results[key]["usage"], total)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 200-message script")
    parser.add_argument("--messages", type=int, default=1000)
    args = parser.parse_args(argv)
    total = 200 if args.quick else args.messages
    results = asyncio.run(main_async(total))
    report(results)
    for key, _, _ in BOT_RUNS:
        r = results[key]
        print(
            f"{key}: flushes {r['flushes']}, embedding batch sizes {r['embed_batch_sizes']}, facts {r['facts']}, "
            f"community facts {r['community_facts']}, episodes {r['episodes']}"
        )
    print(f"seed: facts {results['seed']['facts']}, decisions {results['seed']['decisions']}")
    data = {"benchmark": "cost", "machine": machine(), **results}
    print(f"\nwrote {write_json('cost', data, partial=args.quick)}")
    if not args.quick:
        plot(results, DOCS / "cost.png")
        print(f"wrote {DOCS / 'cost.png'}")


if __name__ == "__main__":
    main()
