"""The admin log: coalescing per guild, channel choice, no forgotten text, Discord errors logged once."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from bot.config import Settings
from bot.discord_bot.adminlog import AdminLog, flush_line, short_error
from bot.memory.events import Forgotten, ModelFailed, OptedIn, OptedOut, Skipped
from bot.memory.models import COMMUNITY_ID, AppliedChange, Decision, GuildSettings, NewFact
from bot.memory.service import MemoryService

INTERVAL = 0.2
GUILD = 111
OTHER_GUILD = 222


@dataclass
class FakeChannel:
    id: int
    guild_id: int
    error: Exception | None = None
    sent: list[tuple[float, str, Any]] = field(default_factory=list)
    attempts: int = 0

    @property
    def guild(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.guild_id)

    async def send(self, content: str, *, allowed_mentions: Any = None) -> None:
        self.attempts += 1
        if self.error is not None:
            raise self.error
        self.sent.append((time.monotonic(), content, allowed_mentions))


class FakeMemory:
    def __init__(self) -> None:
        self.settings: dict[str, GuildSettings] = {}

    def guild(self, guild_id: int | str) -> GuildSettings:
        return self.settings.get(str(guild_id)) or GuildSettings(str(guild_id))


class FakeBot:
    """What AdminLog uses of the bot: memory.guild(), the channel cache, names, settings."""

    def __init__(self, *channels: FakeChannel, memory: Any = None) -> None:
        self.channels = {c.id: c for c in channels}
        self.memory = memory or FakeMemory()
        self.settings = replace(Settings(), gemini_api_key="AIzaSECRETKEY123")
        self.members = {(GUILD, 5): "Alice", (GUILD, 6): "Bob"}

    def get_channel(self, channel_id: int) -> FakeChannel | None:
        return self.channels.get(channel_id)

    def get_partial_messageable(self, channel_id: int, *, guild_id: int | None = None) -> FakeChannel:
        return self.channels.setdefault(channel_id, FakeChannel(channel_id, guild_id or 0))

    def get_guild(self, guild_id: int) -> Any:
        members = {
            uid: SimpleNamespace(display_name=n) for (g, uid), n in self.members.items() if g == guild_id
        }
        return SimpleNamespace(get_member=members.get)

    def get_user(self, user_id: int) -> None:
        return None


def http_error(cls: type[discord.HTTPException], status: int) -> discord.HTTPException:
    return cls(SimpleNamespace(status=status, reason="nope"), "refused")


async def wait_for(predicate: Any, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


@pytest.fixture
async def channel_and_log() -> Any:
    channel = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(channel), default_channel_id=channel.id, interval=INTERVAL)
    log.start()
    yield channel, log
    await log.stop(timeout=1)


async def test_lines_within_the_interval_become_one_message(channel_and_log: Any) -> None:
    channel, log = channel_and_log
    for n in range(3):
        log.post(GUILD, f"line {n}")
        await asyncio.sleep(INTERVAL / 10)
    await wait_for(lambda: channel.sent)
    await asyncio.sleep(INTERVAL * 1.5)
    assert [content for _, content, _ in channel.sent] == ["line 0\nline 1\nline 2"]
    mentions = channel.sent[0][2]
    assert isinstance(mentions, discord.AllowedMentions)
    assert not (mentions.everyone or mentions.users or mentions.roles)


async def test_messages_to_a_guild_are_at_least_an_interval_apart(channel_and_log: Any) -> None:
    channel, log = channel_and_log
    log.post(GUILD, "first")
    await wait_for(lambda: len(channel.sent) == 1)
    log.post(GUILD, "second")
    log.post(GUILD, "third")
    await wait_for(lambda: len(channel.sent) == 2)
    (t1, _, _), (t2, second, _) = channel.sent
    assert second == "second\nthird"
    assert t2 - t1 >= INTERVAL * 0.95


async def test_a_long_batch_is_split_under_discords_limit(channel_and_log: Any) -> None:
    channel, log = channel_and_log
    for n in range(60):
        log.post(GUILD, f"{n:03d} " + "x" * 96)
    await wait_for(lambda: channel.sent)
    await asyncio.sleep(0.05)
    parts = [content for _, content, _ in channel.sent]
    assert len(parts) >= 3
    assert all(len(p) <= 2000 for p in parts)
    assert "\n".join(parts).count("x" * 96) == 60


async def test_stop_posts_what_is_queued_at_once() -> None:
    channel = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(channel), default_channel_id=channel.id, interval=60)
    log.start()
    log.post(GUILD, "shutting down")
    await log.stop(timeout=1)
    assert [c for _, c, _ in channel.sent] == ["shutting down"]
    log.post(GUILD, "after stop")
    await asyncio.sleep(0.05)
    assert len(channel.sent) == 1


@pytest.mark.parametrize("error", [http_error(discord.Forbidden, 403), http_error(discord.NotFound, 404)])
async def test_a_refusing_channel_is_warned_about_once(
    error: discord.HTTPException, caplog: pytest.LogCaptureFixture
) -> None:
    channel = FakeChannel(900, GUILD, error=error)
    log = AdminLog(FakeBot(channel), default_channel_id=channel.id, interval=0.05)
    log.start()
    with caplog.at_level(logging.WARNING, logger="bot.discord_bot.adminlog"):
        for n in range(3):
            log.post(GUILD, f"line {n}")
            await wait_for(lambda n=n: channel.attempts == n + 1)
    await log.stop(timeout=1)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "900" in warnings[0].getMessage()


async def test_other_http_errors_are_logged_and_the_log_keeps_going(caplog: pytest.LogCaptureFixture) -> None:
    channel = FakeChannel(900, GUILD, error=http_error(discord.HTTPException, 500))
    log = AdminLog(FakeBot(channel), default_channel_id=channel.id, interval=0.05)
    log.start()
    with caplog.at_level(logging.WARNING, logger="bot.discord_bot.adminlog"):
        log.post(GUILD, "one")
        await wait_for(lambda: channel.attempts == 1)
        channel.error = None
        log.post(GUILD, "two")
        await wait_for(lambda: channel.sent)
    await log.stop(timeout=1)
    assert [c for _, c, _ in channel.sent] == ["two"]
    assert any("failed" in r.getMessage() for r in caplog.records)


def test_the_guild_setting_wins_over_the_default_channel() -> None:
    default, configured = FakeChannel(900, GUILD), FakeChannel(901, GUILD)
    bot = FakeBot(default, configured)
    bot.memory.settings[str(GUILD)] = GuildSettings(str(GUILD), log_channel_id="901")
    log = AdminLog(bot, default_channel_id=default.id)
    assert log.channel_for(GUILD) is configured


def test_a_configured_channel_missing_from_the_cache_is_still_used() -> None:
    bot = FakeBot()
    bot.memory.settings[str(GUILD)] = GuildSettings(str(GUILD), log_channel_id="955")
    channel = AdminLog(bot, default_channel_id=None).channel_for(GUILD)
    assert channel is not None and channel.id == 955


def test_the_default_channel_serves_only_its_own_guild() -> None:
    default = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(default), default_channel_id=default.id)
    assert log.channel_for(GUILD) is default
    assert log.channel_for(OTHER_GUILD) is None
    assert AdminLog(FakeBot(default), default_channel_id=None).channel_for(GUILD) is None
    assert AdminLog(FakeBot(), default_channel_id=12345).channel_for(GUILD) is None


async def test_lines_for_a_guild_without_a_channel_are_dropped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    default = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(default), default_channel_id=default.id, interval=0.05)
    log.start()
    with caplog.at_level(logging.WARNING, logger="bot.discord_bot.adminlog"):
        log.post(OTHER_GUILD, "not for the default channel")
        log.post(GUILD, "for it")
        await wait_for(lambda: default.sent)
        await log.stop(timeout=1)
    assert [c for _, c, _ in default.sent] == ["for it"]
    assert not caplog.records


def test_flush_line_counts_decisions_and_names_people() -> None:
    def change(decision: Decision, name: str) -> AppliedChange:
        return AppliedChange(decision, f"guild:{GUILD}", name.lower(), name, 1)

    changes = [
        change(Decision.ADD, "Alice"),
        change(Decision.ADD, "Bob"),
        change(Decision.KEEP, "Alice"),
        change(Decision.MERGE, "Alice"),
        change(Decision.INVALIDATE, "Bob"),
        change(Decision.DUPLICATE, "Bob"),
        change(Decision.DUPLICATE, "Alice"),
    ]
    assert flush_line(changes, 12) == (
        "Learned from 12 messages: 3 added (Alice, Bob), 1 merged (Alice), 1 invalidated (Bob), 2 duplicates"
    )
    assert flush_line([change(Decision.DUPLICATE, "Al")], 1) == "Learned from 1 message: 1 duplicate"


def test_names_in_lines_cannot_ping_or_format() -> None:
    line = flush_line([AppliedChange(Decision.ADD, "dm", "1", "**@everyone**", 1)], 1)
    assert "\\*\\*" in line


def test_dm_events_are_logged_but_never_posted(caplog: pytest.LogCaptureFixture) -> None:
    default = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(default), default_channel_id=default.id)
    with caplog.at_level(logging.INFO, logger="bot.discord_bot.adminlog"):
        log.on_memory_event(OptedOut("dm", "5"))
    assert not log._batches
    assert any("dm" in r.getMessage() for r in caplog.records)


def test_opt_events_name_the_member_without_a_mention() -> None:
    log = AdminLog(FakeBot(), default_channel_id=None)
    out = log.describe(OptedOut(f"guild:{GUILD}", "5"))
    back = log.describe(OptedIn(f"guild:{GUILD}", "77"))
    assert out == "Alice opted out of being remembered."
    assert back == "user 77 opted back in to being remembered."


def test_forgotten_lines_have_counts_and_who_asked() -> None:
    log = AdminLog(FakeBot(), default_channel_id=None)
    scope = f"guild:{GUILD}"
    by_admin = Forgotten(scope, "5", 4, everything=True, actor="6")
    assert log.describe(by_admin) == "Forgot 4 facts of Alice (everything, by Bob)."
    deleted = Forgotten(scope, "5", 1, reason="source deleted")
    assert log.describe(deleted) == "Forgot 1 fact of Alice (source deleted)."


def test_model_errors_are_short_name_the_model_and_hide_the_key() -> None:
    log = AdminLog(FakeBot(), default_channel_id=None)
    error = "HTTP 400 for https://x/models?key=AIzaSECRETKEY123&alt=sse: bad request\nTraceback ..."
    line = log.describe(ModelFailed(f"guild:{GUILD}", "extract", error, 7))
    assert line is not None
    assert "SECRETKEY" not in line and "Traceback" not in line
    assert line.startswith("Gemini (gemini-flash-lite-latest) extract failed: HTTP 400")
    embedding = log.describe(ModelFailed(f"guild:{GUILD}", "embed", "HTTP 503", 7))
    assert embedding is not None and embedding.startswith("Gemini (gemini-embedding-001) embed failed")
    assert line.endswith("(7 messages kept for a retry)")
    assert len(short_error("x" * 5000)) <= 200


def test_every_line_names_the_provider_in_use_and_hides_every_key() -> None:
    bot = FakeBot()
    bot.settings = replace(
        Settings(),
        model_provider="openai",
        openai_base_url="http://127.0.0.1:8080/v1",
        openai_api_key="sk-local-SECRET-42",
        discord_token="MTIz.discord.SECRET",
    )
    log = AdminLog(bot, default_channel_id=None)
    failed = log.describe(
        ModelFailed(f"guild:{GUILD}", "extract", "401 for sk-local-SECRET-42 and MTIz.discord.SECRET", 2)
    )
    refused = log.describe(Skipped(f"guild:{GUILD}", 1, refused=True, channel_id="42"))
    assert failed is not None and refused is not None
    assert failed.startswith("127.0.0.1:8080 (gpt-4o-mini) extract failed") and "SECRET" not in failed
    assert "Gemini" not in failed + refused and "127.0.0.1:8080 (gpt-4o-mini) refused to read" in refused


def test_skipped_messages_name_their_channel() -> None:
    log = AdminLog(FakeBot(), default_channel_id=None)
    refused = Skipped(f"guild:{GUILD}", 1, refused=True, channel_id="42")
    unusable = Skipped(f"guild:{GUILD}", 2, refused=False, error="does not fit\nmore", channel_id="43")
    assert log.describe(refused) == (
        "Skipped 1 message in <#42> that Gemini (gemini-flash-lite-latest) refused to read (safety or "
        "recitation); the rest was learned."
    )
    assert log.describe(unusable) == (
        "Gave up on 2 messages in <#43>: the answers of Gemini (gemini-flash-lite-latest) stayed unusable, "
        "read alone too (does not fit)"
    )


async def test_forgetting_through_the_service_never_logs_the_fact_text(service: MemoryService) -> None:
    channel = FakeChannel(900, GUILD)
    log = AdminLog(FakeBot(channel, memory=service), default_channel_id=channel.id, interval=0.05)
    service.add_listener(log.on_memory_event)
    log.start()
    scope = f"guild:{GUILD}"
    secrets = ["Alice's password hint is swordfish", "Alice was diagnosed with a rare condition"]
    await service.import_facts([NewFact(scope, "5", "Alice", text, ["m1"]) for text in secrets])
    first, _ = await service.list_facts(scope, "5")
    assert await service.forget(scope, "5", [first.id]) == 1
    assert await service.forget(scope, "5", None, actor="6") == 1
    await log.stop(timeout=1)
    posted = "\n".join(c for _, c, _ in channel.sent)
    assert posted == "Forgot 1 fact of Alice.\nForgot 1 fact of Alice (everything, by Bob)."
    assert "swordfish" not in posted and "diagnosed" not in posted


def test_the_community_is_named_as_the_server_never_as_a_member() -> None:
    log = AdminLog(FakeBot(), default_channel_id=None)
    deleted = Forgotten(f"guild:{GUILD}", COMMUNITY_ID, 2, reason="source deleted")
    assert log.describe(deleted) == "Forgot 2 facts of the server (community memory) (source deleted)."
