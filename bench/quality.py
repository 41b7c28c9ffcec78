"""Memory quality with a real model in the loop: what the pipeline learns from a chat with ground truth.

    python -m bench.quality --local          # starts bench.local_model (Qwen2.5-Coder-1.5B + MiniLM)
    python -m bench.quality --llama-server   # starts llama-cpp-python's server with the same GGUF, and
                                             # MiniLM's /v1/embeddings (bench.local_model --embed-only)
    GEMINI_BASE_URL=http://127.0.0.1:8765 GEMINI_API_KEY=x python -m bench.quality
    GEMINI_API_KEY=... python -m bench.quality          # real Gemini (no base URL)
    MODEL_PROVIDER=openai OPENAI_BASE_URL=... python -m bench.quality   # any provider, set as for the bot
    python -m bench.quality --llama-server --script b   # any of these on script b: another chat

Two parts, both through the bot's own code and model clients (`app.open_models`), on any provider the
bot takes; the model settings (MODEL_PROVIDER, OPENAI_*, EMBEDDING_*, GEMINI_*, CHAT_MODEL, MEMORY_MODEL)
come from the environment as the bot reads them, everything else is the bot's defaults:

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

`--script b` runs both parts on `bench/quality_script_b.py` instead: another chat (150 messages of 6
people, 42 self-statements, 19 expected changes, traps that include jokes and talk about the talk) and
its own perfect inputs, written apart from the bot's rules so that they are measured on a chat they were
not tuned on. Its result files carry `_b` (quality_b.json, quality_llama_server_b.partial.json, ...) and
say `"script": "b"`, which `--rescore` reads; the figures above are script a's.

Per generate call: seconds (wall clock at the client) and tokens (the answer's usage); per 100
messages: generate calls and embedding requests. Writes bench/results/quality.json
(`quality_llama_server.json` with --llama-server; `.partial.json` for --quick, which runs the first two
phases: 100 messages, 2 flushes). `--beside A.json B.json` prints two written results side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import quality_script
from bench.common import CACHE, ROOT, machine, table, write_json
from bench.quality_script import Case, Truth, fold, matches
from bot.app import Models, extraction_mode, open_memory, open_models, open_store
from bot.config import Settings, load_settings
from bot.memory.consolidate import Consolidator, cosine_distance
from bot.memory.model_ports import Purpose
from bot.memory.models import COMMUNITY_NAME, AppliedChange, Fact, NewFact
from bot.storage import Store

DECIDE_GROUP = 5
SCRIPTS = {"a": "bench.quality_script", "b": "bench.quality_script_b"}
# The chat, its truth and the perfect cases in use (--script): a, bench/quality_script.py, the chat the
# rules were tuned on; b, bench/quality_script_b.py, one written apart from them. Both have the same names.
SCRIPT: ModuleType = quality_script
FIRST_PERSON = re.compile(r"(?:^|\s)(?:i|i'm|i've|my|me)\b")
SECRET_KINDS = ("secret",)
WRONG_PERSON_KINDS = ("gossip", "bot")
NOT_FACT_KINDS = ("question", "mood", "hypothetical", "joke", "meta")  # joke, meta: script b's


def use_script(name: str) -> ModuleType:
    """Make script `name` (a or b) the one the run, the scores and the report read."""
    global SCRIPT
    SCRIPT = importlib.import_module(SCRIPTS[name])
    return SCRIPT


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


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) with the bench's GGUF,
    and MiniLM's `/v1/embeddings` beside it (`bench.local_model serve --embed-only`: the chat model's own
    embeddings are per token, unpooled); `settings` point the bot at both as its OpenAI-compatible
    provider. The server's output goes to bench/.cache/llama_server.log. Needs
    `pip install 'llama-cpp-python[server]'` (the `quality` extra)."""

    MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"

    def __init__(self, extra: list[str]) -> None:
        self.extra = extra
        self.embedder = LocalServer(["--embed-only"])
        self.process: subprocess.Popen[bytes] | None = None
        self.settings = Settings()

    def __enter__(self) -> LlamaServer:
        from bench.local_model import EMBED_DIMENSIONS, EMBED_MODEL_NAME, MODEL_FILE

        port = _free_port()
        # Every core this process may use, as bench.local_model runs the model: the server's own default
        # generates on half the CPUs (one thread on a 2-core machine: 3-6 tokens/s in its log).
        cores = len(os.sched_getaffinity(0))
        log = (CACHE / "llama_server.log").open("ab")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "llama_cpp.server", "--model", str(MODEL_FILE)),
                *("--model_alias", self.MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port)),
                *("--n_ctx", "8192", "--n_threads", str(cores), "--n_threads_batch", str(cores)),
                # As the README starts it: no RAM prompt cache (it grew the server to 23 GB in 30 minutes
                # of the bot's calls), and no request cutting off the stream another is reading.
                *("--interrupt_requests", "false"),
                *self.extra,
            ],
            cwd=ROOT,
            env=_server_environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        base_url = f"http://127.0.0.1:{port}/v1"
        _wait_listening(self.process, base_url + "/models")
        self.embedder.__enter__()
        self.settings = replace(
            Settings(),
            model_provider="openai",
            openai_base_url=base_url,
            chat_model=self.MODEL_ALIAS,
            memory_model=self.MODEL_ALIAS,
            embedding_provider="openai",
            embedding_base_url=self.embedder.base_url + "/v1",
            embedding_model=EMBED_MODEL_NAME,
            embedding_dimensions=EMBED_DIMENSIONS,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.embedder.__exit__()
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


def _server_environment() -> dict[str, str]:
    """This process's environment, with LLAMA_SERVER_PYTHONPATH first on the server's path: where the
    server's own dependencies (uvicorn, fastapi, ...) live when they are kept out of the bot's."""
    env = dict(os.environ)
    extra = env.get("LLAMA_SERVER_PYTHONPATH", "")
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra, env.get("PYTHONPATH", "")) if p)
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(process: subprocess.Popen[bytes], url: str, seconds: float = 180.0) -> None:
    """Until `url` answers (the model is loaded); an error when the process ends first or it never does."""
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"llama_cpp.server ended (exit {process.returncode}); see bench/.cache/llama_server.log"
            )
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    process.terminate()
    raise RuntimeError(f"llama_cpp.server did not answer {url} within {seconds:g} s")


