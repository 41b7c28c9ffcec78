"""Resident memory of llama-cpp-python's server under requests shaped like the bot's, per cache setting.

    python -m bench.local_server_memory                                  # --cache false (the server's default)
    python -m bench.local_server_memory --server-args "--cache true --cache_size 1073741824"
    python -m bench.local_server_memory --server-args "--cache true" --stop-above-gb 8
    python -m bench.local_server_memory --requests 6 --label try       # a trial (.partial.json)

Starts `python -m llama_cpp.server` with the bench's GGUF exactly as README.md's command line does
(`--model_alias`, `--n_ctx 8192`, every core for `--n_threads` and `--n_threads_batch`) except for its
cache, which `--server-args` gives (appended last, so it also overrides anything before it), and sends
`--requests` requests one after the other, alternating the two shapes the bot sends:

- a chat reply (streamed, `max_tokens` 100): the bot's persona and memory guide, a background block of
  15 facts and 4 episode points of one of three channels (the same block each time that channel is
  asked), then the last 16 lines of that channel's conversation (sliding on by three lines each time)
  and a short question: ~1,550 tokens;
- a memory extraction (not streamed, JSON mode with a schema, `max_tokens` 60): the bot's selection
  instruction and 50 new chat lines of 8 speakers, asking for line ids: ~1,600-1,750 tokens.

Every prompt differs from the others as real chats do (seeded by `--seed`, so two runs send the same
requests). After every request it reads the server process's resident memory (psutil, or VmRSS of
/proc/PID/status), and a thread samples it every 0.5 s for the peak between requests; the kernel's
high-water mark (VmHWM) is read at the end. A run stops early once the resident memory passes
`--stop-above-gb` (default 8), and says so. Prints one line per request and a summary: RSS at start
(model loaded, before the first request), max, final, and seconds per request (chat, memory, all;
the first ten beside the last ten). From the server's own log (it is verbose by default), per request:
the prompt tokens it evaluated and those it reused (the prefix still in its context, or a cached
state's), whether the cache had a state for it, and the seconds of each part: what the cache saves,
in tokens, whatever else the machine is doing meanwhile (the seconds depend on that; other
llama_cpp.server processes seen during the run are listed). Writes bench/results/local_server_memory_<label>.json (the label
from the cache arguments unless `--label` is given; `.partial.json` for a trial of fewer than 10, or a
run with a failed request; three failures in a row stop it).
The server's output goes to bench/.cache/llama_server_memory.log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common import CACHE, ROOT, machine, table, write_json

MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
MIB = 1024 * 1024
CHAT_MAX_TOKENS = 100
MEMORY_MAX_TOKENS = 60
HISTORY_LINES = 16
CHUNK_LINES = 50
CHANNELS = 3
FULL_RUN = 100
TRIAL_BELOW = 10  # requests: fewer make a trial run, written as .partial.json


# ---- the server -------------------------------------------------------------------------------------------


def readme_server_args(model: Path, port: int, cores: int) -> list[str]:
    """README.md's `python -m llama_cpp.server` arguments without the cache setting."""
    return [
        *("--model", str(model), "--model_alias", MODEL_ALIAS),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--n_ctx", "8192", "--n_threads", str(cores), "--n_threads_batch", str(cores)),
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def running_model_servers() -> list[str]:
    """Command lines of llama_cpp.server processes already running on this machine (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"llama_cpp.server" in argv:
            found.append(f"{entry.name}: " + " ".join(a.decode(errors="replace") for a in argv if a)[:200])
    return found


class LlamaProcess:
    """`python -m llama_cpp.server` as README.md starts it, plus `extra` arguments; `base_url` (ending in
    /v1) once the model is loaded. Its output is appended to `log`. Stopped by its pid on exit (SIGTERM,
    then SIGKILL after 30 s)."""

    def __init__(self, extra: Sequence[str], log: Path, *, model: Path | None = None) -> None:
        from bench.local_model import MODEL_FILE

        self.extra = list(extra)
        self.log = log
        self.model = model or MODEL_FILE
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []
        self.log_start = 0

    def __enter__(self) -> LlamaProcess:
        if not self.model.exists():
            raise RuntimeError(f"{self.model} is missing: python -m bench.local_model fetch")
        cores = len(os.sched_getaffinity(0))
        args = [*readme_server_args(self.model, self.port, cores), *self.extra]
        self.command = [sys.executable, "-m", "llama_cpp.server", *args]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(args)}\n".encode())
            out.flush()
            self.log_start = out.tell()
            self.process = subprocess.Popen(self.command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait_loaded()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_text(self) -> str:
        """What the server wrote to its log since it started."""
        with self.log.open("rb") as log:
            log.seek(self.log_start)
            return log.read().decode("utf-8", "replace")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)

    def _wait_loaded(self, seconds: float = 300.0) -> None:
        assert self.process is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server ended (exit {self.process.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=5):
                    return
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"llama_cpp.server did not answer within {seconds:g} s; see {self.log}")


# ---- what the server's log says of each request ----------------------------------------------------------

PERF = re.compile(
    r"^llama_perf_context_print:\s+(?P<what>prompt eval|eval) time =\s*(?P<ms>[\d.]+) ms /\s*(?P<n>\d+) "
)
PREFIX = re.compile(r"Llama\.generate: (?P<n>\d+) prefix-match hit, remaining (?P<rest>\d+) prompt tokens")


def perf_entries(log: str) -> list[dict[str, Any]]:
    """One entry per completion the server ran, in order, from its verbose log: prompt tokens it
    evaluated and reused (prefix of its context or of a cached state), the seconds that took, tokens
    generated and their seconds, and `cache`: "hit" when a cached state was loaded for it, "miss" when
    no cached state shared any of its prefix, None without a cache or when the best cached state shared
    no more than the server's context already did (the server then says nothing)."""
    entries: list[dict[str, Any]] = []
    pending: dict[str, Any] = {"cache": None, "reused_tokens": 0}
    for line in log.splitlines():
        if "Llama._create_completion: cache hit" in line:
            pending["cache"] = "hit"
        elif "Llama._create_completion: cache miss" in line:
            pending["cache"] = "miss"
        elif found := PREFIX.search(line):
            pending["reused_tokens"] = int(found["n"])
        elif found := PERF.match(line):
            seconds = round(float(found["ms"]) / 1000, 2)
            if found["what"] == "prompt eval":
                entries.append(
                    {**pending, "evaluated_tokens": int(found["n"]), "prompt_eval_seconds": seconds}
                )
                pending = {"cache": None, "reused_tokens": 0}
            elif entries:
                entries[-1] |= {"output_tokens": int(found["n"]), "generate_seconds": seconds}
    return entries


# ---- resident memory --------------------------------------------------------------------------------------


def status_bytes(status: str, field: str = "VmRSS") -> int:
    """A memory field of a /proc/PID/status text (`VmRSS:  123456 kB`) in bytes; 0 when absent."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == field:
            parts = value.split()
            if not parts:
                return 0
            unit = parts[1].lower() if len(parts) > 1 else "b"
            factor = {"kb": 1024, "mb": MIB, "gb": 1024 * MIB, "b": 1}.get(unit, 1)
            return int(parts[0]) * factor
    return 0


def process_rss(pid: int) -> int:
    """Resident memory of a process in bytes: psutil when installed, else VmRSS of /proc/PID/status;
    0 once the process is gone."""
    try:
        import psutil
    except ImportError:
        psutil = None  # type: ignore[assignment]
    if psutil is not None:
        try:
            return int(psutil.Process(pid).memory_info().rss)
        except psutil.Error:
            return 0
    try:
        return status_bytes(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0


def process_hwm(pid: int) -> int:
    """The kernel's high-water mark of a process's resident memory (VmHWM), in bytes; 0 if unknown."""
    try:
        return status_bytes(Path(f"/proc/{pid}/status").read_text(), "VmHWM")
    except OSError:
        return 0


class Sampler:
    """A thread reading a process's resident memory every `interval` seconds; `peak` is the highest.
    Every 30 s it also looks for other llama_cpp.server processes (`others`: their command lines), which
    share the cores: two servers each spinning on every core slow each other down many times over."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.others: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, process_rss(self.pid))
            if ticks % max(1, round(30 / self.interval)) == 0:
                mine = f"{self.pid}:"
                self.others |= {c for c in running_model_servers() if not c.startswith(mine)}
            ticks += 1


def mib(value: int) -> int:
    return round(value / MIB)


# ---- the requests -----------------------------------------------------------------------------------------

NAMES = (
    "Ana", "Ben", "Chloe", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Keiko", "Luca",
    "Maya", "Nils", "Olga", "Priya", "Quentin", "Rosa", "Sami", "Tomas", "Uma", "Viktor", "Wen", "Yara",
)  # fmt: skip
JOBS = (
    "nurse", "carpenter", "data analyst", "baker", "bus driver", "teacher", "lawyer", "plumber",
    "game designer", "pharmacist", "welder", "librarian", "architect", "chef", "physiotherapist",
)  # fmt: skip
CITIES = (
    "Porto", "Lyon", "Oslo", "Krakow", "Valencia", "Leeds", "Ghent", "Turin", "Tartu", "Bremen",
    "Cork", "Brno", "Malmo", "Graz", "Bergen", "Utrecht",
)  # fmt: skip
PETS = ("dog", "cat", "parrot", "rabbit", "tortoise", "ferret", "hamster", "gecko")
PET_NAMES = ("Biscuit", "Pixel", "Mango", "Olive", "Rocket", "Juniper", "Pepper", "Nacho", "Ziggy")
HOBBIES = (
    "bouldering", "sourdough baking", "chess", "birdwatching", "trail running", "pottery", "salsa",
    "knitting", "sailing", "beekeeping", "woodworking", "astronomy", "fencing", "film photography",
)  # fmt: skip
GAMES = ("Factorio", "Hades", "Celeste", "Stardew Valley", "Elden Ring", "Terraria", "Dota 2", "Tetris")
FOODS = ("ramen", "tacos", "falafel", "pierogi", "paella", "curry", "pho", "lasagne", "dumplings")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

FACT_TEMPLATES = (
    "{n} works as a {job} in {city}.",
    "{n} has a {pet} called {petname}.",
    "{n} has been into {hobby} for {k} years.",
    "{n} moved to {city} in 20{yy}.",
    "{n} is learning to cook {food} and practises on {day}s.",
    "{n} plays {game} most evenings and is stuck on level {k}.",
    "{n} is saving up for a trip to {city} next spring.",
    "{n}'s sister is a {job} and visits every {day}.",
)
CHAT_TEMPLATES = (
    "I work as a {job} now, started {k} weeks ago",
    "anyone tried the new {food} place near the station?",
    "my {pet} {petname} knocked the plant over again lol",
    "we're doing {hobby} on {day}, who's in?",
    "I moved to {city} last month, still unpacking",
    "lol no way, {n2} you said that last time too",
    "did anyone finish {game}? I'm on level {k}",
    "I can't make it {day}, sorry, work stuff",
    "that {food} recipe was amazing, thanks {n2}",
    "I've been doing {hobby} for {k} years now",
    "ugh the bus was {k} minutes late again",
    "is the server meetup still on {day} at {hh}:00?",
    "haha that's so true",
    "my sister is a {job} in {city}, she loves it",
    "I think I'll try {hobby} this summer, maybe",
    "can someone send the link to the {game} guide?",
    "good morning everyone",
    "brb, {pet} needs a walk",
    "I hate {food}, sorry not sorry",
    "we decided the tournament is every {day} at {hh}:00",
)
QUESTIONS = (
    "what does {n} do for work?",
    "where does {n} live now?",
    "what's the name of {n}'s pet?",
    "what hobby is {n} into?",
    "any idea what game {n} plays?",
    "when is the meetup again?",
    "can you remind me what {n} is saving up for?",
)


def _fill(template: str, rng: random.Random, name: str) -> str:
    return template.format(
        n=name,
        n2=rng.choice(NAMES),
        job=rng.choice(JOBS),
        city=rng.choice(CITIES),
        pet=rng.choice(PETS),
        petname=rng.choice(PET_NAMES),
        hobby=rng.choice(HOBBIES),
        game=rng.choice(GAMES),
        food=rng.choice(FOODS),
        day=rng.choice(DAYS),
        k=rng.randint(2, 40),
        yy=rng.randint(10, 25),
        hh=rng.randint(10, 22),
    )


def channel_people(seed: int, channel: int) -> list[str]:
    return random.Random(f"{seed}-people-{channel}").sample(NAMES, 8)


def channel_lines(seed: int, channel: int, start: int, count: int) -> list[tuple[str, str]]:
    """Lines `start` .. `start + count` of a channel's endless conversation: (speaker, text)."""
    people = channel_people(seed, channel)
    lines = []
    for index in range(start, start + count):
        rng = random.Random(f"{seed}-line-{channel}-{index}")
        name = rng.choice(people)
        text = _fill(rng.choice(CHAT_TEMPLATES), rng, name)
        if rng.random() < 0.6:  # people write more than one thing in a message
            text += rng.choice((", and ", ". Also ", " - btw ", "; ")) + _fill(
                rng.choice(CHAT_TEMPLATES), rng, name
            )
        lines.append((name, text))
    return lines


def background_block(seed: int, channel: int) -> str:
    """The recalled facts of a channel's people, as the bot puts them in its system instruction."""
    rng = random.Random(f"{seed}-facts-{channel}")
    people = []
    for name in channel_people(seed, channel)[:5]:
        facts = [_fill(t, rng, name) for t in rng.sample(FACT_TEMPLATES, 3)]
        rows = "\n".join(
            f'  <fact id="{rng.randint(100, 9999)}" said="2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}">'
            f"{text}</fact>"
            for text in facts
        )
        people.append(f'<person name="{name}" id="{rng.randint(10**17, 10**18)}">\n{rows}\n</person>')
    episodes = "\n".join(
        f'  <point channel="#chat-{channel}" time="2026-11-{rng.randint(1, 25):02d}">'
        f"{_fill(rng.choice(CHAT_TEMPLATES), rng, rng.choice(NAMES))}</point>"
        for _ in range(4)
    )
    return f"<memory>\n{chr(10).join(people)}\n<episodes>\n{episodes}\n</episodes>\n</memory>"


def chat_system() -> str:
    """The bot's own start of every chat reply's system instruction (persona, memory guide)."""
    from datetime import datetime

    try:
        from bot.chat.prompts import CHAT_MEMORY_PREAMBLE, chat_persona
        from bot.config import DEFAULT_PERSONA

        return chat_persona(DEFAULT_PERSONA, datetime(2026, 11, 27, 12), memory_on=True) + (
            "\n\n" + CHAT_MEMORY_PREAMBLE
        )
    except ImportError:  # the bot's prompts moved: a stand-in of the same size
        return "You are a friendly, concise member of this Discord community. " * 20


def memory_system() -> str:
    """The bot's line-selection instruction (EXTRACTION_MODE=select, the OpenAI provider's default)."""
    try:
        from bot.memory.prompts import select_system

        return select_system(community=True)
    except ImportError:
        return "Point at the chat lines where the speaker states something durable about themselves. " * 12


SELECTION_SCHEMA = {
    "type": "object",
    "properties": {
        "self": {"type": "array", "items": {"type": "string"}},
        "sensitive": {"type": "array", "items": {"type": "string"}},
        "community": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["self"],
}


def chat_request(seed: int, number: int) -> dict[str, Any]:
    """The `number`-th chat reply (0, 1, ...): channel `number % 3`, its history slid on each time."""
    channel = number % CHANNELS
    visit = number // CHANNELS
    history = channel_lines(seed, channel, visit * 3, HISTORY_LINES)
    rng = random.Random(f"{seed}-question-{number}")
    asker = history[-1][0]
    about = rng.choice([n for n in channel_people(seed, channel)[:5] if n != asker])
    question = _fill(rng.choice(QUESTIONS), rng, about)
    turns = [{"role": "user", "content": f"{name}: {text}"} for name, text in history]
    turns.append({"role": "user", "content": f"{asker}: @memory-bot {question}"})
    return {
        "model": MODEL_ALIAS,
        "messages": [
            {"role": "system", "content": f"{chat_system()}\n{background_block(seed, channel)}"},
            *turns,
        ],
        "max_tokens": CHAT_MAX_TOKENS,
        "temperature": 0.7,
        "seed": seed + number,
        "stream": True,
    }


def memory_request(seed: int, number: int) -> dict[str, Any]:
    """The `number`-th extraction: 50 lines no flush read before (of one channel, after its history)."""
    channel = number % CHANNELS
    lines = channel_lines(seed, channel, 10_000 + number * CHUNK_LINES, CHUNK_LINES)
    speakers = sorted({name for name, _ in lines})
    chat = "\n".join(f"m{i} {name}: {text}" for i, (name, text) in enumerate(lines, 1))
    return {
        "model": MODEL_ALIAS,
        "messages": [
            {"role": "system", "content": memory_system()},
            {"role": "user", "content": f"Speakers: {', '.join(speakers)}\n\nChat:\n{chat}"},
        ],
        "max_tokens": MEMORY_MAX_TOKENS,
        "temperature": 0.0,
        "seed": seed + number,
        "response_format": {"type": "json_object", "schema": SELECTION_SCHEMA},
    }


def requests_for(seed: int, count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, body) alternating chat and memory, `count` in all."""
    for index in range(count):
        if index % 2 == 0:
            yield "chat", chat_request(seed, index // 2)
        else:
            yield "memory", memory_request(seed, index // 2)


def post(base_url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send one chat completion; seconds, seconds to the first token (streamed), the text, the finish
    reason (None when a stream ended without one: cut off), prompt tokens when the server says."""
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    first: float | None = None
    text: list[str] = []
    finish: str | None = None
    usage: dict[str, Any] = {}
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if body.get("stream"):
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                for choice in chunk.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece and first is None:
                        first = time.perf_counter() - started
                    text.append(piece)
                    finish = choice.get("finish_reason") or finish
        else:
            answer = json.loads(response.read())
            choice = answer["choices"][0]
            text.append(choice["message"].get("content") or "")
            finish = choice.get("finish_reason")
            usage = answer.get("usage") or {}
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "first_token_seconds": round(first, 2) if first is not None else None,
        "finish_reason": finish,
        "prompt_tokens": usage.get("prompt_tokens"),
        "output_chars": len("".join(text)),
    }


def count_tokens(base_url: str, body: dict[str, Any]) -> int | None:
    """The prompt's size in tokens by the server's tokenizer (its /extras/tokenize), text only."""
    text = "\n".join(m["content"] for m in body["messages"])
    root = base_url.removesuffix("/v1")
    request = urllib.request.Request(
        root + "/extras/tokenize",
        data=json.dumps({"input": text, "model": MODEL_ALIAS}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return len(json.loads(response.read())["tokens"])
    except (OSError, KeyError, ValueError):
        return None


# ---- the run ----------------------------------------------------------------------------------------------


def label_for(server_args: Sequence[str]) -> str:
    """A results name from the cache arguments: no_cache, cache_default, cache_1024mib ..."""
    settings: dict[str, str] = {}
    for index, arg in enumerate(server_args):
        if arg.startswith("--") and index + 1 < len(server_args):
            settings[arg[2:]] = server_args[index + 1]
    logits = "_logits_all_false" if settings.get("logits_all", "true").lower() in ("false", "0", "no") else ""
    if settings.get("cache", "false").lower() not in ("true", "1", "yes"):
        return f"no_cache{logits}"
    size = settings.get("cache_size")
    kind = "disk_" if settings.get("cache_type") == "disk" else ""
    return f"cache_{kind}{int(size) // MIB}mib{logits}" if size else f"cache_{kind}default{logits}"


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and median seconds per request by kind, and the first ten beside the last ten."""

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 2) if values else None

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 2) if values else None

    done = [r for r in records if "error" not in r]
    out: dict[str, Any] = {}
    for kind in ("chat", "memory"):
        seconds = [r["seconds"] for r in done if r["kind"] == kind]
        out[f"{kind}_mean_seconds"] = mean(seconds)
        out[f"{kind}_median_seconds"] = median(seconds)
    seconds = [r["seconds"] for r in done]
    out["mean_seconds"] = mean(seconds)
    out["first_10_mean_seconds"] = mean(seconds[:10])
    out["last_10_mean_seconds"] = mean(seconds[-10:])
    firsts = [r["first_token_seconds"] for r in done if r.get("first_token_seconds") is not None]
    out["chat_mean_first_token_seconds"] = mean(firsts)
    for kind in ("chat", "memory"):
        of_kind = [r for r in records if r["kind"] == kind and "evaluated_tokens" in r]
        out[f"{kind}_mean_evaluated_tokens"] = mean([r["evaluated_tokens"] for r in of_kind])
        out[f"{kind}_mean_reused_tokens"] = mean([r["reused_tokens"] for r in of_kind])
    timed = [r for r in records if r.get("prompt_eval_seconds")]
    evaluated = sum(r["evaluated_tokens"] for r in timed)
    out["prompt_tokens_per_second"] = (
        round(evaluated / sum(r["prompt_eval_seconds"] for r in timed), 1) if timed else None
    )
    generated = [r for r in records if r.get("generate_seconds")]
    out["output_tokens_per_second"] = (
        round(sum(r["output_tokens"] for r in generated) / sum(r["generate_seconds"] for r in generated), 2)
        if generated
        else None
    )
    out["errors"] = len(records) - len(done)
    out["cut_off_streams"] = sum(1 for r in done if r["kind"] == "chat" and r["finish_reason"] is None)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    server_args = shlex.split(args.server_args)
    label = args.label or label_for(server_args)
    stop_above = int(args.stop_above_gb * 1024**3)
    others = running_model_servers()
    if others and not args.allow_other_servers:
        raise SystemExit(
            "another llama_cpp.server is running (stop it, or --allow-other-servers):\n" + "\n".join(others)
        )
    log = CACHE / "llama_server_memory.log"
    records: list[dict[str, Any]] = []
    stopped = ""
    started_at = time.monotonic()
    with LlamaProcess(server_args, log) as server, Sampler(server.pid) as sampler:
        time.sleep(2)  # let the load settle
        start_rss = process_rss(server.pid)
        print(
            f"{shlex.join(server.command[1:])}\npid {server.pid}; RSS after loading: {mib(start_rss):,} MiB"
        )
        sizes: dict[str, int | None] = {}
        for index, (kind, body) in enumerate(requests_for(args.seed, args.requests)):
            if kind not in sizes:
                sizes[kind] = count_tokens(server.base_url, body)
            record: dict[str, Any] = {"index": index, "kind": kind}
            try:
                record.update(post(server.base_url, body, args.timeout))
            except (OSError, ValueError) as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            record["rss_mib"] = mib(process_rss(server.pid))
            records.append(record)
            print(
                f"{index + 1:4d} {kind:6s} {record.get('seconds', '-'):>7} s  "
                f"first token {record.get('first_token_seconds') or '-':>6}  "
                f"finish {record.get('finish_reason') or '-':7s}  RSS {record['rss_mib']:>7,} MiB"
                + (f"  {record['error']}" if "error" in record else ""),
                flush=True,
            )
            if server.process is not None and server.process.poll() is not None:
                stopped = f"the server ended (exit {server.process.returncode}) after request {index + 1}"
                break
            if len(records) >= 3 and all("error" in r for r in records[-3:]):
                stopped = (
                    f"three requests in a row failed, the last of them request {index + 1}; stopped there"
                )
                break
            if record["rss_mib"] * MIB > stop_above or sampler.peak > stop_above:
                stopped = f"RSS passed {args.stop_above_gb:g} GiB after request {index + 1}; stopped there"
                break
        peak = max(sampler.peak, process_rss(server.pid))
        hwm = process_hwm(server.pid)
        final_rss = process_rss(server.pid)
        others = sampler.others
        command = shlex.join(["python", *server.command[1:]])
    # the server has stopped, its log is complete: its figures of each completion, in order
    for record, perf in zip(records, perf_entries(server.log_text()), strict=False):
        record.update(perf)
    rss = [r["rss_mib"] for r in records]
    result = {
        "label": label,
        "server_args": server_args,
        "server_command": command,
        "requests_planned": args.requests,
        "requests_sent": len(records),
        "requests_answered": sum(1 for r in records if "error" not in r),
        "stopped": stopped,
        "prompt_tokens": sizes,
        "max_tokens": {"chat": CHAT_MAX_TOKENS, "memory": MEMORY_MAX_TOKENS},
        "rss_mib": {
            "start": mib(start_rss),
            "max_after_request": max(rss) if rss else None,
            "peak_sampled": mib(peak),
            "hwm": mib(hwm),
            "final": mib(final_rss),
        },
        "seconds": summary(records),
        "wall_minutes": round((time.monotonic() - started_at) / 60, 1),
        "other_model_servers_seen": sorted(others),
        "requests": records,
        "machine": machine(),
    }
    print_result(result)
    # a trial, or a run some of whose requests failed, is no figure of record
    failed = result["requests_answered"] < len(records)
    path = write_json(f"local_server_memory_{label}", result, partial=args.requests < TRIAL_BELOW or failed)
    print(f"\nwrote {path.relative_to(ROOT)}")
    return result


def print_result(result: dict[str, Any]) -> None:
    rss, seconds = result["rss_mib"], result["seconds"]
    print(f"\n{result['label']}: {' '.join(result['server_args']) or '(no cache arguments)'}")
    if result["stopped"]:
        print(result["stopped"])
    if result["other_model_servers_seen"]:
        print("another model server ran meanwhile (the times are not this server's alone):")
        print("\n".join(f"  {c}" for c in result["other_model_servers_seen"]))
    print(
        table(
            ["requests", "RSS start MiB", "max MiB", "peak (0.5 s) MiB", "VmHWM MiB", "final MiB"],
            [
                [
                    result["requests_sent"],
                    rss["start"],
                    rss["max_after_request"] or 0,
                    rss["peak_sampled"],
                    rss["hwm"],
                    rss["final"],
                ]
            ],
        )
    )
    print(
        table(
            ["s/request", "chat mean", "chat median", "memory mean", "memory median", "first 10", "last 10"],
            [
                [
                    seconds["mean_seconds"],
                    seconds["chat_mean_seconds"],
                    seconds["chat_median_seconds"],
                    seconds["memory_mean_seconds"],
                    seconds["memory_median_seconds"],
                    seconds["first_10_mean_seconds"],
                    seconds["last_10_mean_seconds"],
                ]
            ],
        )
    )
    print(
        f"prompt tokens evaluated / reused, mean: chat {seconds['chat_mean_evaluated_tokens']} / "
        f"{seconds['chat_mean_reused_tokens']}, memory {seconds['memory_mean_evaluated_tokens']} / "
        f"{seconds['memory_mean_reused_tokens']}; {seconds['prompt_tokens_per_second']} prompt tokens/s, "
        f"{seconds['output_tokens_per_second']} output tokens/s"
    )
    print(
        f"prompt tokens (first of each kind): {result['prompt_tokens']}; chat first token "
        f"{seconds['chat_mean_first_token_seconds']} s mean; errors {seconds['errors']}; "
        f"streams ended without a finish reason: {seconds['cut_off_streams']}"
    )


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP end this process as Ctrl-C does, through the `with` blocks that stop the
    server (a `timeout` or a closed terminal must not leave a model server behind)."""

    def leave(signum: int, _frame: object) -> None:
        print(f"received {signal.Signals(signum).name} at {time.strftime('%H:%M:%S')}; stopping", flush=True)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGHUP, leave)


def main(argv: list[str] | None = None) -> None:
    stop_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=FULL_RUN)
    parser.add_argument(
        "--server-args", default="", help='the cache arguments, e.g. "--cache true --cache_size 1073741824"'
    )
    parser.add_argument("--label", default="", help="results name (default: from the cache arguments)")
    parser.add_argument("--stop-above-gb", type=float, default=8.0, help="stop once RSS passes this (GiB)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--allow-other-servers", action="store_true", help=argparse.SUPPRESS)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
