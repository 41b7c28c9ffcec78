"""Settings: defaults, validation messages that name the variable, secrets kept out of output."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.app import memory_policy
from bot.config import ConfigError, Settings, load_settings


def test_defaults_with_an_empty_environment() -> None:
    s = load_settings({})
    assert s.embedding_dimensions == 768 and s.memory_flush_quiet_seconds == 60
    assert s.memory_flush_max_messages == 50 and s.memory_flush_max_age_seconds == 600
    assert s.database_path == Path("data/memory.sqlite3") and s.chat_history_limit == 20
    assert s.missing("discord_token", "gemini_api_key") == [
        "DISCORD_TOKEN is not set (the bot token from the Discord developer portal)",
        "GEMINI_API_KEY is not set (or GOOGLE_API_KEY; a key from Google AI Studio)",
    ]


def test_values_are_parsed_and_google_api_key_is_accepted() -> None:
    s = load_settings(
        {
            "GOOGLE_API_KEY": "g-key",
            "EMBEDDING_DIMENSIONS": "1536",
            "AUTO_REPLY_CHANNEL_IDS": "1, 2;3",
            "DEV_GUILD_ID": "42",
            "LOG_LEVEL": "debug",
            "GEMINI_BASE_URL": "http://127.0.0.1:9/",
        }
    )
    assert s.gemini_api_key == "g-key" and s.embedding_dimensions == 1536
    assert s.auto_reply_channel_ids == frozenset({1, 2, 3}) and s.dev_guild_id == 42
    assert s.log_level == "DEBUG" and s.gemini_base_url == "http://127.0.0.1:9"


def test_every_bad_value_is_named_with_what_is_expected() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(
            {
                "EMBEDDING_DIMENSIONS": "lots",
                "MEMORY_FLUSH_MAX_MESSAGES": "0",
                "DEV_GUILD_ID": "abc",
                "RECALL_MAX_DISTANCE": "3",
                "GEMINI_BASE_URL": "localhost:8080",
                "GEMINI_MAX_RETRIES": "-3",
            }
        )
    problems = err.value.problems
    assert len(problems) == 6
    assert any(p.startswith("GEMINI_MAX_RETRIES='-3'") for p in problems)
    assert "EMBEDDING_DIMENSIONS='lots' is not valid: expected a positive integer such as 768" in problems
    assert any(p.startswith("MEMORY_FLUSH_MAX_MESSAGES='0'") for p in problems)
    assert any(p.startswith("GEMINI_BASE_URL='localhost:8080'") and "http" in p for p in problems)


def test_secrets_are_masked() -> None:
    s = Settings(discord_token="MTIzNDU2Nzg5.abcdef.secret-part-xyz9", gemini_api_key="")
    masked = s.masked()
    assert masked["DISCORD_TOKEN"] == "****xyz9" and "secret" not in str(masked)
    assert masked["GEMINI_API_KEY"] == "(not set)"


def test_dotenv_file_is_read_but_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DISCORD_TOKEN=from-file\nCHAT_HISTORY_LIMIT=7\n")
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.delenv("CHAT_HISTORY_LIMIT", raising=False)
    monkeypatch.setenv("CHAT_HISTORY_LIMIT", "9")
    s = load_settings(dotenv_path=env_file)
    assert s.discord_token == "from-file" and s.chat_history_limit == 9


def test_an_empty_variable_does_not_hide_the_dotenv_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('DATABASE_PATH="./my data/bot.sqlite3"\nGEMINI_API_KEY=from-file\n')
    monkeypatch.setenv("DATABASE_PATH", "")  # what `DATABASE_PATH=${DATABASE_PATH}` gives in compose files
    monkeypatch.setenv("GEMINI_API_KEY", "")
    s = load_settings(dotenv_path=env_file)
    assert s.database_path == Path("./my data/bot.sqlite3") and s.gemini_api_key == "from-file"


def test_proxy_urls_are_applied_and_a_bare_host_gets_the_api_path() -> None:
    import discord

    from bot.discord_bot.client import point_discord_at

    old_base, old_gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    try:
        point_discord_at("http://127.0.0.1:8080", "ws://127.0.0.1:8080/gateway")
        assert discord.http.Route.BASE == "http://127.0.0.1:8080/api/v10"
        assert str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY) == "ws://127.0.0.1:8080/gateway"
        point_discord_at("https://proxy.example/api/v10/", "")
        assert discord.http.Route.BASE == "https://proxy.example/api/v10"
    finally:
        discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_base, old_gateway


def test_a_tilde_in_database_path_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    s = load_settings({"DATABASE_PATH": "~/bot/memory.sqlite3"})
    assert s.database_path == tmp_path / "bot" / "memory.sqlite3"


def test_a_named_dotenv_file_must_exist_but_the_default_may_be_missing(tmp_path: Path) -> None:
    load_settings(dotenv_path=tmp_path / ".env")  # no .env: fine
    with pytest.raises(ConfigError) as err:
        load_settings(dotenv_path=tmp_path / "prod.env", dotenv_required=True)
    assert err.value.problems == [f"settings file {tmp_path / 'prod.env'} does not exist (or is not a file)"]


def test_an_unreadable_dotenv_file_is_a_config_error(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_bytes(b"BOT_PERSONA=caf\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(ConfigError) as err:
        load_settings(dotenv_path=env_file)
    assert err.value.problems[0].startswith(f"cannot read settings file {env_file}: ")


def test_shards_are_checked_against_their_count() -> None:
    s = load_settings({"SHARD_COUNT": "4", "SHARD_IDS": "2, 0,2"}, dotenv_path=None)
    assert s.shard_count == 4 and s.shard_ids == (0, 2)
    with pytest.raises(ConfigError) as no_count:
        load_settings({"SHARD_IDS": "1"}, dotenv_path=None)
    assert no_count.value.problems == ["SHARD_IDS needs SHARD_COUNT: the number of shards over all processes"]
    with pytest.raises(ConfigError) as beyond:
        load_settings({"SHARD_COUNT": "2", "SHARD_IDS": "0,2"}, dotenv_path=None)
    assert "beyond SHARD_COUNT=2 (shards are 0 to 1)" in beyond.value.problems[0]
    with pytest.raises(ConfigError) as bad:
        load_settings({"SHARD_IDS": "one"}, dotenv_path=None)
    assert bad.value.problems == [
        "SHARD_IDS='one' is not valid: expected comma-separated shard numbers such as 0,1"
    ]


def test_attachment_caps_have_defaults_zero_switches_them_off_and_bad_values_are_named() -> None:
    s = load_settings({})
    assert (s.attachment_max_bytes, s.attachments_per_message, s.attachments_per_prompt) == (10 * 2**20, 4, 8)
    assert s.attachment_text_max_chars == 12000
    assert load_settings({"ATTACHMENTS_PER_PROMPT": "0"}).attachments_per_prompt == 0
    with pytest.raises(ConfigError) as err:
        load_settings({"ATTACHMENT_MAX_BYTES": "0", "ATTACHMENTS_PER_MESSAGE": "-1"})
    assert err.value.problems == [
        "ATTACHMENT_MAX_BYTES='0' is not valid: expected a positive number of bytes such as 10485760 (10 MiB)",
        "ATTACHMENTS_PER_MESSAGE='-1' is not valid: expected a whole number such as 4 (0: attachments are not read)",
    ]
    example = (Path(__file__).resolve().parents[2] / ".env.example").read_text()
    for name in ("ATTACHMENT_MAX_BYTES", "ATTACHMENTS_PER_MESSAGE", "ATTACHMENTS_PER_PROMPT"):
        assert f"\n{name}=" in example


def test_database_url_chooses_postgresql_and_its_password_is_never_shown() -> None:
    assert load_settings({}).database_location == Path("data/memory.sqlite3")
    url = "postgresql://bot:s3cret-pw@db.example.com:5432/memory?sslmode=require"
    s = load_settings({"DATABASE_URL": url, "DATABASE_PATH": "other.sqlite3"})
    assert s.database_location == url
    assert s.database_shown == "postgresql://bot:****@db.example.com:5432/memory?sslmode=require"
    assert s.masked()["DATABASE_URL"] == s.database_shown and "s3cret" not in str(s.masked())
    in_query = load_settings({"DATABASE_URL": "postgres:///memory?host=/run/pg&password=s3cret"})
    assert in_query.database_shown == "postgres:///memory?host=/run/pg&password=****"
    assert load_settings({}).masked()["DATABASE_URL"] == "(not set)"


def test_a_database_url_that_is_not_postgresql_is_refused_without_its_password() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({"DATABASE_URL": "mysql://bot:s3cret@db/memory"})
    [problem] = err.value.problems
    assert problem.startswith(
        "DATABASE_URL='mysql://bot:****@db/memory' is not valid: expected a PostgreSQL URL"
    )
    assert "s3cret" not in problem


def test_all_minilm_gets_its_calibrated_distance_cuts() -> None:
    s = load_settings(
        {
            "MODEL_PROVIDER": "openai",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "EMBEDDING_MODEL": "sentence-transformers/all-MiniLM-L6-v2",
        }
    )
    cuts = (s.consolidate_duplicate_distance, s.consolidate_candidate_distance, s.recall_max_distance)
    assert cuts == (0.01, 0.40, 0.65)
    policy = memory_policy(s)
    assert (policy.consolidation.duplicate_distance, policy.consolidation.candidate_distance) == (0.01, 0.40)
    assert policy.recall.max_distance == 0.65


def test_an_explicit_distance_setting_wins_over_the_models_cut() -> None:
    s = load_settings({"EMBEDDING_MODEL": "all-MiniLM-L6-v2", "RECALL_MAX_DISTANCE": "0.8"})
    assert s.recall_max_distance == 0.8
    assert (s.consolidate_duplicate_distance, s.consolidate_candidate_distance) == (0.01, 0.40)


def test_an_unknown_embedding_model_gets_geminis_cuts_and_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = load_settings({"MODEL_PROVIDER": "openai", "EMBEDDING_MODEL": "unmeasured-embedder-7"})
    assert (s.consolidate_duplicate_distance, s.consolidate_candidate_distance) == (0.02, 0.35)
    assert s.recall_max_distance == 0.55
    with caplog.at_level(logging.INFO, logger="bot.app"):
        memory_policy(s)
        memory_policy(s)
    lines = [r.getMessage() for r in caplog.records if "unmeasured-embedder-7" in r.getMessage()]
    assert len(lines) == 1 and "bench.calibrate_distances" in lines[0]


def test_geminis_own_model_keeps_its_cuts_without_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    s = load_settings({})
    assert (s.consolidate_duplicate_distance, s.consolidate_candidate_distance, s.recall_max_distance) == (
        0.02,
        0.35,
        0.55,
    )
    with caplog.at_level(logging.INFO, logger="bot.app"):
        memory_policy(s)
    assert not [r for r in caplog.records if "calibrate" in r.getMessage()]


def test_extraction_mode_is_the_measured_one_per_provider_unless_set() -> None:
    local = {"MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert memory_policy(load_settings({})).extraction == "enumerate"
    assert memory_policy(load_settings(local)).extraction == "select"
    assert memory_policy(load_settings({**local, "EXTRACTION_MODE": "enumerate"})).extraction == "enumerate"
    assert memory_policy(load_settings({"EXTRACTION_MODE": "select"})).extraction == "select"
    with pytest.raises(ConfigError) as err:
        load_settings({"EXTRACTION_MODE": "guess"})
    assert err.value.problems == ["EXTRACTION_MODE='guess' is not valid: expected auto, select or enumerate"]
