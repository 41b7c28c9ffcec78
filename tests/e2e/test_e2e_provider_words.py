"""Every word an admin or an operator reads names the provider and the model in use: the bot on an
OpenAI-compatible endpoint whose extraction answers stay unusable writes its admin log, `/memory-admin
stats`, `stats` and `check` without a word of Gemini, and with the endpoint and the model that ran."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.memory.flushing import MAX_BAD_ANSWERS
from bot.memory.model_ports import ModelError
from bot.memory.prompts.extraction import EXTRACT_TASK
from bot.memory.prompts.selection import SELECT_TASK
from standins.brain import system_text
from tests.e2e import world as world_module
from tests.e2e.test_e2e_commands import command
from tests.e2e.world import world
from tests.integration.test_cli import clean_env, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]

UNUSABLE = '{"error": {"code": 500, "message": "internal"}}'


@pytest.fixture
def on_openai() -> Iterator[None]:
    world_module.model = "openai"
    yield
    world_module.model = "gemini"


def unusable_reading(brain: Any) -> Any:
    """The stand-in's brain, but every extraction or selection answer is off its schema."""

    def answer(body: dict[str, Any]) -> str:
        return UNUSABLE if system_text(body).startswith((EXTRACT_TASK, SELECT_TASK)) else brain(body)

    return answer


@pytest.mark.usefixtures("on_openai")
async def test_on_openai_no_word_of_gemini_in_the_admin_log_stats_or_check(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        host = w.gemini.base_url.split("//")[1].split("/")[0]
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.gemini.generate_handler = unusable_reading(w.brain)
        said = await w.say(w.general, w.alice, "I live in Lisbon")
        for _ in range(MAX_BAD_ANSWERS - 1):
            with pytest.raises(ModelError):
                await w.bot.memory.flush_channel(str(w.general))
        assert await w.bot.memory.flush_channel(str(w.general)) == 0  # the last attempt: skipped
        assert not await w.captured(said["id"])
        await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "Gave up on 1 message" in m["content"], timeout=10
        )
        logged = "\n".join(m["content"] for m in w.discord.channel_messages(log_channel))
        assert f"{host} (gpt-4o-mini) extract failed" in logged
        assert f"the answers of {host} (gpt-4o-mini) stayed unusable" in logged
        _, data = await command(w, w.alice, "memory-admin", w.alpha, subcommand="stats")
        admin_stats = data["content"]
        assert (
            "Models: gpt-4o-mini (chat and memory) and nomic-embed-text (embeddings), on " + host
            in admin_stats
        )
        assert "extract: " in admin_stats and "No recalls since the bot started." in admin_stats
        settings = w.bot.settings
        env = clean_env(
            MODEL_PROVIDER="openai",
            OPENAI_BASE_URL=w.gemini.base_url,
            OPENAI_API_KEY="test-key",
            EMBEDDING_MODEL="nomic-embed-text",
            OPENAI_MAX_RETRIES="0",
            **(
                {"DATABASE_URL": settings.database_url}
                if settings.database_url
                else {"DATABASE_PATH": str(settings.database_path)}
            ),
        )
        code, checked, check_err = await run_cli("check", "--online", env=env, cwd=tmp_path)
    assert "CHAT_MODEL = gpt-4o-mini (OpenAI's default)" in checked and f"{host}: OK" in checked
    assert "warning: EMBEDDING_MODEL=nomic-embed-text has no calibrated distance cuts" in checked
    assert "HTTP Request" not in check_err and code == 1  # only DISCORD_TOKEN is missing
    code, stats, stats_err = await run_cli("stats", env=env, cwd=tmp_path)
    assert code == 0, stats_err
    assert "Model use in the bot's last run: Models: gpt-4o-mini (chat and memory)" in stats
    assert "  extract: " in stats and "null" not in stats and "{" not in stats
    for words in (logged, admin_stats, checked, check_err, stats, stats_err):
        assert "Gemini" not in words and "GEMINI" not in words
