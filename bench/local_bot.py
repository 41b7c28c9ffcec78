"""The real bot process on llama-cpp-python's server, end to end: do its replies arrive, in time, and right?

    python -m bench.local_bot                     # README.md's server command (no prompt cache)
    python -m bench.local_bot --server-args "--cache true --cache_size 268435456 --interrupt_requests false"
    python -m bench.local_bot --bot-env OPENAI_TIMEOUT_SECONDS=600   # any bot setting, as the environment
    python -m bench.local_bot --together         # the three questions at once instead of one after another

Starts, one after the other: `python -m llama_cpp.server` with the bench's GGUF as README.md's command
line does (`--interrupt_requests false` and no prompt cache by default, or `--server-args`),
all-MiniLM-L6-v2's `/v1/embeddings` (`bench.local_model serve --embed-only`), the Discord stand-in the
end-to-end tests use (`standins.discord`), and the bot itself as a host runs it (`python -m bot`, in
its own process, configured only through the environment as README.md's local-model example does:
MODEL_PROVIDER=openai, OPENAI_TOOLS=off, OPENAI_TIMEOUT_SECONDS=300, EMBEDDING_BASE_URL ...; its flush lowered to
MEMORY_FLUSH_QUIET_SECONDS=10 and MEMORY_FLUSH_MIN_MESSAGES=1 so that it flushes once the people stop
talking). Then:

1. three people (Ana, Ben, Chloe) each say three things about themselves in #general (work, city,
   pet), a few seconds apart;
2. the bot's quiet flush learns them: the script waits until no message is pending
   (`python -m bot stats --json`) and lists what it learned (`python -m bot facts export`);
3. each person asks the bot, mentioning it, about ANOTHER of the three ("@bot what does Ben do for
   work?"), one after the other (each question waits for the previous reply), as people do; the
   questions themselves start another flush, whose memory calls meet the later replies on the server.

Measured: whether every reply arrives (a reply, not the bot's "Sorry, I couldn't come up with an answer
just now." and not a reply still marked as being written), its latency (to its first text and to its
final text), whether it names the asked person's fact (by keywords) and names no other person's fact,
the server's resident memory (max over the run, sampled every 0.5 s), and the bot's warnings and errors
(its log). Prints a table and writes bench/results/local_bot.json (`--label NAME`: local_bot_NAME.json).
The logs go to bench/.cache/local_bot_server.log (the server) and bench/.cache/local_bot_bot.log (the
bot). Needs the `quality` extra (llama-cpp-python[server]) and `python -m bench.local_model fetch`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import CACHE, ROOT, machine, table, write_json
from bench.local_server_memory import (
    MODEL_ALIAS,
    LlamaProcess,
    Sampler,
    mib,
    process_rss,
    running_model_servers,
)

# README.md's server command line ends so: no prompt cache (it grew the server past the machine's memory),
# and replies that are not cut off when a memory call arrives (the default interrupts the running stream).
DEFAULT_SERVER_ARGS = "--interrupt_requests false"
FAILED_REPLY = "Sorry, I couldn't come up with an answer just now."
STREAMING_MARKER = " ⚪"  # bot/discord_bot/discord_text.py: a reply still being written ends with it
BOT_SETTING_PREFIXES = ("DISCORD_", "GEMINI_", "GOOGLE_", "DATABASE_", "OPENAI_", "MODEL_", "EMBEDDING_")


# ---- the script and its judging ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    name: str
    statements: tuple[str, ...]
    # what each statement says, as the words a reply naming it would use
    keywords: dict[str, tuple[str, ...]] = field(default_factory=dict)


PEOPLE = (
    Person(
        "Ana",
        (
            "I'm a nurse, I work night shifts at the children's hospital",
            "I live in Porto, right by the river",
            "my cat Miso just turned three",
        ),
        {"work": ("nurse", "nursing", "hospital"), "city": ("Porto",), "pet": ("Miso", "cat")},
    ),
    Person(
        "Ben",
        (
            "I work as a carpenter, mostly kitchen cabinets these days",
            "I moved to Lyon last spring",
            "I have a parrot called Kiwi who never stops talking",
        ),
        {"work": ("carpenter", "carpentry", "cabinets"), "city": ("Lyon",), "pet": ("Kiwi", "parrot")},
    ),
    Person(
        "Chloe",
        (
            "I'm a data analyst at a shipping company",
            "I live in Oslo, it's already freezing here",
            "my dog Pixel loves the snow",
        ),
        {"work": ("analyst", "shipping"), "city": ("Oslo",), "pet": ("Pixel", "dog")},
    ),
)
CHATTER = ("haha nice", "same here honestly", "that sounds lovely")


@dataclass(frozen=True)
class Question:
    asker: str
    target: str
    asks: str  # the attribute of the target's facts it asks for
    text: str


QUESTIONS = (
    Question("Ana", "Ben", "work", "what does Ben do for work?"),
    Question("Ben", "Chloe", "city", "where does Chloe live?"),
    Question("Chloe", "Ana", "pet", "what's the name of Ana's cat?"),
)


def conversation(people: Sequence[Person] = PEOPLE) -> list[tuple[str, str]]:
    """(speaker, text) in the order they are said: a round of each person's first statement, then the
    second ..., with a bit of chatter between rounds."""
    lines: list[tuple[str, str]] = []
    for round_index in range(max(len(p.statements) for p in people)):
        for person in people:
            if round_index < len(person.statements):
                lines.append((person.name, person.statements[round_index]))
        if round_index < len(CHATTER):
            lines.append((people[round_index % len(people)].name, CHATTER[round_index]))
    return lines


def words_in(text: str, keywords: Sequence[str]) -> list[str]:
    """The keywords `text` contains as whole words (case-insensitive; "cat" is not in "category")."""
    return [k for k in keywords if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", text, re.IGNORECASE)]


def judge(reply: str | None, question: Question, people: Sequence[Person] = PEOPLE) -> dict[str, Any]:
    """What a reply to `question` shows: `arrived` (some text that is not the failure notice),
    `right` (it names the asked fact of the asked person), `others` (words of another person's facts it
    names: a mix-up) and `clean` (right, naming nobody else's fact)."""
    text = (reply or "").strip()
    failed = text.startswith(FAILED_REPLY)
    arrived = bool(text) and not failed
    target = next(p for p in people if p.name == question.target)
    right_words = words_in(text, target.keywords.get(question.asks, ())) if arrived else []
    others = sorted(
        {w for p in people if p.name != target.name for ks in p.keywords.values() for w in words_in(text, ks)}
    )
    right = bool(right_words)
    return {
        "arrived": arrived,
        "failed_notice": failed,
        "right": right,
        "right_words": right_words,
        "others": others,
        "clean": right and not others,
    }


# ---- the processes ----------------------------------------------------------------------------------------


class Embedder:
    """`python -m bench.local_model serve --embed-only`: MiniLM's /v1/embeddings; `base_url` (ending in
    /v1) once it listens. Stopped by its pid."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> Embedder:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.local_model", "serve", "--embed-only"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("listening on "):
                self.base_url = line.split()[-1].rstrip("/") + "/v1"
                return self
        self.__exit__()
        raise RuntimeError("bench.local_model serve --embed-only did not start (see its output above)")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def bot_environment(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without any bot setting (a developer's own keys stay out), the
    checkout on the path, and `extra`."""
    env = {k: v for k, v in base.items() if not k.startswith(BOT_SETTING_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def parse_setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=VALUE (a bot setting, e.g. LOG_LEVEL=DEBUG)"
        )
    return name.strip().upper(), value


class BotProcess:
    """`python -m bot` with its output (stdout and stderr) kept as lines and appended to `log`."""

    def __init__(self, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.log = log
        self.lines: list[tuple[float, str]] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.started = time.monotonic()

    async def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as out:
            out.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} python -m bot\n")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            cwd=self.cwd,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with self.log.open("a") as out:
            while raw := await self.proc.stdout.readline():
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append((time.monotonic() - self.started, line))
                out.write(line + "\n")
                out.flush()

    async def wait_line(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for _, line in self.lines if text in line), None)
            if found is not None:
                return found
            if self.proc is not None and self.proc.returncode is not None:
                break
            await asyncio.sleep(0.2)
        tail = "\n".join(line for _, line in self.lines[-20:])
        raise RuntimeError(f"the bot never logged {text!r}; its last lines:\n{tail}")

    async def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (the bot closes gracefully), SIGKILL after `timeout` seconds."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            await asyncio.wait_for(self._reader, 10)
        return self.proc.returncode

    def notable(self) -> list[str]:
        """The log lines worth reading in a report: warnings, errors and tracebacks, timed."""
        marks = ("WARNING", "ERROR", "CRITICAL", "Traceback", "did not answer", "failed", "timed out")
        return [f"{at:7.1f}s {line}" for at, line in self.lines if any(m in line for m in marks)]


async def cli_json(env: dict[str, str], cwd: Path, *args: str) -> Any:
    """`python -m bot ARGS` beside the running bot; its stdout read as JSON (or JSON lines)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"python -m bot {' '.join(args)}: exit {proc.returncode}: {err.decode()[-500:]}")
    text = out.decode()
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---- the run ----------------------------------------------------------------------------------------------


def reply_to(messages: list[dict[str, Any]], question_id: int) -> list[dict[str, Any]]:
    """The bot's messages answering the question: the one replying to it, and the parts sent after it
    (a long reply goes out in several messages, only the first a reply)."""
    first = next(
        (
            i
            for i, m in enumerate(messages)
            if str((m.get("message_reference") or {}).get("message_id")) == str(question_id)
        ),
        None,
    )
    if first is None:
        return []
    parts = [messages[first]]
    for message in messages[first + 1 :]:
        if message.get("message_reference"):
            break  # the reply to another question
        parts.append(message)
    return parts


async def wait_reply(standin: Any, channel: int, question_id: int, timeout: float) -> dict[str, Any]:
    """Seconds to the reply's first text and to its final text (no part still marked as being written,
    unchanged for 3 s); its text, or what it showed when `timeout` ran out."""
    started = time.monotonic()
    first: float | None = None
    last_text = ""
    changed = started
    final: float | None = None
    while time.monotonic() - started < timeout:
        parts = reply_to(standin.bot_messages(channel), question_id)
        text = "\n".join(p.get("content") or "" for p in parts)
        now = time.monotonic()
        if parts and first is None:
            first = now - started
        if text != last_text:
            last_text, changed = text, now
        writing = any((p.get("content") or "").endswith(STREAMING_MARKER) for p in parts)
        if parts and not writing and now - changed >= 3.0:
            final = changed - started
            break
        await asyncio.sleep(0.25)
    return {
        "first_seconds": round(first, 1) if first is not None else None,
        "final_seconds": round(final, 1) if final is not None else None,
        "timed_out": final is None,
        "still_writing": last_text.endswith(STREAMING_MARKER),
        "text": last_text,
    }


async def wait_flush(env: dict[str, str], cwd: Path, timeout: float, bot: BotProcess) -> dict[str, Any]:
    """Until the bot has flushed every captured message (none pending), polled every 10 s."""
    started = time.monotonic()
    stats: dict[str, Any] = {}
    while time.monotonic() - started < timeout:
        await asyncio.sleep(10)
        if bot.proc is not None and bot.proc.returncode is not None:
            raise RuntimeError(f"the bot ended (exit {bot.proc.returncode}) while flushing")
        try:
            stats = await cli_json(env, cwd, "stats", "--json")
        except (RuntimeError, ValueError) as exc:
            stats = {"error": str(exc)}
            continue
        if stats.get("pending_messages") == 0:
            return {"seconds": round(time.monotonic() - started, 1), "done": True, "stats": stats}
    return {"seconds": round(time.monotonic() - started, 1), "done": False, "stats": stats}


async def run_script(args: argparse.Namespace, models: Endpoints, result: dict[str, Any]) -> None:
    """The script, filling `result` as it goes (so a run stopped half-way still reports what it saw)."""
    from standins.discord import DiscordStandIn

    workdir = Path(tempfile.mkdtemp(prefix="local-bot-"))
    async with DiscordStandIn() as discord:
        guild = discord.add_guild("Bench")
        general = guild.channels["general"]
        users = {p.name: discord.add_user(p.name) for p in PEOPLE}
        names = {str(u["id"]): name for name, u in users.items()}
        settings = {
            "DISCORD_TOKEN": "bench-token",
            "DISCORD_API_BASE_URL": discord.api_base,
            "DISCORD_GATEWAY_URL": discord.gateway_url,
            "DATABASE_PATH": str(workdir / "bot.sqlite3"),
            "ADMIN_LOG_CHANNEL_ID": str(guild.channels["bot-log"]),
            # README.md's local-model example
            "MODEL_PROVIDER": "openai",
            "OPENAI_BASE_URL": models.chat_url,
            "OPENAI_TOOLS": "off",
            "OPENAI_TIMEOUT_SECONDS": "300",
            "CHAT_MODEL": MODEL_ALIAS,
            "MEMORY_MODEL": MODEL_ALIAS,
            "EMBEDDING_BASE_URL": models.embed_url,
            "EMBEDDING_MODEL": models.embed_model,
            "EMBEDDING_DIMENSIONS": "384",
            # a flush once the people stop talking, not after 20 messages and a quiet minute
            "MEMORY_FLUSH_QUIET_SECONDS": "10",
            "MEMORY_FLUSH_MIN_MESSAGES": "1",
            **dict(args.bot_env),
        }
        env = bot_environment(dict(os.environ), settings)
        result["bot_settings"] = {k: v for k, v in settings.items() if not k.startswith("DISCORD_")}
        bot = BotProcess(env, workdir, CACHE / "local_bot_bot.log")
        try:
            await bot.start()
            ready = await bot.wait_line("ready as", args.start_timeout)
            print(f"bot: {ready.strip()}", flush=True)

            said = conversation()
            for speaker, text in said:
                await discord.send_message(general, users[speaker], text)
                await asyncio.sleep(args.pause)
            print(f"{len(said)} messages said; waiting for the flush", flush=True)
            flush = await wait_flush(env, workdir, args.flush_timeout, bot)
            print(f"flush: {'done' if flush['done'] else 'NOT done'} after {flush['seconds']} s", flush=True)
            result["flush"] = flush
            learned: list[dict[str, Any]] = []
            try:
                learned = await cli_json(env, workdir, "facts", "export", "--scope", f"guild:{guild.id}")
            except (RuntimeError, ValueError) as exc:
                result["facts_error"] = str(exc)
            result["learned"] = [
                {"who": names.get(str(f.get("user_id")), f.get("user_id")), "text": f.get("text")}
                for f in learned
                if isinstance(f, dict)
            ]
            for fact in result["learned"]:
                print(f"  learned: {fact['who']}: {fact['text']}")
            result["rss_mib_after_flush"] = mib(process_rss(models.pid))

            async def ask(question: Question) -> dict[str, Any]:
                sent = await discord.send_message(
                    general, users[question.asker], question.text, mention_bot=True
                )
                print(f"{question.asker}: @bot {question.text}", flush=True)
                reply = await wait_reply(discord, general, int(sent["id"]), args.reply_timeout)
                verdict = judge(reply["text"], question)
                shown = reply["text"].replace("\n", " ")
                print(f"  -> {reply['final_seconds']} s: {shown[:300]}", flush=True)
                return {"question": question.__dict__, **reply, **verdict}

            answers: list[dict[str, Any]] = []
            result["answers"] = answers
            if args.together:
                answers += await asyncio.gather(*(ask(q) for q in QUESTIONS))
            else:
                for question in QUESTIONS:
                    answers.append(await ask(question))
        finally:
            result["bot_log_channel"] = [
                m.get("content") for m in discord.bot_messages(guild.channels["bot-log"])
            ]
            result["bot_exit"] = await asyncio.shield(bot.stop())
            result["bot_notable_log"] = bot.notable()


async def watched(script: Awaitable[None], sampler: Sampler, limit_gib: float) -> str:
    """Run `script`, stopping it once the server's resident memory passes `limit_gib`; why it stopped
    early, or ""."""
    task = asyncio.ensure_future(script)
    while not task.done():
        await asyncio.wait({task}, timeout=1.0)
        if not task.done() and sampler.peak > limit_gib * 1024**3:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return f"stopped: the server's RSS passed {limit_gib:g} GiB ({mib(sampler.peak):,} MiB)"
    task.result()
    return ""


@dataclass
class Endpoints:
    """Where the bot's models are: the chat server (`pid`: its process, whose memory is sampled) and the
    embeddings."""

    chat_url: str
    embed_url: str
    embed_model: str
    pid: int
    command: str


@contextlib.asynccontextmanager
async def local_endpoints(server_args: list[str]) -> AsyncIterator[Endpoints]:
    """llama-cpp-python's server and MiniLM, each stopped by its pid on the way out."""
    others = running_model_servers()
    if others:
        raise SystemExit("another llama_cpp.server is running; stop it first:\n" + "\n".join(others))
    with LlamaProcess(server_args, CACHE / "local_bot_server.log") as llama, Embedder() as embedder:
        command = shlex.join(["python", *llama.command[1:]])
        yield Endpoints(llama.base_url, embedder.base_url, "all-MiniLM-L6-v2", llama.pid, command)