OVERRIDES: dict[str, Any] = {}  # --set NAME=VALUE: Settings fields changed for a run


def parse_override(text: str) -> tuple[str, Any]:
    """ "consolidate_candidate_distance=0.5" -> the field and its value in the field's type."""
    name, _, raw = text.partition("=")
    field = next((f for f in fields(Settings) if f.name == name.strip().lower()), None)
    if field is None or not raw:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=VALUE with NAME a Settings field")
    kind = {"float": float, "int": int}.get(str(field.type), str)
    return field.name, kind(raw)


MODEL_SETTINGS = ("model_provider", "embedding_", "chat_model", "memory_model", "gemini_", "openai_")


def environment_models() -> Settings:
    """The bot's defaults with the model settings the environment gives, read as the bot reads them."""
    given = load_settings(dotenv_path=None)
    chosen = {f.name: getattr(given, f.name) for f in fields(Settings) if f.name.startswith(MODEL_SETTINGS)}
    return replace(Settings(), **chosen)


def settings_for(endpoint: str | Settings, path: Path, timeout: float) -> Settings:
    """The bot's defaults, except the models (a Gemini-compatible base URL, or a provider's settings), a
    generous deadline and a schedule that only we drive."""
    if isinstance(endpoint, str):
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or "local"
        endpoint = replace(Settings(), gemini_api_key=key, gemini_base_url=endpoint)
    return replace(
        endpoint,
        database_path=path,
        database_url="",
        gemini_timeout_seconds=timeout,
        gemini_max_retries=2,
        openai_timeout_seconds=timeout,
        openai_max_retries=2,
        memory_flush_quiet_seconds=86_400,
        memory_flush_max_age_seconds=86_400,
        # A flush ends well inside its lease (80%); a local model's extraction takes minutes, so the
        # default 300 s lease cut it off at 240 s.
        memory_flush_claim_seconds=max(timeout * 3, 3_600.0) if timeout else 86_400.0,
        **OVERRIDES,
    )


