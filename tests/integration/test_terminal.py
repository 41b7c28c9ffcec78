"""The terminal chat's session in-process: real SQLite, the real Gemini client against the stand-in."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.config import Settings
from bot.memory.lookup import short
from bot.memory.models import TERMINAL_SCOPE, BufferedMessage, NewFact, valid_scope
from bot.memory.recall import Audience, Participant
from bot.terminal import LineReader, TerminalChat, local_user_id, session_memory, session_name
from standins.brain import FakeBrain, offered_tools, system_text
from standins.gemini import GeminiStandIn, function_parts
from tests.conftest import make_settings
from tests.e2e.world import eventually

ANA = local_user_id("Ana")


def settings_for(tmp_path: Path, standin: GeminiStandIn, **overrides: object) -> Settings:
    return make_settings(tmp_path, gemini_base_url=standin.base_url, gemini_max_retries=0, **overrides)


@asynccontextmanager
async def session(
    settings: Settings, name: str = "Ana"
) -> AsyncIterator[tuple[TerminalChat, io.StringIO, io.StringIO]]:
    """A session, with its output and its error stream to read back."""
    out, err = io.StringIO(), io.StringIO()
    async with session_memory(settings) as (memory, model):
        yield TerminalChat(memory, model, settings, name=name, out=out, err=err), out, err


class Typing:
    """Lines typed one by one while the session runs; None ends the input."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()

    async def read(self) -> str | None:
        return await self.lines.get()


def test_names_are_stable_digits_and_the_scope_is_one_discord_never_uses() -> None:
    assert local_user_id("Ana") == local_user_id("ANA") == ANA and ANA.isdigit()
    assert local_user_id("Bo") != ANA
    assert (
        valid_scope(TERMINAL_SCOPE)
        and TERMINAL_SCOPE not in ("dm",)
        and not TERMINAL_SCOPE.startswith("guild:")
    )
    assert session_name("  Ana\n Maria ") == "Ana Maria" and session_name("!!") is None