@contextlib.asynccontextmanager
async def standin_endpoints() -> AsyncIterator[Endpoints]:
    """The OpenAI stand-in acting like llama-cpp-python's server, answering by rule (FakeBrain): the
    script's plumbing in seconds, without a model (--standin)."""
    from standins.brain import FakeBrain
    from standins.openai import OpenAIStandIn

    async with OpenAIStandIn(like_llama_cpp=True, chat_models=(MODEL_ALIAS,)) as standin:
        standin.generate_handler = FakeBrain()
        yield Endpoints(standin.base_url, standin.base_url, "all-minilm", os.getpid(), "(OpenAI stand-in)")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    server_args = shlex.split(args.server_args)
    started = time.monotonic()
    endpoints = standin_endpoints() if args.standin else local_endpoints(server_args)
    async with endpoints as models:
        with Sampler(models.pid) as sampler:
            start_rss = process_rss(models.pid)
            print(f"server: {models.command}\nRSS after loading: {mib(start_rss):,} MiB", flush=True)
            result: dict[str, Any] = {}
            stopped = await watched(run_script(args, models, result), sampler, args.stop_above_gb)
            peak = max(sampler.peak, process_rss(models.pid))
            others = sorted(sampler.others)
        command = models.command
    answers = result.get("answers", [])
    out = {
        "server_command": command,
        "server_args": [] if args.standin else server_args,
        "together": args.together,
        "stopped": stopped,
        "other_model_servers_seen": others,
        "rss_mib": {
            "start": mib(start_rss),
            "after_flush": result.pop("rss_mib_after_flush", None),
            "max": mib(peak),
        },
        "wall_minutes": round((time.monotonic() - started) / 60, 1),
        "replies_arrived": sum(a["arrived"] for a in answers),
        "replies_right": sum(a["right"] for a in answers),
        "replies_clean": sum(a["clean"] for a in answers),
        "questions": len(QUESTIONS),
        **result,
        "machine": machine(),
    }
    print_result(out)
    name = f"local_bot_{args.label}" if args.label else "local_bot"
    path = write_json(f"{name}_standin" if args.standin else name, out, partial=args.standin)
    print(f"\nwrote {path.relative_to(ROOT)}")
    return out


