"""What an operator meets in the first hour, through the wire: start-up, per-server figures, clear logs."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import discord
import pytest

from bot.chat import reply as reply_use_case
from tests.e2e.world import World, eventually, world

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]

# View Channels, Send Messages, Send Messages in Threads, Read Message History (README, step 4).
NEEDED_PERMISSIONS = (1 << 10) | (1 << 11) | (1 << 38) | (1 << 16)


async def test_start_up_logs_the_invite_url_and_asks_discord_for_no_member_lists(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="bot.discord_bot.client"):
        async with world(tmp_path) as w:
            w.discord.add_guild("Large", offline_members=5000)  # joined while running: GUILD_CREATE

            async def joined() -> bool:
                return len(w.bot.guilds) == 3

            await eventually(joined, what="the large guild to be joined")
            assert w.discord.member_requests == []  # nothing needs the whole member list
            application_id = w.bot.application_id
    [line] = [r.getMessage() for r in caplog.records if "invite" in r.getMessage()]
    assert f"client_id={application_id}" in line and "applications.commands" in line
    assert f"permissions={NEEDED_PERMISSIONS}" in line
    assert discord.Permissions(NEEDED_PERMISSIONS).read_message_history


async def stats_text(w: World) -> str:
    inter = await w.discord.invoke_command(
        w.alice, "memory-admin", channel_id=w.general, subcommand="stats", options={}
    )
    body = await inter.wait_response()
    return str(body["data"]["content"])


async def ask(w: World, channel_id: int, user: dict[str, Any]) -> None:
    before = len(w.discord.bot_messages(channel_id))
    await w.discord.send_message(channel_id, user, "how are you?", mention_bot=True)

    async def answered() -> bool:
        return len(w.discord.bot_messages(channel_id)) > before

    await eventually(answered, what="the bot's answer")


async def test_memory_admin_stats_shows_this_servers_model_use_only(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        beta_general = w.beta.channels["general"]
        await ask(w, beta_general, w.bob)
        await ask(w, beta_general, w.bob)
        report = await stats_text(w)
        assert "No model calls yet." in report and "all servers" not in report
        await ask(w, w.general, w.bob)
        report = await stats_text(w)
        assert "chat: 1 call," in report


async def test_a_recall_past_its_deadline_is_logged_with_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with world(tmp_path) as w:
        monkeypatch.setattr(reply_use_case, "RECALL_DEADLINE_SECONDS", 0.5)
        w.gemini.hang_next(kind="embed")
        with caplog.at_level(logging.WARNING, logger="bot.chat.reply"):
            await ask(w, w.general, w.alice)
            await asyncio.sleep(0)
    [line] = [r.getMessage() for r in caplog.records if "recall failed" in r.getMessage()]
    assert line.endswith("answering without memory: no answer within 0.5 s")
