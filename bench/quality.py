"""Memory quality with a real model in the loop: what the pipeline learns from a chat with ground truth.

    python -m bench.quality --local          # starts bench.local_model (Qwen2.5-Coder-1.5B + MiniLM)
    GEMINI_BASE_URL=http://127.0.0.1:8765 GEMINI_API_KEY=x python -m bench.quality
    GEMINI_API_KEY=... python -m bench.quality          # real Gemini (no base URL)

Two parts, both through the bot's own code and any Gemini-compatible endpoint:

1. **The chat** (`bench/quality_script.py`): 150 messages of 5 people in one channel, captured with
   `MemoryService.capture()` into a temporary SQLite database and flushed every 50 messages (a busy
   channel: one extraction call per flush, one embedding request, one consolidation call when facts have
   candidates, one transaction). Scored against the script's annotations:
   - self-statement recall: expected self-statements (35) for which extraction proposed a fact of the
     speaker that matches the statement's keywords;
   - precision: proposed facts (after the bot's own validation, `accept_facts`) that match one of the
     speaker's statements, over all proposed facts;
   - wrong-person facts: proposed facts that match another person's statement, gossip or the bot's
     claims (a fact about X that X never said);
   - traps: facts from questions, moods, hypotheticals, the secret;
   - changes: 16 expected outcomes (6 INVALIDATE, 4 MERGE, 4 DUPLICATE, 2 KEEP), judged on the final
     memory: INVALIDATE/MERGE right when the new fact is active and no active fact still says only the
     old one; DUPLICATE right when exactly one active fact says it; KEEP when both are active.
2. **Perfect inputs** (`PERFECT_CASES`): known facts are stored with their embeddings, then new facts go
   straight to `Consolidator.run` (the real triage by distance + the decision call), in groups of 5 as
   a flush would send them. A decision is right when it is the expected one with the expected target
   (ADD counts as KEEP).

Per generate call: seconds (wall clock at the client) and tokens (the answer's usageMetadata); per 100
messages: generate calls and embedding requests. Writes bench/results/quality.json
(`quality.partial.json` for --quick, which runs the first two phases: 100 messages, 2 flushes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from bench.common import ROOT, machine, table, write_json
from bench.quality_script import (
    CHANNEL,
    PEOPLE,
    PERFECT_CASES,
    PHASE,
    PHASES,
    SCOPE,
    Case,
    Truth,
    fold,
    matches,
    messages,
    script,
)
from bot.app import open_memory
from bot.config import Settings
from bot.llm.gemini import GeminiClient
from bot.memory.consolidate import Consolidator, cosine_distance
from bot.memory.models import AppliedChange, Fact, NewFact
from bot.memory.ports import Purpose
from bot.storage import AsyncStore, Store

DECIDE_GROUP = 5
FIRST_PERSON = re.compile(r"(?:^|\s)(?:i|i'm|i've|my|me)\b")
SECRET_KINDS = ("secret",)
WRONG_PERSON_KINDS = ("gossip", "bot")


# ---- the endpoint -----------------------------------------------------------------------------------------


class LocalServer:
    """`python -m bench.local_model serve` in a child process; `base_url` once it listens."""

    def __init__(self, extra: list[str]) -> None:
        self.extra = extra
        self.base_url = ""
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> LocalServer:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.local_model", "serve", *self.extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("listening on "):
                self.base_url = line.split()[-1]
                return self
        raise RuntimeError("bench.local_model did not start (see its output above)")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


OVERRIDES: dict[str, Any] = {}  # --set NAME=VALUE: Settings fields changed for a run


def parse_override(text: str) -> tuple[str, Any]:
    """ "consolidate_candidate_distance=0.5" -> the field and its value in the field's type."""
    name, _, raw = text.partition("=")
    field = next((f for f in fields(Settings) if f.name == name.strip().lower()), None)
    if field is None or not raw:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=VALUE with NAME a Settings field")
    kind = {"float": float, "int": int}.get(str(field.type), str)
    return field.name, kind(raw)


