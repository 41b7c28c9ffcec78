"""A provider is one record: a third one, registered here with a client of its own (this module is its
adapter), is chosen by the settings, opened by the composition root and shown by `check`, with no other
edit; and the two built in keep what their records say."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from bot.app import extraction_mode, open_models, provider_name, usage_report
from bot.cli.check import check_settings
from bot.config import ConfigError, load_settings
from bot.llm import providers
from bot.llm.providers import DistanceCuts, Part, Provider, ProviderSettings
from bot.llm.retry import RetryingClient
from bot.llm.usage import Usage
from bot.memory.model_ports import Purpose

STANDIN = Provider(
    name="standin",
    display_name="Stand-in",
    key_variables=("STANDIN_API_KEY",),
    key_hint="any text: the stand-in only checks one is there",
    chat_model="standin-chat",
    memory_model="standin-memory",
    embedding_model="standin-embed",
    extraction="select",
    module=__name__,  # this module is its adapter: `open_client` below
    variables=("STANDIN_REGION",),
    distances={"standin-embed": DistanceCuts(duplicate=0.05, candidate=0.3, recall=0.5)},
    identity_prefix="standin:",
)


class StandInClient(RetryingClient):
    """A client that embeds every text as the same unit vector: enough for `check --online`."""

    provider = "Stand-in"

    async def embed(self, texts: Sequence[str], task: Literal["document", "query"]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.embedding_dimensions - 1) for _ in texts]

    async def aclose(self) -> None:
        pass


def open_client(settings: ProviderSettings, usage: Usage, part: Part) -> StandInClient:
    """The record's way in, as gemini.py and openai_compat/client.py have theirs."""
    return StandInClient(
        api_key=settings.value("STANDIN_API_KEY"),
        base_url=f"https://{settings.value('STANDIN_REGION') or 'eu'}.standin.example",
        chat_model=settings.chat_model_name,
        memory_model=settings.memory_model_name,
        embedding_model=settings.embedding_model,
        embedding_dimensions=settings.embedding_dimensions,
        timeout_seconds=5.0,
        max_retries=0,
        usage=usage,
    )


@pytest.fixture
def standin() -> Iterator[Provider]:
    providers.register(STANDIN)
    yield STANDIN
    providers.unregister(STANDIN.name)


def test_a_provider_not_registered_is_refused_with_the_registered_ones_named() -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"MODEL_PROVIDER": "standin"})
    assert raised.value.problems == [
        "MODEL_PROVIDER='standin' is not valid: expected one of gemini or openai"
    ]


@pytest.mark.usefixtures("standin")
async def test_a_third_provider_is_one_record_the_settings_the_app_and_check_pick_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"MODEL_PROVIDER": "standin", "DATABASE_PATH": str(tmp_path / "memory.sqlite3")}
    settings = load_settings(env)
    # the settings: its defaults, its key, its cuts, how the database records its embedding model
    assert (settings.chat_model_name, settings.memory_model_name) == ("standin-chat", "standin-memory")
    assert settings.embedding_identity == "standin:standin-embed" and settings.calibrated
    assert (settings.consolidate_duplicate_distance, settings.recall_max_distance) == (0.05, 0.5)
    assert settings.missing("model_key") == [
        "STANDIN_API_KEY is not set (any text: the stand-in only checks one is there)"
    ]
    settings = load_settings({**env, "STANDIN_API_KEY": "standin-secret-98765", "STANDIN_REGION": "us"})
    assert settings.missing("model_key") == []
    assert "standin-secret-98765" in settings.secret_values()
    # the composition root: its client, its measured extraction mode, its name in messages
    models = open_models(settings)
    assert isinstance(models.chat, StandInClient) and models.embedder is models.chat
    assert models.chat.base_url == "https://us.standin.example"
    assert extraction_mode(settings) == "select" and provider_name(settings, Purpose.EMBED) == "Stand-in"
    assert usage_report(settings, models.usage)["models"]["embeddings"] == "standin-embed"
    await models.aclose()
    # check: its settings in effect (its key hidden), no other provider's, and its client tried online
    code = await _check(settings)
    out = capsys.readouterr().out
    assert "CHAT_MODEL = standin-chat (Stand-in's default)" in out
    assert "STANDIN_API_KEY = ****8765" in out and "STANDIN_REGION = us" in out
    assert "standin-secret" not in out and "GEMINI" not in out and "OPENAI" not in out
    assert "Stand-in: OK (standin-embed answered at 768 dimensions)" in out
    assert "database OK" in out and "standin:standin-embed at 768 dimensions" in out
    assert "warning" not in out and code == 1  # only DISCORD_TOKEN is missing


async def _check(settings: Any) -> int:
    """`check --online` as the command line runs it (in a worker thread: it runs its own event loops)."""
    import asyncio

    return await asyncio.to_thread(check_settings, settings, argparse.Namespace(json=False, online=True))


def test_the_built_in_records_say_what_each_provider_defaults_to() -> None:
    openai = load_settings({"MODEL_PROVIDER": "openai"})
    assert (openai.chat_model_name, openai.embedding_model) == ("gpt-4o-mini", "text-embedding-3-small")
    assert extraction_mode(openai) == "select" and not openai.calibrated
    gemini = load_settings({})
    assert (gemini.memory_model_name, gemini.embedding_model) == (
        "gemini-flash-lite-latest",
        "gemini-embedding-001",
    )
    assert extraction_mode(gemini) == "enumerate" and gemini.calibrated
    assert providers.names()[:2] == ("gemini", "openai")


def test_check_shows_values_in_effect_and_only_the_providers_in_use() -> None:
    shown = load_settings({"MODEL_PROVIDER": "openai"}).in_effect()
    assert shown["EMBEDDING_PROVIDER"] == "openai (MODEL_PROVIDER's)"
    assert shown["CHAT_MODEL"] == "gpt-4o-mini (OpenAI's default)"
    assert shown["EXTRACTION_MODE"] == "auto (select, measured best on OpenAI)"
    assert not [name for name in shown if name.startswith("GEMINI_")]
    assert not [name for name, value in shown.items() if value in ("", None, [], ())]
    mixed = load_settings({"MODEL_PROVIDER": "openai", "EMBEDDING_PROVIDER": "gemini"}).in_effect()
    assert "GEMINI_API_KEY" in mixed and "OPENAI_API_KEY" in mixed


@pytest.mark.parametrize(
    ("embedding", "apart"),
    [
        ({}, False),  # one endpoint, one client
        ({"EMBEDDING_BASE_URL": "http://127.0.0.1:8765/v1"}, False),  # the chat's own URL
        ({"EMBEDDING_BASE_URL": "http://127.0.0.1:8765/embed/v1"}, True),  # another path on the same host
        ({"EMBEDDING_BASE_URL": "http://127.0.0.1:8767/v1"}, True),
        ({"EMBEDDING_API_KEY": "another-key-12345"}, True),  # the same server, another key
    ],
)
async def test_embeddings_get_their_own_client_where_their_url_or_key_differs(
    embedding: dict[str, str], apart: bool
) -> None:
    env = {"MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:8765/v1", **embedding}
    models = open_models(load_settings(env))
    try:
        assert (models.embedder is not models.chat) is apart
        if apart:
            assert models.embedder.base_url.rstrip("/") == env.get(
                "EMBEDDING_BASE_URL", env["OPENAI_BASE_URL"]
            )
    finally:
        await models.aclose()