def print_result(out: dict[str, Any]) -> None:
    rows = []
    for a in out.get("answers", []):
        q = a["question"]
        rows.append(
            [
                f"{q['asker']} -> {q['target']} ({q['asks']})",
                "yes" if a["arrived"] else ("failure notice" if a["failed_notice"] else "no"),
                a["first_seconds"] if a["first_seconds"] is not None else "-",
                a["final_seconds"] if a["final_seconds"] is not None else "timeout",
                ", ".join(a["right_words"]) or "-",
                ", ".join(a["others"]) or "-",
            ]
        )
    print()
    if rows:
        print(table(["question", "arrived", "first s", "final s", "right fact", "other people's"], rows))
    flush = out.get("flush", {})
    if out.get("stopped"):
        print(out["stopped"])
    print(
        f"\nflush {'done' if flush.get('done') else 'not done'} in {flush.get('seconds')} s; "
        f"{len(out.get('learned', []))} facts learned; replies arrived {out['replies_arrived']}/"
        f"{out['questions']}, right {out['replies_right']}, right and naming nobody else's fact "
        f"{out['replies_clean']}; server RSS start {out['rss_mib']['start']:,} MiB, "
        f"max {out['rss_mib']['max']:,} MiB ({out['wall_minutes']} min)"
    )
    notable = out.get("bot_notable_log", [])
    if notable:
        print(f"\nthe bot's warnings and errors ({len(notable)}):")
        for line in notable[:40]:
            print(f"  {line[:300]}")


def main(argv: list[str] | None = None) -> None:
    from bench.local_server_memory import stop_on_signals

    stop_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--server-args", default=DEFAULT_SERVER_ARGS, help=f"default: {DEFAULT_SERVER_ARGS!r}"
    )
    parser.add_argument("--bot-env", type=parse_setting, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--together", action="store_true", help="ask the three questions at once")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between the people's messages")
    parser.add_argument("--flush-timeout", type=float, default=1800.0)
    parser.add_argument("--reply-timeout", type=float, default=900.0)
    parser.add_argument("--start-timeout", type=float, default=180.0)
    parser.add_argument("--stop-above-gb", type=float, default=10.0, help="stop once server RSS passes (GiB)")
    parser.add_argument("--standin", action="store_true", help="no model: the OpenAI stand-in (plumbing)")
    parser.add_argument("--label", default="", help="results name: local_bot_LABEL.json")
    args = parser.parse_args(argv)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