def settings_for(base_url: str, path: Path, timeout: float) -> Settings:
    """The bot's defaults, except the endpoint, a generous deadline and a schedule that only we drive."""
    key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or "local"
    return replace(
        Settings(),
        gemini_api_key=key,
        gemini_base_url=base_url,
        database_path=path,
        gemini_timeout_seconds=timeout,
        gemini_max_retries=2,
        memory_flush_quiet_seconds=86_400,
        memory_flush_max_age_seconds=86_400,
        # A flush ends well inside its lease (80%); a local model's extraction takes minutes, so the
        # default 300 s lease cut it off at 240 s.
        memory_flush_claim_seconds=max(timeout * 3, 3_600.0) if timeout else 86_400.0,
        **OVERRIDES,
    )


class Recorder:
    """Wraps `GeminiClient.generate_json`: seconds, tokens (usageMetadata deltas) and the answer per call."""

    def __init__(self, client: GeminiClient) -> None:
        self.client = client
        self.calls: list[dict[str, Any]] = []
        original = client.generate_json

        async def generate_json(purpose: Purpose, **kwargs: Any) -> Any:
            before = client.usage.snapshot()[purpose.value]
            started = time.perf_counter()
            record: dict[str, Any] = {"purpose": purpose.value}
            try:
                result = await original(purpose, **kwargs)
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                after = client.usage.snapshot()[purpose.value]
                record["seconds"] = round(time.perf_counter() - started, 3)
                record["prompt_tokens"] = after["prompt_tokens"] - before["prompt_tokens"]
                record["output_tokens"] = after["output_tokens"] - before["output_tokens"]
                record["attempts"] = after["calls"] - before["calls"]
                self.calls.append(record)
            record["answer"] = result.model_dump()
            return result

        client.generate_json = generate_json  # type: ignore[method-assign]


# ---- part 1: the chat -------------------------------------------------------------------------------------


async def run_chat(base_url: str, phases: int, timeout: float, workdir: Path) -> dict[str, Any]:
    lines = script(phases)
    batch = messages(lines)
    settings = settings_for(base_url, workdir / "chat.sqlite3", timeout)
    service = await open_memory(settings)
    assert isinstance(service.llm, GeminiClient)
    recorder = Recorder(service.llm)
    proposed: list[dict[str, Any]] = []
    applied: list[AppliedChange] = []
    original_run = service.consolidator.run

    async def run(facts: list[NewFact], **kwargs: Any) -> list[AppliedChange]:
        proposed.extend(
            {"user_id": f.user_id, "person": f.user_name, "text": f.text, "sources": f.source_message_ids}
            for f in facts
        )
        changes = await original_run(facts, **kwargs)
        applied.extend(changes)
        return changes

    service.consolidator.run = run  # type: ignore[method-assign]
    await service.start()
    flushes: list[dict[str, Any]] = []
    for start in range(0, len(batch), PHASE):
        for message in batch[start : start + PHASE]:
            service.capture(message, guild_id=SCOPE.split(":")[1])
        await service.capture_buffer.wait_written()
        began = time.perf_counter()
        calls_before = len(recorder.calls)
        error = None
        try:
            await service.flush_now(CHANNEL)
        except Exception as exc:  # the messages stay buffered; the run goes on and says so
            error = f"{type(exc).__name__}: {exc}"
        flushes.append(
            {
                "messages": f"{start}-{start + PHASE - 1}",
                "seconds": round(time.perf_counter() - began, 2),
                "generate_calls": len(recorder.calls) - calls_before,
                "error": error,
            }
        )
        print(
            f"  flush of messages {start}-{start + PHASE - 1}: {flushes[-1]['seconds']} s"
            + (f", {error}" if error else ""),
            flush=True,
        )
    facts: dict[str, list[Fact]] = {}
    for uid in {m.author_id for m in batch if not m.is_bot}:
        facts[uid] = await service.store.call(Store.list_facts, SCOPE, uid, all_statuses=True)
    usage = service.llm.usage.snapshot()
    pending = await service.store.call(Store.count_pending)
    await service.close()
    raw = [
        {"user_id": str(f.get("user_id")), "text": f.get("text", "")}
        for call in recorder.calls
        if call["purpose"] == "extract" and "answer" in call
        for f in call["answer"].get("facts", [])
    ]
    return {
        "lines": lines,
        "messages": len(batch),
        "flushes": flushes,
        "calls": recorder.calls,
        "usage": usage,
        "raw_proposals": raw,
        "proposed": proposed,
        "applied": [c.decision.value for c in applied],
        "final": {
            uid: [
                {"id": f.id, "text": f.text, "status": f.status.value, "superseded_by": f.superseded_by}
                for f in sorted(fs, key=lambda f: f.id)
            ]
            for uid, fs in facts.items()
        },
        "pending_after": pending,
    }