async def test_a_quiet_session_learns_and_says_so_before_the_next_prompt(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, _ = gemini_brain
    settings = settings_for(tmp_path, standin, memory_flush_quiet_seconds=0.2)
    async with session(settings) as (chat, out, err):
        typing = Typing()
        running = asyncio.create_task(chat.run(typing))
        await typing.lines.put("I have two cats.")

        async def learned() -> bool:
            return bool(await chat.memory.list_facts(TERMINAL_SCOPE, ANA))

        await eventually(learned, what="a flush after the quiet period")
        assert "Learned:" not in out.getvalue()  # not while a line may be being typed
        await typing.lines.put("/help")
        await typing.lines.put(None)
        await running
    text = out.getvalue()
    assert err.getvalue() == ""
    assert text.index("/facts          what I remember") < text.index("Learned: #1 Ana has two cats")
    assert text.count("Ana has two cats") == 1  # the flush on leaving had nothing left to learn


async def test_remember_forget_and_requests_in_words(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, brain = gemini_brain
    async with session(settings_for(tmp_path, standin)) as (chat, out, err):
        for line in (
            "/remember I am vegetarian",
            "/remember",
            "remember that I love jazz",
            "forget that I love jazz",
            "/facts",
        ):
            assert await chat.handle(line)
        text = out.getvalue()
        assert "Remembered: #1 Ana is vegetarian\n" in text and "Usage: /remember TEXT" in text
        assert "Remembered: #2 Ana loves jazz" in text  # the tool, answered in the bot's words
        assert "Noted, thanks." not in text
        assert "These facts of yours may match" in text and "  #2 · " in text
        assert [f.text for f in await chat.memory.list_facts(TERMINAL_SCOPE, ANA)] == [
            "Ana loves jazz",
            "Ana is vegetarian",
        ]  # a forget in words erases nothing by itself
        assert {t["name"] for d in brain.chat_requests[0]["tools"] for t in d["functionDeclarations"]} == {
            "remember",
            "forget",
            "search_memory",  # as in Discord, since the terminal replies through the same use case
        }
        for line in ("/forget #2", "/forget 2", "/forget two"):
            assert await chat.handle(line)
        assert not await chat.show_news()  # what /remember stored was said then, not again as news
    assert err.getvalue() == ""
    text = out.getvalue()
    assert "Forgot #2, for good." in text
    assert "There is no fact #2 of yours; /facts lists them with their ids." in text
    assert "Usage: /forget ID" in text


async def test_the_model_looks_into_the_persons_own_memory_with_search_memory(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, brain = gemini_brain
    dog = "I have a dog called Rex who loves chasing the red ball in the park every single Sunday morning"
    # Nothing is near enough to the question to be recalled into the block: what is known, is looked up.
    settings = settings_for(tmp_path, standin, recall_max_distance=0.0001)
    async with session(settings) as (chat, out, err):
        await chat.handle(f"/remember {dog}")
        await chat.handle("/remember I have diabetes")
        await chat.handle("do you remember anything about me?")
    assert err.getvalue() == ""
    first, listed, read = brain.chat_requests
    assert "search_memory" in offered_tools(first) and "<background_facts>" not in system_text(first)
    assert [c["args"] for c in function_parts(listed, "functionCall")] == [{"person": "Ana", "query": ""}]
    [newest] = [r["response"] for r in function_parts(listed, "functionResponse")]
    ana_dog = dog.replace("I have", "Ana has")
    # Her own sensitive fact too: the terminal is a private place of hers, as her DMs are.
    assert sorted(f["text"] for f in newest["facts"]) == [short(ana_dog), "Ana has diabetes"]
    assert "search_memory" not in offered_tools(read)  # the texts read in full, the model must answer
    assert out.getvalue().endswith(f"From memory: {ana_dog}\n")


async def test_terminal_and_discord_memories_never_meet(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, brain = gemini_brain
    async with session(settings_for(tmp_path, standin)) as (chat, out, err):
        # The same id in Discord's scopes (a DM, a server): none of it is the terminal's.
        await chat.memory.import_facts(
            [
                NewFact("dm", ANA, "Ana", "Ana works as a nurse", ["1"]),
                NewFact("guild:5", ANA, "Ana", "Ana works as a pilot", ["2"]),
            ]
        )
        await chat.handle("/remember I work as a baker")
        await chat.handle("/facts")
        await chat.handle("What do I work as?")
        assert "nurse" not in out.getvalue() and "pilot" not in out.getvalue()
        system = system_text(brain.chat_requests[-1])
        assert "Ana works as a baker" in system and "nurse" not in system and "pilot" not in system
        assert [f.text for f in await chat.memory.list_facts("dm", ANA)] == ["Ana works as a nurse"]
        for scope in ("dm", "guild:5"):
            recalled = await chat.memory.recall(
                scope, [Participant(ANA, "Ana")], "work baker", audience=Audience.operator()
            )
            assert "baker" not in recalled.block and "Ana works as a" in recalled.block
    assert err.getvalue() == ""


async def test_gemini_failing_is_one_line_and_the_session_goes_on(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, _ = gemini_brain
    async with session(settings_for(tmp_path, standin)) as (chat, out, err):
        standin.fail_next(503, kind="stream")
        await chat.handle("I live in Porto.")
        assert err.getvalue().splitlines() == [
            "error: Gemini server error [HTTP 503 UNAVAILABLE: stand-in fault 503]"
        ]
        await chat.handle("Are you there?")
        assert out.getvalue().endswith("Noted, thanks.\n")
        standin.fail_next(500, count=2, kind="generate")  # the extraction call, then the leaving flush's
        await chat.flush()
        await chat.flush(leaving=True)
        assert err.getvalue().count("what you said is kept and learned later") == 2
        assert await chat.memory.list_facts(TERMINAL_SCOPE, ANA) == []
    async with session(settings_for(tmp_path, standin)) as (chat, out, err):
        await chat.flush()  # kept in the durable buffer: the next session learns it
        assert "Learned: #1 Ana lives in Porto" in out.getvalue()


async def test_a_rejected_key_says_which_setting_and_how_to_test_it(tmp_path: Path) -> None:
    async with GeminiStandIn(api_key="the-right-key") as standin:
        standin.generate_handler = FakeBrain()
        settings = settings_for(tmp_path, standin, gemini_api_key="a-wrong-key")
        async with session(settings) as (chat, out, err):
            typing = Typing()
            for line in ("Hello", "/remember I am vegetarian", "/facts", None):
                await typing.lines.put(line)
            await chat.run(typing)
    errors = err.getvalue().splitlines()
    assert len(errors) == 3  # the reply, /remember, and the flush on leaving
    assert all("Gemini rejected the API key (check GEMINI_API_KEY)" in e for e in errors)
    assert all("`python -m bot check --online` tests the key" in e for e in errors)
    assert "I don't remember anything about you yet." in out.getvalue()  # and the session went on


async def test_the_line_reader_reads_a_pipe_to_its_end() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"first\nsecond line\r\nlast without newline")
    os.close(write_end)
    with os.fdopen(read_end, encoding="utf-8") as stdin:
        reader = LineReader(stdin, prompt="Ana> ")
        assert not reader.tty
        lines = [await reader.read() for _ in range(4)]
    assert lines == ["first", "second line", "last without newline", None]


async def test_a_chat_session_leaves_discords_buffers_to_the_bot(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, _ = gemini_brain
    server_line = BufferedMessage(
        "901", "guild:5", "77", "12", "Bo", "I live in Oslo.", "2026-01-01T00:00:00Z"
    )
    async with session(settings_for(tmp_path, standin)) as (chat, _, _):
        assert chat.memory.capture(server_line, guild_id="5")  # as the Discord bot left it, unflushed
    async with session(settings_for(tmp_path, standin, memory_flush_quiet_seconds=0.1)) as (chat, _, _):
        await chat.handle("I live in Porto.")

        async def learned() -> bool:
            return bool(await chat.memory.list_facts(TERMINAL_SCOPE, ANA))

        await eventually(learned, what="the terminal's quiet flush")
        await chat.flush()
        assert await chat.memory.list_facts("guild:5", "12") == []
        assert (await chat.memory.stats("guild:5"))["pending_messages"] == 1


async def test_answers_are_kept_as_context_unless_the_line_was_kept_out(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, brain = gemini_brain
    async with session(settings_for(tmp_path, standin)) as (chat, out, err):

        async def buffered() -> list[tuple[str, int]]:
            await chat.memory.capture_buffer.wait_written()
            rows = chat.memory.store.sync.conn.execute(
                "SELECT author_name, is_bot FROM pending_messages ORDER BY seq"
            )
            return [tuple(r) for r in rows]

        await chat.handle("I live in Porto.")
        assert await buffered() == [("Ana", 0), ("bot", 1)]
        await chat.handle("/flush")
        await chat.handle("!nomem I live in Lisbon.")
        await chat.handle("/flush")
        assert await buffered() == []  # neither the line nor the answer to it
        assert out.getvalue().endswith("Noted, thanks.\nNothing new to learn.\n")
        assert "Learned: #1 Ana lives in Porto" in out.getvalue() and len(brain.chat_requests) == 2
    assert err.getvalue() == ""