class Recorder:
    """Wraps a model client's `generate_json`: seconds, tokens (its usage deltas) and the answer per call."""

    def __init__(self, client: Any) -> None:
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

        client.generate_json = generate_json


# ---- part 1: the chat -------------------------------------------------------------------------------------


async def run_chat(endpoint: str | Settings, phases: int, timeout: float, workdir: Path) -> dict[str, Any]:
    lines = SCRIPT.script(phases)
    batch = SCRIPT.messages(lines)
    settings = settings_for(endpoint, workdir / "chat.sqlite3", timeout)
    models = open_models(settings)
    service = await open_memory(settings, models)
    recorder = Recorder(models.json)
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
    for start in range(0, len(batch), SCRIPT.PHASE):
        for message in batch[start : start + SCRIPT.PHASE]:
            service.capture(message, guild_id=SCRIPT.SCOPE.split(":")[1])
        await service.capture_buffer.wait_written()
        began = time.perf_counter()
        calls_before = len(recorder.calls)
        error = None
        try:
            await service.flush_now(SCRIPT.CHANNEL)
        except Exception as exc:  # the messages stay buffered; the run goes on and says so
            error = f"{type(exc).__name__}: {exc}"
        calls = recorder.calls[calls_before:]
        flushes.append(
            {
                "messages": f"{start}-{start + SCRIPT.PHASE - 1}",
                "seconds": round(time.perf_counter() - began, 2),
                "extract_seconds": round(sum(c["seconds"] for c in calls if c["purpose"] == "extract"), 2),
                "generate_calls": len(calls),
                "error": error,
            }
        )
        print(
            f"  flush of messages {start}-{start + SCRIPT.PHASE - 1}: {flushes[-1]['seconds']} s"
            + (f", {error}" if error else ""),
            flush=True,
        )
    facts: dict[str, list[Fact]] = {}
    for uid in {m.author_id for m in batch if not m.is_bot}:
        facts[uid] = await service.store.call(Store.list_facts, SCRIPT.SCOPE, uid, all_statuses=True)
    usage = models.usage.snapshot()
    pending = await service.store.call(Store.count_pending)
    await service.close()
    answers = [call["answer"] for call in recorder.calls if call["purpose"] == "extract" and "answer" in call]
    raw = [  # the facts the model wrote (with EXTRACTION_MODE=select, only the rewrite call's)
        {"user_id": str(f.get("user_id")), "text": f.get("text", "")}
        for a in answers
        for f in a.get("facts", [])
    ]
    return {
        "lines": lines,
        "messages": len(batch),
        "flushes": flushes,
        "calls": recorder.calls,
        "usage": usage,
        "raw_proposals": raw,
        "extraction_mode": extraction_mode(settings),
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


def selected(run: dict[str, Any]) -> bool:
    """Whether the run's extraction asked for a selection: its mode, or (runs before it was recorded)
    answers holding the chosen ids."""
    if "extraction_mode" in run:
        return bool(run["extraction_mode"] == "select")
    return any("own" in (call.get("answer") or {}) for call in run["calls"] if call["purpose"] == "extract")


def score_chat(run: dict[str, Any]) -> dict[str, Any]:
    """People's facts against the script; the server's community facts (MEMORY_COMMUNITY) are counted
    apart: `bench.community_quality` measures them."""
    truth = Truth.of(run["lines"])
    people = [p for p in run["proposed"] if p["person"] != COMMUNITY_NAME]
    names = {m["user_id"]: m["person"] for m in people}
    proposals = []
    for p in people:
        kind, ids = classify(p["person"], p["text"], truth)
        proposals.append({**p, "class": kind, "matched": ids})
    learned = {fid for p in proposals if p["class"] == "correct" for fid in p["matched"]}
    statements = list(truth.statements)
    classes = Counter(p["class"] for p in proposals)
    total = len(proposals)

    raw_classes: Counter[str] = Counter()
    for r in run["raw_proposals"]:
        person = SCRIPT.PEOPLE.get(r["user_id"]) or names.get(r["user_id"])
        raw_classes["unknown_user" if person is None else classify(person, r["text"], truth)[0]] += 1

    # the final memory
    active: dict[str, list[str]] = {
        SCRIPT.PEOPLE[uid]: [f["text"] for f in fs if f["status"] == "active"]
        for uid, fs in run["final"].items()
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
        "community_facts": len(run["proposed"]) - total,
        "raw_proposals": len(run["raw_proposals"]),
        "raw_classes": dict(raw_classes),
        # With a selection (EXTRACTION_MODE=select) the bot writes facts too: no count of the model's refused.
        "refused_by_validation": None if selected(run) else len(run["raw_proposals"]) - total,
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
    endpoint: str | Settings, timeout: float, workdir: Path, cases: tuple[Case, ...]
) -> dict[str, Any]:
    settings = settings_for(endpoint, workdir / "perfect.sqlite3", timeout)
    store = await open_store(settings)
    models: Models = open_models(settings)
    recorder = Recorder(models.json)
    consolidator = Consolidator(
        store,
        models.json,
        models.embedder,
        candidate_distance=settings.consolidate_candidate_distance,
        duplicate_distance=settings.consolidate_duplicate_distance,
    )
    known_texts = [(i, j, t) for i, case in enumerate(cases) for j, t in enumerate(case.known)]
    vectors = await models.embedder.embed([t for _, _, t in known_texts], "document")
    known = [
        NewFact(SCRIPT.SCOPE, str(8000 + i), cases[i].name, t, [], embedding=v)
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
        new = [NewFact(SCRIPT.SCOPE, str(8000 + i), cases[i].name, cases[i].new, [f"m{i}"]) for i in group]
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
    await models.aclose()
    await store.close()
    return {"cases": results, "calls": recorder.calls, "usage": models.usage.snapshot()}


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
            f"\nChat: {chat['messages']} messages, {len(SCRIPT.PEOPLE)} people, {len(chat['flushes'])} flushes "
            f"(script {results.get('script', 'a')}, {results['endpoint']})"
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
                        "facts from questions / moods / hypotheticals / jokes / talk about the talk",
                        sum(c.get(k, 0) for k in NOT_FACT_KINDS),
                        s["proposed"],
                        "",
                    ],
                    ["facts holding the secret", c.get("secret", 0), s["proposed"], ""],
                    ["facts matching nothing expected", c.get("unmatched", 0), s["proposed"], ""],
                    [
                        "model's facts refused by the bot's validation",
                        "-" if s["refused_by_validation"] is None else s["refused_by_validation"],
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
            f"without the person's name: {s.get('without_name', '-')}; "
            f"community facts (not scored here): {s.get('community_facts', '-')}"
        )
        print(f"decisions applied: {s['decisions_applied']}")
        print(f"per 100 messages: {chat['per_100']}")
        for f in chat["flushes"]:
            print(
                f"flush {f['messages']}: {f['seconds']} s (extraction {f.get('extract_seconds', '-')} s), "
                f"{f['generate_calls']} generate calls" + (f", error {f['error']}" if f["error"] else "")
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


async def main_async(args: argparse.Namespace, endpoint: str | Settings, label: str) -> dict[str, Any]:
    results: dict[str, Any] = {"endpoint": label, "script": args.script}
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        workdir = Path(tmp)
        if not args.perfect_only:
            phases = 2 if args.quick else len(SCRIPT.PHASES)
            print(f"chat: {phases * SCRIPT.PHASE} messages through the pipeline ...", flush=True)
            started = time.perf_counter()
            run = await run_chat(endpoint, phases, args.timeout, workdir)
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
            print(f"consolidation on perfect inputs: {len(SCRIPT.PERFECT_CASES)} cases ...", flush=True)
            started = time.perf_counter()
            perfect = await run_perfect(endpoint, args.timeout, workdir, SCRIPT.PERFECT_CASES)
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


def beside(runs: list[dict[str, Any]]) -> str:
    """The headline figures of several written results, one column each (headed by its endpoint)."""

    def chat(run: dict[str, Any], key: str) -> Any:
        return (run.get("chat") or {}).get("score", {}).get(key, 0)

    def perfect(run: dict[str, Any], key: str) -> Any:
        return (run.get("perfect") or {}).get("score", {}).get(key, 0)

    def of(part: int | float, whole: int | float) -> str:
        return f"{part} of {whole} ({pct(part, whole)})"

    def classes(run: dict[str, Any], *kinds: str) -> int:
        return sum(chat(run, "classes").get(k, 0) for k in kinds) if run.get("chat") else 0

    def calls(run: dict[str, Any], part: str, purpose: str) -> str:
        st = (run.get(part) or {}).get("call_stats", {}).get(purpose)
        return f"{st['calls']} calls, {st['seconds_p50']} s p50, {st['errors']} errors" if st else "-"

    rows: list[tuple[str, Any]] = [
        (
            "messages (script)",
            lambda r: f"{(r.get('chat') or {}).get('messages', '-')} ({r.get('script', 'a')})",
        ),
        ("extraction mode / seed", lambda r: f"{r.get('extraction_mode', '-')} / {r.get('seed', '-')}"),
        ("self-statements learned", lambda r: of(len(chat(r, "learned")), chat(r, "self_statements"))),
        ("proposed facts right", lambda r: of(classes(r, "correct"), chat(r, "proposed"))),
        ("wrong-person facts", lambda r: chat(r, "wrong_person")),
        ("from questions/moods/hypotheticals/jokes/meta", lambda r: classes(r, *NOT_FACT_KINDS)),
        ("holding the secret", lambda r: classes(r, "secret")),
        (
            "refused by validation",
            lambda r: (
                "-"
                if chat(r, "refused_by_validation") is None
                else of(chat(r, "refused_by_validation"), chat(r, "raw_proposals"))
            ),
        ),
        ("in the first person", lambda r: chat(r, "first_person")),
        ("expected changes right", lambda r: of(chat(r, "changes_right"), chat(r, "changes_expected"))),
        (
            "final: expected facts active",
            lambda r: of(chat(r, "final_expected_active_present"), chat(r, "final_expected_active")),
        ),
        ("chat: extraction", lambda r: calls(r, "chat", "extract")),
        (
            "extraction s per 50-message flush",
            lambda r: ", ".join(
                str(f.get("extract_seconds", "-")) for f in (r.get("chat") or {}).get("flushes", [])
            ),
        ),
        ("chat: consolidation", lambda r: calls(r, "chat", "consolidate")),
        ("chat: seconds", lambda r: (r.get("chat") or {}).get("seconds", "-")),
        ("perfect inputs right", lambda r: of(perfect(r, "right"), perfect(r, "cases"))),
        ("perfect: consolidation", lambda r: calls(r, "perfect", "consolidate")),
        ("perfect: seconds", lambda r: (r.get("perfect") or {}).get("seconds", "-")),
        ("run at (load average before, after)", lambda r: f"{r.get('date', '-')} ({r.get('load', '-')})"),
    ]
    headers = ["", *(_short(run.get("endpoint", "?")) for run in runs)]
    return table(headers, [[name, *(figure(run) for run in runs)] for name, figure in rows])


def _short(label: str) -> str:
    """A column's heading: what a run's label starts with ("local", "llama-cpp-python server"), or all
    of it (an endpoint's URL)."""
    head = label.split(": ", 1)[0]
    return "Gemini-compatible stand-in" if head == "local" else head


def rescore(path: Path, show_details: bool) -> None:
    """Score a written result again (after a change to the scoring), from the script it was run on."""
    data = json.loads(path.read_text())
    use_script(data.get("script", "a"))  # files written before --script: script a
    chat = data.get("chat")
    if chat:
        mode = {"extraction_mode": data["extraction_mode"]} if "extraction_mode" in data else {}
        chat["score"] = score_chat({**mode, **chat, "lines": SCRIPT.script(chat["messages"] // SCRIPT.PHASE)})
    if data.get("perfect"):
        data["perfect"]["score"] = score_perfect(data["perfect"])
    path.write_text(json.dumps(data, indent=2) + "\n")
    report(data)
    if show_details:
        details(data)
    print(f"\nrescored {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--script",
        choices=tuple(SCRIPTS),
        default="a",
        help="the scripted chat and cases: a, bench/quality_script.py (default); b, bench/quality_script_b.py, "
        "written apart from the rules (result files get _b)",
    )
    parser.add_argument("--quick", action="store_true", help="the first 100 messages (2 flushes)")
    parser.add_argument("--local", action="store_true", help="start bench.local_model and use it")
    parser.add_argument(
        "--llama-server",
        action="store_true",
        help="start llama-cpp-python's server with the same model and use it as the bot's OpenAI provider",
    )
    parser.add_argument(
        "--local-args", default="", help="extra arguments for bench.local_model serve (or llama_cpp.server)"
    )
    parser.add_argument(
        "--mode",
        choices=("select", "enumerate"),
        help="EXTRACTION_MODE for the run (default: the bot's auto for the provider)",
    )
    parser.add_argument(
        "--seed", type=int, help="the local model's sampling seed (--local, --llama-server); in the file name"
    )
    parser.add_argument("--chat-only", action="store_true")
    parser.add_argument("--perfect-only", action="store_true")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per model request (default: 30 on Gemini's or OpenAI's API, else none)",
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
    parser.add_argument(
        "--beside", type=Path, nargs="+", metavar="JSON", help="print written results side by side; no run"
    )
    args = parser.parse_args(argv)
    if args.rescore:
        rescore(args.rescore, args.details)
        return
    if args.beside:
        print(beside([json.loads(path.read_text()) for path in args.beside]))
        return
    use_script(args.script)
    OVERRIDES.update(args.set)
    partial = args.quick or args.chat_only or args.perfect_only or bool(OVERRIDES)
    if args.mode:
        OVERRIDES["extraction_mode"] = args.mode
    local_args = args.local_args.split() + (["--seed", str(args.seed)] if args.seed is not None else [])
    server: LocalServer | LlamaServer | None = None
    if args.local:
        server = LocalServer(local_args).__enter__()
        endpoint: str | Settings = server.base_url
        label = "local: " + _local_label()
    elif args.llama_server:
        server = LlamaServer(local_args).__enter__()
        endpoint, label = server.settings, _llama_label()
    else:
        endpoint = environment_models()
        label = _endpoint_label(endpoint)
        if label == "Gemini API" and not endpoint.gemini_api_key:
            parser.error(
                "set GEMINI_BASE_URL (a Gemini-compatible endpoint), GEMINI_API_KEY (real Gemini), "
                "MODEL_PROVIDER=openai with OPENAI_BASE_URL, or pass --local or --llama-server"
            )
        if not endpoint.gemini_api_key:
            endpoint = replace(endpoint, gemini_api_key="local")
    if args.timeout is None:
        args.timeout = 30.0 if label in ("Gemini API", "OpenAI API") else 0.0
    date, load = time.strftime("%Y-%m-%d %H:%M"), os.getloadavg()[0]
    try:
        results = asyncio.run(main_async(args, endpoint, label))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    report(results)
    if args.details:
        details(results)
    data = {
        "benchmark": "quality",
        "machine": machine(),
        "date": date,
        "load": f"{load:.1f}, {os.getloadavg()[0]:.1f}",  # the 1-minute load average before and after
        "settings_changed": OVERRIDES,
        "extraction_mode": extraction_mode(settings_for(endpoint, Path("-"), 0)),
        "seed": args.seed,
        **results,
    }
    name = "quality_llama_server" if args.llama_server else "quality"
    name += "" if args.script == "a" else f"_{args.script}"  # script b's runs never overwrite a's
    name += (f"_{args.mode}" if args.mode else "") + (f"_seed{args.seed}" if args.seed is not None else "")
    print(f"\nwrote {write_json(name, data, partial=partial)}")


def _endpoint_label(models: Settings) -> str:
    """Which models a run from the environment used, as the results name them."""
    if models.model_provider == "openai":
        where = models.openai_base_url or "OpenAI API"
        return where if where == "OpenAI API" else f"{where} ({models.memory_model_name})"
    return models.gemini_base_url or "Gemini API"


def _llama_label() -> str:
    from bench.local_model import MODEL_NAME

    return f"llama-cpp-python server: {MODEL_NAME} + all-MiniLM-L6-v2 (/v1/embeddings of bench.local_model)"


def _local_label() -> str:
    from bench.local_model import MODEL_NAME

    return f"{MODEL_NAME} + all-MiniLM-L6-v2 (bench.local_model)"


if __name__ == "__main__":
    main()