def classify(person: str, text: str, truth: Truth) -> tuple[str, list[str]]:
    """What a proposed fact of `person` is: correct / wrong_person / a trap kind / unmatched."""
    own = [
        fid for fid, (who, note) in truth.statements.items() if who == person and matches(text, note.keywords)
    ]
    if own:
        # "my favourite food is pho, I'm over pierogi" says the new statement, not the old one again
        replaced = truth.replaced()
        return "correct", [fid for fid in own if replaced.get(fid) not in own]
    others = [
        fid for fid, (who, note) in truth.statements.items() if who != person and matches(text, note.keywords)
    ]
    if others:
        return "wrong_person", others
    for speaker, trap in truth.traps:
        if matches(text, trap.keywords):
            kind = "wrong_person" if trap.kind in WRONG_PERSON_KINDS else trap.kind
            return kind, [f"{trap.kind}:{speaker}"]
    return "unmatched", []


def score_chat(run: dict[str, Any]) -> dict[str, Any]:
    truth = Truth.of(run["lines"])
    names = {m["user_id"]: m["person"] for m in run["proposed"]}
    proposals = []
    for p in run["proposed"]:
        kind, ids = classify(p["person"], p["text"], truth)
        proposals.append({**p, "class": kind, "matched": ids})
    learned = {fid for p in proposals if p["class"] == "correct" for fid in p["matched"]}
    statements = list(truth.statements)
    classes = Counter(p["class"] for p in proposals)
    total = len(proposals)

    raw_classes: Counter[str] = Counter()
    for r in run["raw_proposals"]:
        person = PEOPLE.get(r["user_id"]) or names.get(r["user_id"])
        raw_classes["unknown_user" if person is None else classify(person, r["text"], truth)[0]] += 1

    # the final memory
    active: dict[str, list[str]] = {
        PEOPLE[uid]: [f["text"] for f in fs if f["status"] == "active"] for uid, fs in run["final"].items()
    }

    def says(person: str, fid: str, unless: str | None = None) -> list[str]:
        """Active facts of `person` matching statement `fid` (and not also the newer statement `unless`)."""
        keys = truth.statements[fid][1].keywords
        newer = truth.statements[unless][1].keywords if unless else None
        return [t for t in active.get(person, []) if matches(t, keys) and not (newer and matches(t, newer))]

    replaced = truth.replaced()
    changes = []
    for e in truth.expectations():
        person, old, new = e["person"], e["old"], e["new"]
        if e["kind"] in ("INVALIDATE", "MERGE"):  # the old fact must have been learned to be replaced
            right = old in learned and bool(says(person, new)) and not says(person, old, unless=new)
        elif e["kind"] == "DUPLICATE":
            right = len(says(person, old)) == 1
        else:
            right = bool(says(person, old)) and bool(says(person, new))
        both_learned = old in learned and new in learned
        changes.append({**e, "right": right, "both_extracted": both_learned})
    expected_active = [fid for fid in statements if fid not in replaced]
    kept = [fid for fid in expected_active if says(truth.statements[fid][0], fid)]
    stale = [old for old, new in replaced.items() if says(truth.statements[old][0], old, unless=new)]
    active_count = sum(len(v) for v in active.values())
    active_correct = sum(
        1 for person, texts in active.items() for t in texts if classify(person, t, truth)[0] == "correct"
    )
    by_kind: dict[str, dict[str, int]] = {}
    for c in changes:
        k = by_kind.setdefault(c["kind"], {"expected": 0, "right": 0, "both_extracted": 0})
        k["expected"] += 1
        k["right"] += c["right"]
        k["both_extracted"] += c["both_extracted"]
    return {
        "self_statements": len(statements),
        "learned": sorted(learned),
        "missed": sorted(set(statements) - learned),
        "recall": round(len(learned) / len(statements), 4) if statements else 0.0,
        "proposed": total,
        "classes": dict(classes),
        # the prompt asks for the third person, starting with the speaker's name
        "first_person": sum(bool(FIRST_PERSON.search(fold(p["text"]))) for p in proposals),
        "without_name": sum(fold(p["person"]) not in fold(p["text"]) for p in proposals),
        "precision": round(classes["correct"] / total, 4) if total else 0.0,
        "wrong_person": classes["wrong_person"],
        "wrong_person_rate": round(classes["wrong_person"] / total, 4) if total else 0.0,
        "raw_proposals": len(run["raw_proposals"]),
        "raw_classes": dict(raw_classes),
        "refused_by_validation": len(run["raw_proposals"]) - total,
        "proposals": proposals,
        "changes": changes,
        "changes_by_kind": by_kind,
        "changes_right": sum(c["right"] for c in changes),
        "changes_expected": len(changes),
        "decisions_applied": dict(Counter(run["applied"])),
        "final_active": active_count,
        "final_active_correct": active_correct,
        "final_expected_active": len(expected_active),
        "final_expected_active_present": len(kept),
        "final_stale": stale,
        "final_replaced": len(replaced),
        "final_active_texts": active,
    }


