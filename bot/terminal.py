"""`python -m bot chat`: talking with the bot in a terminal, through the same memory as in Discord.

It is for trying the memory with a model's key alone (or a local model server): every line said is captured, learned when the
session goes quiet and when it ends, recalled into the replies (the Discord chat's persona, memory
guide and `<background_facts>` block), and shown, erased or told with /facts, /forget ID and
/remember TEXT. This module is a user interface: it writes to the streams it is given.

- Its scope is `terminal` (`TERMINAL_SCOPE`), which Discord never produces, so nothing said here
  reaches a Discord reply and nothing said in Discord reaches this one. The session flushes only
  buffers of that scope (`MemoryService.start(scope=...)`), leaving Discord's channels to the bot.
- A person is their name: `local_user_id` turns it into a stable Discord-like id (digits), the same
  in every session, so what Ana said yesterday is recalled for Ana today.
- Message ids are `terminal-<hex>`: never digits, so no Discord deletion can ever match one.
- Lines are read on a daemon thread, one when asked for, so the prompt never shows while a reply
  prints and leaving never waits for a line nobody types; on a terminal with readline editing.
- The session ends on end of input (Ctrl-D), /quit or Ctrl-C, and then flushes what is buffered; a
  second Ctrl-C leaves without waiting. What was not learned stays in the durable buffer, and the
  next chat session (or the Discord bot) learns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import io
import logging
import signal
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import replace
from typing import Any, Protocol, TextIO

from bot.app import failure_line, failures, open_memory, open_models, provider_name
from bot.chat.prompts import FORGET_TOOL, REMEMBER_TOOL
from bot.chat.reply import CHARS_PER_TOKEN, QUERY_TURNS, Replier, ReplyRequest, ready
from bot.config import Settings
from bot.memory.events import Learned, MemoryEvent, ModelFailed
from bot.memory.model_ports import ChatModel, ChatTurn, ModelError, ModelKeyRejected, ModelRefusal, ToolCall
from bot.memory.models import (
    TERMINAL_SCOPE,
    AppliedChange,
    BufferedMessage,
    Decision,
    Fact,
    Origin,
    iso,
    positive_number,
    utcnow,
)
from bot.memory.recall import Audience, Participant
from bot.memory.remembering import RememberRequest, asks_to_remember
from bot.memory.service import MemoryService
from bot.memory.text import MAX_NAME_CHARS, clean, looks_blank, strip_background_blocks, worth_reading

log = logging.getLogger(__name__)

TERMINAL_QUIET_SECONDS = 30.0  # one person at a keyboard: learn after half a minute of quiet at most
CLOSE_SECONDS = 5.0
MAX_LISTED = 1_000
BOT_USER_ID = "0"  # the bot's own turns, kept as context for extraction only
BOT_NAME = "bot"
HELP = """Talk, and I remember what you tell me about yourself. Commands:
  /facts          what I remember about you, with ids
  /forget ID      erase one fact for good (its id from /facts)
  /remember TEXT  remember something about you now
  /flush          learn from what you said so far, now
  /quit           leave (so do Ctrl-D and Ctrl-C); what you said is learned first"""
NOTHING_REMEMBERED = "I don't remember anything about you yet. Tell me about yourself, or use /remember TEXT."
NOTHING_TO_REMEMBER = (
    "I couldn't find anything about you in that to remember (I only keep what people tell me about "
    "themselves)."
)
NOTHING_MATCHES = "I don't have anything like that about you. /facts shows what I remember."
KEY_HINT = " (`python -m bot check --online` tests the key)"
LEAVING = "Leaving: learning what you said first (Ctrl-C again to leave at once)."
NOT_LEARNED_YET = "what you said is kept and learned later (at the next chat session or bot start)"


def local_user_id(name: str) -> str:
    """A stable id (digits, as Discord's) for a name: the same name, in any case, is the same person
    in every session. It needs no Discord account, since the terminal's scope is its own."""
    digest = hashlib.blake2b(name.casefold().encode(), digest_size=7).digest()
    return str(int.from_bytes(digest, "big") + 1)


def terminal_settings(settings: Settings) -> Settings:
    """The settings with a flush schedule for one person: learn after a short quiet (or the configured
    one, if shorter) whatever was said, with no minimum chunk to wait for (that minimum is there to
    share calls between a server's channels)."""
    quiet = min(settings.memory_flush_quiet_seconds, TERMINAL_QUIET_SECONDS)
    return replace(settings, memory_flush_quiet_seconds=quiet, memory_flush_min_messages=1)


def model_problem(exc: BaseException, settings: Settings) -> str:
    """One line for a model or database failure, with a hint when the key is what is wrong."""
    if not isinstance(exc, ModelError):
        return failure_line(settings, exc)
    name = provider_name(settings, exc.purpose)
    return model_line(str(exc), key_rejected=isinstance(exc, ModelKeyRejected), name=name)


def model_line(error: str, *, key_rejected: bool, name: str) -> str:
    text = error if error.startswith(name) else f"{name}: {error}"
    return text + KEY_HINT if key_rejected else text


def describe(decision: Decision, fact: Fact, verb: str) -> str:
    """'Learned: #12 Ana lives in Porto' (or updated, already known) for a fact just stored."""
    if decision is Decision.DUPLICATE:
        what = "Already known"
    elif decision in (Decision.MERGE, Decision.INVALIDATE):
        what = "Updated"
    else:
        what = verb
    return f"{what}: #{fact.id} {fact.text}" + (" (sensitive)" if fact.sensitive else "")


def fact_line(fact: Fact) -> str:
    """'#12 · 2026-05-01 · Ana lives in Porto': the id /forget takes, the date, the whole text."""
    sensitive = " (sensitive: used only when I talk with you)" if fact.sensitive else ""
    return f"#{fact.id} · {fact.recorded_at[:10]} · {' '.join(fact.text.split())}{sensitive}"


def fact_id_of(text: str) -> int | None:
    """The fact id in '/forget 12' or '/forget #12'; None when it is not one."""
    return positive_number(text.strip().removeprefix("#"))


class LineSource(Protocol):
    async def read(self) -> str | None:
        """The next line without its line ending, or None at the end of input."""
        ...


class LineReader:
    """Lines from `stdin`, read on a daemon thread one at a time, each only when asked for.

    Asking first means the prompt never shows while a reply prints; a daemon thread means leaving
    never waits for a line nobody types. On a terminal lines come through `input()` with readline
    editing and history; on a pipe they are read plainly, with no prompt, so the chat can be scripted.
    """

    def __init__(self, stdin: TextIO, *, prompt: str) -> None:
        if isinstance(stdin, io.TextIOWrapper):  # a stray byte that is not UTF-8 must not end the session
            stdin.reconfigure(errors="replace")
        self.stdin = stdin
        self.prompt = prompt
        self.tty = stdin.isatty()
        self._asked = threading.Semaphore(0)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: asyncio.Future[str | None] | None = None

    async def read(self) -> str | None:
        self._loop = asyncio.get_running_loop()
        self._waiting = self._loop.create_future()
        if self._thread is None:
            if self.tty:
                import readline  # noqa: F401  (input() edits lines with it once imported)
            self._thread = threading.Thread(target=self._run, name="chat-input", daemon=True)
            self._thread.start()
        self._asked.release()
        return await self._waiting

    def _run(self) -> None:
        while True:
            self._asked.acquire()
            line = self._read_one()
            loop, waiting = self._loop, self._waiting
            if loop is not None and waiting is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
                    loop.call_soon_threadsafe(_settle, waiting, line)
            if line is None:
                return

    def _read_one(self) -> str | None:
        try:
            if self.tty:
                return input(self.prompt)
            line = self.stdin.readline()
        except (EOFError, OSError, ValueError):  # Ctrl-D, a closed stream
            return None
        return line.removesuffix("\n").removesuffix("\r") if line else None


def _settle(waiting: asyncio.Future[str | None], line: str | None) -> None:
    if not waiting.done():
        waiting.set_result(line)


@contextlib.contextmanager
def on_interrupt(callback: Callable[[], None]) -> Iterator[None]:
    """Call `callback` on Ctrl-C (SIGINT) instead of raising KeyboardInterrupt, where the loop can."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or not Unix
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


@contextlib.contextmanager
def terminal_kept(stdin: TextIO) -> Iterator[None]:
    """Put the terminal's modes back on leaving, even if readline was interrupted midway."""
    try:
        import termios

        fd = stdin.fileno()
        saved = termios.tcgetattr(fd) if stdin.isatty() else None
    except (ImportError, OSError, ValueError, AttributeError):
        saved = None
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class Printed:
    """The reply as the terminal shows it (the reply use case's sink): each piece written as it comes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.text = ""

    async def add(self, piece: str) -> None:
        self.text += piece
        self.out.write(piece)
        self.out.flush()

    def end_line(self) -> None:
        """End the line the reply left open, so what follows starts on a line of its own."""
        if self.text and not self.text.endswith("\n"):
            self.out.write("\n")
            self.out.flush()


class TerminalChat:
    """One person's chat session: replies with memory, the commands, and what was learned meanwhile."""

    def __init__(
        self,
        memory: MemoryService,
        model: ChatModel,
        settings: Settings,
        *,
        name: str,
        out: TextIO,
        err: TextIO,
    ) -> None:
        self.memory = memory
        self.replier = Replier(
            memory,
            model,
            turn_max_chars=settings.chat_turn_max_chars,
            prompt_max_chars=settings.chat_prompt_max_chars,
            reply_max_chars=settings.chat_max_output_tokens * CHARS_PER_TOKEN,
        )
        self.settings = settings
        self.name = name
        self.user_id = local_user_id(name)
        self.channel_id = f"terminal-{self.user_id}"
        self.out = out
        self.err = err
        self.history: list[ChatTurn] = []
        self.said: list[str] = []  # the person's lines, the context recall searches with
        self._learned: list[AppliedChange] = []
        self._failed: str | None = None  # why the last flush in the background learned nothing
        self._failures = failures(settings)
        memory.add_listener(self._on_event)

    # ---- the session ---------------------------------------------------------------------------------

    async def run(self, lines: LineSource) -> None:
        """Converse until the input ends, /quit or Ctrl-C; then learn what is left (Ctrl-C again: leave
        without waiting, and it is learned later)."""
        self.write(
            f"Chatting as {self.name} (user {self.user_id} in scope {TERMINAL_SCOPE}). "
            "/help lists the commands; /quit or Ctrl-D leaves."
        )
        interrupted = asyncio.Event()
        with on_interrupt(interrupted.set):
            if not await until(interrupted, self.converse(lines)):
                self.write("")
                self.write(LEAVING)  # at once: learning what is left may wait on the model a while
            interrupted.clear()
            if not await until(interrupted, self.flush(leaving=True)):
                self.error(f"left without learning; {NOT_LEARNED_YET}")

    async def converse(self, lines: LineSource) -> None:
        while True:
            await self.show_news()
            line = await lines.read()
            if line is None:
                return
            try:
                if not await self.handle(line):
                    return
            except self._failures as exc:
                self.error(model_problem(exc, self.settings))

    async def handle(self, line: str) -> bool:
        """Answer one line: a command or something said to the bot. False: the person is leaving."""
        text = line.strip()
        if not text:
            return True
        word, _, rest = text.partition(" ")
        command = word.lower()
        if not command.startswith("/"):
            await self.reply(text)
        elif command in ("/quit", "/exit"):
            return False
        elif command == "/help":
            self.write(HELP)
        elif command == "/facts":
            await self.list_facts()
        elif command == "/forget":
            await self.forget(rest)
        elif command == "/remember":
            self.write(await self.remember(rest) if worth_reading(rest) else "Usage: /remember TEXT")
        elif command == "/flush":
            await self.flush()
        else:
            self.write(f"There is no {word} command. /help lists them.")
        return True

    # ---- replying --------------------------------------------------------------------------------------

    async def reply(self, text: str) -> None:
        """Capture the line, answer it as the Discord chat would (recall, the model's lookups), stream the
        answer as it comes; the answer is captured as context when the line was (a line kept out with the
        no-memory marker keeps it out too)."""
        said = self.message(text)
        captured = self.memory.capture(said)
        earlier = list(self.said)
        self.said.append(text)
        del self.said[:-QUERY_TURNS]
        self.remember_turn("user", f"{self.name}: {text}")
        printed = Printed(self.out)
        try:
            answer = await self.replier.reply(self.request(text, earlier), printed)
        except ModelRefusal:
            printed.end_line()
            self.error(f"{provider_name(self.settings)} refused to answer that one.")
            return
        except ModelError as exc:
            printed.end_line()
            self.error(model_problem(exc, self.settings))
            return
        printed.end_line()
        if answer.calls:  # an explicit request is answered in the bot's own words, never claimed by the model
            said_back = await self.use_tools(answer.calls, text)
            self.write(said_back)
            self.remember_turn("model", said_back)
        elif looks_blank(answer.text):
            self.error(f"{provider_name(self.settings)} returned an empty answer; try again.")
        else:
            self.remember_turn("model", answer.text)
            if captured:
                self.memory.capture(
                    replace(
                        self.message(answer.text),
                        author_id=BOT_USER_ID,
                        author_name=BOT_NAME,
                        is_bot=True,
                        reply_to=said.message_id,
                    )
                )

    def request(self, text: str, earlier: list[str]) -> ReplyRequest:
        """The Discord chat's reply for one person: their facts only, in a private place of theirs (as
        their DMs: sensitive ones included), which search_memory looks into too."""
        return ReplyRequest(
            scope=TERMINAL_SCOPE,
            people=[Participant(self.user_id, self.name)],
            persona=self.settings.bot_persona,
            memory_on=True,
            query=text,
            earlier=earlier,
            audience=ready(Audience(self.user_id)),
            said=ready(list(self.history)),
        )

    def remember_turn(self, role: str, text: str) -> None:
        text = clean(strip_background_blocks(text), self.settings.chat_turn_max_chars)
        if text:
            self.history.append(ChatTurn("model" if role == "model" else "user", text))
            del self.history[: -self.settings.chat_history_limit]

    async def use_tools(self, calls: list[ToolCall], text: str) -> str:
        """Do what the person explicitly asked in words: remember now, or show what a forget would
        erase (nothing is forgotten before they type /forget ID)."""
        lines: list[str] = []
        for call in calls[:2]:
            what = str(call.args.get("what") or "").strip()
            if call.name == REMEMBER_TOOL.name:  # from the person's own line: the model only points
                lines.append(await self.remember(text, pointer=what, asked=asks_to_remember(text)))
            elif call.name == FORGET_TOOL.name:
                facts = await self.memory.matching_facts(TERMINAL_SCOPE, self.user_id, what or text)
                if facts:
                    lines += [
                        "These facts of yours may match; /forget ID erases one (nothing is erased before):",
                        *(f"  {fact_line(f)}" for f in facts),
                    ]
                else:
                    lines.append(NOTHING_MATCHES)
        return "\n".join(lines) or "I couldn't do that, sorry."

    # ---- the commands ----------------------------------------------------------------------------------

    async def list_facts(self) -> None:
        facts = await self.memory.list_facts(TERMINAL_SCOPE, self.user_id, limit=MAX_LISTED)
        self.write("\n".join(fact_line(f) for f in facts) if facts else NOTHING_REMEMBERED)

    async def forget(self, argument: str) -> None:
        fact_id = fact_id_of(argument)
        if fact_id is None:
            self.write("Usage: /forget ID, with a fact's id from /facts (such as /forget 12).")
            return
        count = await self.memory.forget(TERMINAL_SCOPE, self.user_id, [fact_id], actor=self.user_id)
        if not count:
            self.write(f"There is no fact #{fact_id} of yours; /facts lists them with their ids.")
        elif count > 1:
            self.write(f"Forgot #{fact_id} and its {count - 1} earlier version(s), for good.")
        else:
            self.write(f"Forgot #{fact_id}, for good.")

    async def remember(self, text: str, *, pointer: str = "", asked: bool = True) -> str:
        """Store at once what the person asked to be remembered, as /remember does in Discord."""
        result = await self.memory.remember_now(
            RememberRequest(
                TERMINAL_SCOPE,
                self.user_id,
                self.name,
                text,
                message_id=self.message(text).message_id,
                origin=Origin(self.channel_id),
                pointer=pointer,
                asked=asked,
            )
        )
        told = {fact.id for _, fact in result.changes}
        self._learned = [c for c in self._learned if c.fact_id not in told]  # said here, not again later
        lines = [describe(decision, fact, "Remembered") for decision, fact in result.changes]
        lines += [reason.told for reason in dict.fromkeys(result.refused)]
        return "\n".join(lines) or NOTHING_TO_REMEMBER

    async def flush(self, *, leaving: bool = False) -> None:
        """Learn now from what is buffered, and say what was learned."""
        try:
            await self.memory.flush_now(self.channel_id)
        except self._failures as exc:
            self._failed = None  # said here, with what follows
            self.error(f"{model_problem(exc, self.settings)}; {NOT_LEARNED_YET}")
            return
        if not await self.show_news() and not leaving:
            self.write("Nothing new to learn.")

    # ---- what was learned ------------------------------------------------------------------------------

    def _on_event(self, event: MemoryEvent) -> None:
        if event.scope != TERMINAL_SCOPE:
            return
        if isinstance(event, Learned):
            self._learned += [c for c in event.changes if c.user_id == self.user_id and c.fact_id]
        elif isinstance(event, ModelFailed):
            self._failed = model_line(
                event.error, key_rejected=event.key_rejected, name=provider_name(self.settings)
            )

    async def show_news(self) -> bool:
        """Say what flushes learned, or why one failed, since last asked (a quiet flush's news waits
        for the next prompt, so it never cuts into a line being typed); whether anything was learned."""
        if self._failed is not None:
            self.error(f"could not learn from what you said ({self._failed}); {NOT_LEARNED_YET}")
            self._failed = None
        changes, self._learned = self._learned, []
        if not changes:
            return False
        facts = {
            f.id: f for f in await self.memory.list_facts(TERMINAL_SCOPE, self.user_id, limit=MAX_LISTED)
        }
        lines = [describe(c.decision, facts[c.fact_id], "Learned") for c in changes if c.fact_id in facts]
        if lines:
            self.write("\n".join(lines))
        return bool(lines)

    # ---- plumbing --------------------------------------------------------------------------------------

    def message(self, text: str) -> BufferedMessage:
        """A line of this session as memory buffers it."""
        return BufferedMessage(
            message_id=f"terminal-{uuid.uuid4().hex}",
            scope=TERMINAL_SCOPE,
            channel_id=self.channel_id,
            author_id=self.user_id,
            author_name=self.name,
            content=text,
            created_at=iso(utcnow()),
        )

    def write(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def error(self, text: str) -> None:
        self.out.flush()
        self.err.write(f"error: {text}\n")
        self.err.flush()


async def until(stop: asyncio.Event, work: Coroutine[Any, Any, None]) -> bool:
    """Run `work` unless `stop` is set first, which cancels it; whether it ran to its end."""
    task = asyncio.create_task(work)
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if task.done():
        task.result()  # a failure of the work itself is raised
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


@contextlib.asynccontextmanager
async def session_memory(settings: Settings) -> AsyncIterator[tuple[MemoryService, ChatModel]]:
    """The memory (capturing, flushing only the terminal's scope) and the chat model, closed on leaving
    within a few seconds; the bot's last-run usage figures are left alone."""
    models = open_models(settings)
    try:
        memory = await open_memory(terminal_settings(settings), models)
    except BaseException:
        await models.aclose()
        raise
    try:
        await memory.start(scope=TERMINAL_SCOPE)
        yield memory, models.chat
    finally:
        await memory.close(CLOSE_SECONDS, record_usage=False)


async def chat(settings: Settings, *, name: str, stdin: TextIO, out: TextIO, err: TextIO) -> None:
    async with session_memory(settings) as (memory, model):
        session = TerminalChat(memory, model, settings, name=name, out=out, err=err)
        with terminal_kept(stdin):
            await session.run(LineReader(stdin, prompt=f"{name}> "))


def session_name(text: str) -> str | None:
    """The name to chat as, cleaned and on one line; None when it has no letters or digits."""
    name = " ".join(clean(text, MAX_NAME_CHARS).split())
    return name if worth_reading(name) else None


def default_name() -> str:
    """Who is at the keyboard when no --name is given: the login name, so it is the same every time."""
    try:
        return session_name(getpass.getuser()) or "you"
    except Exception:  # no login name in this environment (some containers)
        return "you"


def run_chat(settings: Settings, *, name: str, stdin: TextIO, out: TextIO, err: TextIO) -> int:
    """`python -m bot chat`: the exit code (0 once the session ended, however it ended)."""
    asyncio.run(chat(settings, name=name, stdin=stdin, out=out, err=err))
    return 0
