"""The bot on an OpenAI-compatible endpoint that does less than OpenAI (no tools, no images, no response
schema): it still answers and learns, says once in the log what it goes without, and `check --online`
names what the endpoint takes. Measured against the OpenAI stand-in's modes (the README's table)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.app import probe_models
from bot.config import Settings
from bot.discord_bot.cogs.chat import FAILED_REPLY
from standins.brain import FakeBrain, system_text
from standins.discord import Upload
from standins.openai import OpenAIStandIn
from tests.e2e import world as world_module
from tests.e2e.world import world
from tests.integration.test_cli import clean_env, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def on_openai() -> Iterator[None]:
    world_module.model = "openai"
    yield
    world_module.model = "gemini"


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 16), "blue").save(out, "PNG")
    return out.getvalue()


@pytest.mark.usefixtures("on_openai")
async def test_an_endpoint_without_tools_or_images_answers_learns_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with world(tmp_path) as w:
        w.gemini.no_tools = "reject"  # type: ignore[attr-defined]
        w.gemini.no_images = True  # type: ignore[attr-defined]
        scope = f"guild:{w.alpha.id}"
        with caplog.at_level(logging.WARNING, logger="bot.llm.openai_compat"):
            for text in ("look at my cat", "remember that I like tea", "and this one?"):
                before = len(w.chat_requests())
                await w.discord.send_message(
                    w.general, w.alice, text, mention_bot=True, files=[Upload("cat.png", png(), "image/png")]
                )
                reply = await w.discord.wait_for_bot_message(
                    w.general, lambda m, n=before: len(w.chat_requests()) > n and "⚪" not in m["content"]
                )
                assert reply["content"] == "Nice to hear from you!" and reply["content"] != FAILED_REPLY
        refused = [r.getMessage() for r in caplog.records if "the bot goes on without them" in r.getMessage()]
        assert len(refused) == 2 and "refuses tools" in refused[0] and "refuses images" in refused[1]
        last = w.chat_requests()[-1]
        assert "tools" not in last and "image the model cannot see" in str(last["contents"])
        assert "tell them to use /remember or /forget" in system_text(last)
        assert w.bot.models.usage.snapshot()["chat"]["errors"] == 0
        await w.say(w.general, w.bob, "I work as a carpenter")
        await w.flush()
        assert [f.text for f in await w.facts(scope, w.bob)] == ["bob works as a carpenter"]


MODES: list[tuple[dict[str, Any], str]] = [
    ({}, "tools: yes, images: yes, JSON: response schema"),
    ({"rejects_json_schema": True}, "tools: yes, images: yes, JSON: JSON mode with the schema"),
    ({"ignores_response_format": True}, "tools: yes, images: yes, JSON: response schema"),
    ({"no_tools": "reject"}, "tools: no (the endpoint refuses them), images: yes, JSON: response schema"),
    ({"no_images": True}, "tools: yes, images: no (the endpoint refuses them), JSON: response schema"),
    # json_schema fails with a 500, and an image with a 500 or an empty stream: it says the same
    (
        {"like_llama_cpp": True},
        "tools: yes, images: no (the endpoint refuses them), JSON: JSON mode with the schema",
    ),
]


@pytest.mark.parametrize(
    ("mode", "takes"), MODES, ids=["all", "no-schema", "ignores-format", "no-tools", "no-images", "llama-cpp"]
)
async def test_check_online_names_what_each_kind_of_endpoint_takes(mode: dict[str, Any], takes: str) -> None:
    async with OpenAIStandIn(**mode) as standin:
        standin.generate_handler = FakeBrain()
        settings = Settings(
            model_provider="openai",
            openai_base_url=standin.base_url,
            embedding_model="nomic-embed-text",
            embedding_dimensions=768,
            openai_max_retries=0,
        )
        [(name, verdict)] = (await probe_models(settings)).items()
    assert name.startswith("127.0.0.1:") and verdict["ok"], verdict
    # the stand-in's brain writes episodes past a selection's budget: a selection that tells nothing
    assert verdict["detail"] == (
        f"nomic-embed-text answered at 768 dimensions; gpt-4o-mini answered; {takes}; line selection: tells "
        "nothing (every line, or past its budget): after 3 such selections in a row the bot reads chunks by "
        "its own rules, asking again every 20 flushes; calls at once: 1, replies first (MODEL_CONCURRENCY)"
    )


async def test_check_online_on_openai_from_the_command_line(tmp_path: Path) -> None:
    async with OpenAIStandIn(api_key="sk-right-key-123456", no_images=True) as standin:
        standin.generate_handler = FakeBrain()

        async def check(key: str) -> tuple[int, str, str]:
            env = clean_env(
                MODEL_PROVIDER="openai",
                OPENAI_BASE_URL=standin.base_url,
                OPENAI_API_KEY=key,
                OPENAI_MAX_RETRIES="0",
                EMBEDDING_MODEL="text-embedding-3-small",
                DATABASE_PATH=str(tmp_path / "memory.sqlite3"),
            )
            return await run_cli("check", "--online", env=env, cwd=tmp_path)

        code, out, err = await check("sk-right-key-123456")
        assert "images: no (the endpoint refuses them)" in out and "text-embedding-3-small answered" in out
        assert "error: DISCORD_TOKEN is not set" in err and code == 1  # only the Discord token is missing
        assert "openai:text-embedding-3-small at 768 dimensions" in out
        code, out, err = await check("sk-wrong-key-999999")
        [line] = [e for e in err.splitlines() if "OPENAI_API_KEY" in e]
        assert "rejected the API key" in line and "wrong-key" not in out + err