# ---- part 2: consolidation on perfect inputs -----------------------------------------------------------------


async def run_perfect(
    base_url: str, timeout: float, workdir: Path, cases: tuple[Case, ...]
) -> dict[str, Any]:
    settings = settings_for(base_url, workdir / "perfect.sqlite3", timeout)
    store = await AsyncStore.open(
        settings.database_path,
        embedding_model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
    )
    client = GeminiClient.from_settings(settings)
    recorder = Recorder(client)
    consolidator = Consolidator(
        store,
        client,
        client,
        candidate_distance=settings.consolidate_candidate_distance,
        duplicate_distance=settings.consolidate_duplicate_distance,
    )
    known_texts = [(i, j, t) for i, case in enumerate(cases) for j, t in enumerate(case.known)]
    vectors = await client.embed([t for _, _, t in known_texts], "document")
    known = [
        NewFact(SCOPE, str(8000 + i), cases[i].name, t, [], embedding=v)
        for (i, _, t), v in zip(known_texts, vectors, strict=True)
    ]
    ids = await store.call(Store.add_facts, known)
    known_ids: dict[tuple[int, int], int] = {
        (i, j): fid for (i, j, _), fid in zip(known_texts, ids, strict=True)
    }
    known_vectors = {(i, j): v for (i, j, _), v in zip(known_texts, vectors, strict=True)}
    results = []
    for start in range(0, len(cases), DECIDE_GROUP):
        group = list(range(start, min(start + DECIDE_GROUP, len(cases))))
        new = [NewFact(SCOPE, str(8000 + i), cases[i].name, cases[i].new, [f"m{i}"]) for i in group]
        changes = await consolidator.run(new)
        by_user = {c.user_id: c for c in changes}
        for i, fact in zip(group, new, strict=True):
            case = cases[i]
            change = by_user.get(str(8000 + i))
            got = change.decision.value if change else "none"
            target = None
            if change is not None and change.target_id is not None:
                target = next(
                    (j for (ci, j), fid in known_ids.items() if ci == i and fid == change.target_id), -1
                )
            expected_target = case.target
            right = (case.expected == "KEEP" and got in ("KEEP", "ADD")) or (
                got == case.expected and target == expected_target
            )
            distances = [
                round(cosine_distance(fact.embedding or [], known_vectors[(i, j)]), 3)
                for j in range(len(case.known))
            ]
            # the triage: nothing within the candidate distance is ADD, a near-identical fact DUPLICATE
            asked = (
                settings.consolidate_duplicate_distance
                < min(distances)
                <= settings.consolidate_candidate_distance
            )
            results.append(
                {
                    "new": case.new,
                    "known": list(case.known),
                    "expected": case.expected,
                    "expected_target": expected_target,
                    "got": got,
                    "target": target,
                    "right": right,
                    "distances": distances,
                    "asked_model": asked,
                }
            )
    await client.aclose()
    await store.close()
    return {"cases": results, "calls": recorder.calls, "usage": client.usage.snapshot()}


def score_perfect(run: dict[str, Any]) -> dict[str, Any]:
    cases = run["cases"]
    confusion: dict[str, Counter[str]] = {}
    for c in cases:
        confusion.setdefault(c["expected"], Counter())[c["got"]] += 1
    asked = [c for c in cases if c["asked_model"]]
    return {
        "cases": len(cases),
        "right": sum(c["right"] for c in cases),
        "right_rate": round(sum(c["right"] for c in cases) / len(cases), 4) if cases else 0.0,
        "asked_model": len(asked),
        "right_when_asked": sum(c["right"] for c in asked),
        "decided": dict(Counter(c["got"] for c in cases)),
        "confusion": {k: dict(v) for k, v in confusion.items()},
    }


# ---- calls ------------------------------------------------------------------------------------------------


def call_stats(calls: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for purpose in ("extract", "consolidate"):
        mine = [c for c in calls if c["purpose"] == purpose]
        if not mine:
            continue
        seconds = [c["seconds"] for c in mine]
        out[purpose] = {
            "calls": len(mine),
            "errors": sum("error" in c for c in mine),
            "seconds_p50": round(statistics.median(seconds), 2),
            "seconds_mean": round(statistics.fmean(seconds), 2),
            "seconds_max": round(max(seconds), 2),
            "prompt_tokens_mean": round(statistics.fmean(c["prompt_tokens"] for c in mine), 1),
            "output_tokens_mean": round(statistics.fmean(c["output_tokens"] for c in mine), 1),
            "output_tokens_per_second": round(
                sum(c["output_tokens"] for c in mine) / max(sum(seconds), 1e-9), 2
            ),
        }
    return out


def per_100(usage: dict[str, dict[str, int]], messages_count: int) -> dict[str, float]:
    scale = 100 / messages_count
    return {
        "generate_calls": round((usage["extract"]["calls"] + usage["consolidate"]["calls"]) * scale, 2),
        "extraction_calls": round(usage["extract"]["calls"] * scale, 2),
        "consolidation_calls": round(usage["consolidate"]["calls"] * scale, 2),
        "embedding_requests": round(usage["embed"]["calls"] * scale, 2),
    }


# ---- report -------------------------------------------------------------------------------------------------


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def report(results: dict[str, Any]) -> None:
    chat = results.get("chat")
    if chat:
        s = chat["score"]
        c = s["classes"]
        print(
            f"\nChat: {chat['messages']} messages, 5 people, {len(chat['flushes'])} flushes ({results['endpoint']})"
        )
        print(
            table(
                ["", "figure", "of", "rate"],
                [
                    [
                        "self-statements learned (recall)",
                        len(s["learned"]),
                        s["self_statements"],
                        pct(len(s["learned"]), s["self_statements"]),
                    ],
                    [
                        "proposed facts that are right (precision)",
                        c.get("correct", 0),
                        s["proposed"],
                        pct(c.get("correct", 0), s["proposed"]),
                    ],
                    [
                        "wrong-person facts",
                        s["wrong_person"],
                        s["proposed"],
                        pct(s["wrong_person"], s["proposed"]),
                    ],
                    [
                        "facts from questions / moods / hypotheticals",
                        sum(c.get(k, 0) for k in ("question", "mood", "hypothetical")),
                        s["proposed"],
                        "",
                    ],
                    ["facts holding the secret", c.get("secret", 0), s["proposed"], ""],
                    ["facts matching nothing expected", c.get("unmatched", 0), s["proposed"], ""],
                    [
                        "model's facts refused by the bot's validation",
                        s["refused_by_validation"],
                        s["raw_proposals"],
                        "",
                    ],
                    [
                        "expected changes right",
                        s["changes_right"],
                        s["changes_expected"],
                        pct(s["changes_right"], s["changes_expected"]),
                    ],
                    *[
                        [
                            f"  {kind} (both facts extracted: {k['both_extracted']})",
                            k["right"],
                            k["expected"],
                            "",
                        ]
                        for kind, k in sorted(s["changes_by_kind"].items())
                    ],
                    [
                        "final memory: expected facts active",
                        s["final_expected_active_present"],
                        s["final_expected_active"],
                        pct(s["final_expected_active_present"], s["final_expected_active"]),
                    ],
                    [
                        "final memory: replaced facts still active",
                        len(s["final_stale"]),
                        s["final_replaced"],
                        "",
                    ],
                ],
            )
        )
        print(
            f"proposed facts in the first person: {s.get('first_person', '-')}, "
            f"without the person's name: {s.get('without_name', '-')}"
        )
        print(f"decisions applied: {s['decisions_applied']}")
        print(f"per 100 messages: {chat['per_100']}")
        for f in chat["flushes"]:
            print(
                f"flush {f['messages']}: {f['seconds']} s, {f['generate_calls']} generate calls"
                + (f", error {f['error']}" if f["error"] else "")
            )
    perfect = results.get("perfect")
    if perfect:
        p = perfect["score"]
        print(
            f"\nConsolidation on perfect inputs: {p['right']} of {p['cases']} right ({pct(p['right'], p['cases'])}); "
            f"{p['asked_model']} reached the model ({p['right_when_asked']} right), the rest were settled by distance"
        )
        rows = [
            [
                exp,
                sum(got.values()),
                *(got.get(k, 0) for k in ("ADD", "KEEP", "MERGE", "INVALIDATE", "DUPLICATE")),
            ]
            for exp, got in p["confusion"].items()
        ]
        print(table(["expected \\ got", "cases", "ADD", "KEEP", "MERGE", "INVALIDATE", "DUPLICATE"], rows))
    rows = []
    for part in ("chat", "perfect"):
        for purpose, st in (results.get(part, {}).get("call_stats") or {}).items():
            rows.append(
                [
                    part,
                    purpose,
                    st["calls"],
                    st["errors"],
                    st["seconds_p50"],
                    st["seconds_mean"],
                    st["seconds_max"],
                    st["prompt_tokens_mean"],
                    st["output_tokens_mean"],
                    st["output_tokens_per_second"],
                ]
            )
    if rows:
        print("\nGenerate calls")
        print(
            table(
                [
                    "part",
                    "purpose",
                    "calls",
                    "errors",
                    "s p50",
                    "s mean",
                    "s max",
                    "prompt tok",
                    "output tok",
                    "out tok/s",
                ],
                rows,
            )
        )


def details(results: dict[str, Any]) -> None:
    """The proposals that went wrong and the expected changes, for whoever tunes prompts."""
    chat = results.get("chat")
    if not chat:
        return
    s = chat["score"]
    print("\nProposed facts that are not right:")
    for p in s["proposals"]:
        if p["class"] != "correct":
            print(
                f"  [{p['class']}{' ' + ','.join(p['matched']) if p['matched'] else ''}] {p['person']}: {p['text']}"
            )
    print(f"missed self-statements: {', '.join(s['missed']) or '-'}")
    print(
        "expected changes: "
        + ", ".join(f"{c['kind']} {c['new']}{'' if c['right'] else ' (wrong)'}" for c in s["changes"])
    )


async def main_async(args: argparse.Namespace, base_url: str, label: str) -> dict[str, Any]:
    results: dict[str, Any] = {"endpoint": label}
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        workdir = Path(tmp)
        if not args.perfect_only:
            phases = 2 if args.quick else len(PHASES)
            print(f"chat: {phases * PHASE} messages through the pipeline ...", flush=True)
            started = time.perf_counter()
            run = await run_chat(base_url, phases, args.timeout, workdir)
            run["seconds"] = round(time.perf_counter() - started, 1)
            run["score"] = score_chat(run)
            run["call_stats"] = call_stats(run["calls"])
            run["per_100"] = per_100(run["usage"], run["messages"])
            run["lines"] = [
                {"speaker": line.speaker, "text": line.text, "note": _note(line.note)}
                for line in run["lines"]
            ]
            results["chat"] = run
        if not args.chat_only:
            print(f"consolidation on perfect inputs: {len(PERFECT_CASES)} cases ...", flush=True)
            started = time.perf_counter()
            perfect = await run_perfect(base_url, args.timeout, workdir, PERFECT_CASES)
            perfect["seconds"] = round(time.perf_counter() - started, 1)
            perfect["score"] = score_perfect(perfect)
            perfect["call_stats"] = call_stats(perfect["calls"])
            results["perfect"] = perfect
    return results


def _note(note: Any) -> dict[str, Any] | None:
    if note is None:
        return None
    kind = type(note).__name__
    data = {k: v for k, v in vars(note).items() if v not in ("", None)}
    return {"type": kind, **data}


def rescore(path: Path, show_details: bool) -> None:
    """Score a written result again (after a change to the scoring), from the script it was run on."""
    data = json.loads(path.read_text())
    chat = data.get("chat")
    if chat:
        chat["score"] = score_chat({**chat, "lines": script(chat["messages"] // PHASE)})
    if data.get("perfect"):
        data["perfect"]["score"] = score_perfect(data["perfect"])
    path.write_text(json.dumps(data, indent=2) + "\n")
    report(data)
    if show_details:
        details(data)
    print(f"\nrescored {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 100 messages (2 flushes)")
    parser.add_argument("--local", action="store_true", help="start bench.local_model and use it")
    parser.add_argument("--local-args", default="", help="extra arguments for bench.local_model serve")
    parser.add_argument("--chat-only", action="store_true")
    parser.add_argument("--perfect-only", action="store_true")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per Gemini request (default: 30, none with --local or a base URL)",
    )
    parser.add_argument("--details", action="store_true", help="list the wrong facts and the changes")
    parser.add_argument(
        "--set",
        action="append",
        type=parse_override,
        default=[],
        metavar="NAME=VALUE",
        help="change a Settings field, e.g. --set consolidate_candidate_distance=0.5 (written to the JSON)",
    )
    parser.add_argument("--rescore", type=Path, metavar="JSON", help="score a written result again; no run")
    args = parser.parse_args(argv)
    if args.rescore:
        rescore(args.rescore, args.details)
        return
    OVERRIDES.update(args.set)
    base_url = os.environ.get("GEMINI_BASE_URL", "")
    server: LocalServer | None = None
    if args.local:
        server = LocalServer(args.local_args.split()).__enter__()
        base_url = server.base_url
    elif not base_url and not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
        parser.error(
            "set GEMINI_BASE_URL (a Gemini-compatible endpoint), GEMINI_API_KEY (real Gemini), or pass --local"
        )
    if args.timeout is None:
        args.timeout = 0.0 if base_url else 30.0
    label = ("local: " + _local_label()) if args.local else (base_url or "Gemini API")
    try:
        results = asyncio.run(main_async(args, base_url, label))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    report(results)
    if args.details:
        details(results)
    data = {"benchmark": "quality", "machine": machine(), "settings_changed": OVERRIDES, **results}
    partial = args.quick or args.chat_only or args.perfect_only or bool(OVERRIDES)
    print(f"\nwrote {write_json('quality', data, partial=partial)}")


def _local_label() -> str:
    from bench.local_model import MODEL_NAME

    return f"{MODEL_NAME} + all-MiniLM-L6-v2 (bench.local_model)"


if __name__ == "__main__":
    main()
