"""Typed settings read from the environment (and `.env`), validated with messages that name the variable.

Every setting has a default but the secrets (`Settings.SECRETS`, and every provider's key variables);
which secrets are required depends on what is run (`python -m bot facts list` needs none), so
`Settings.missing()` reports them instead of failing the load. What depends on the model provider (its
default models, its keys, its distance cuts) is read from its record (`bot/llm/providers.py`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bot.llm import providers
from bot.llm.providers import GEMINI_DISTANCES, DistanceCuts, Part, Provider, model_key

__all__ = ["GEMINI_DISTANCES", "DistanceCuts", "model_key"]  # what the benchmarks and tests read here

DEFAULT_PERSONA = (
    "You are a friendly, concise member of this Discord community. You remember what people have told you "
    "and use it naturally when it helps, without reciting it. Answer in the language you are addressed in. "
    "Use Discord markdown sparingly."
)


class ConfigError(Exception):
    """One or more settings are malformed; `problems` has one line per variable."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Settings:
    """Effective configuration. Field names are the environment variable names in lower case."""

    discord_token: str = ""
    model_provider: str = "gemini"  # chat, extraction and consolidation: a registered provider's name
    embedding_provider: str = ""  # the embeddings' provider; empty: MODEL_PROVIDER's
    chat_model: str = ""  # empty: the provider's (its record's `model_variables`, else its `chat_model`)
    memory_model: str = ""  # empty: the provider's, the same way
    gemini_api_key: str = ""
    gemini_base_url: str = ""
    gemini_chat_model: str = providers.GEMINI.chat_model
    gemini_memory_model: str = providers.GEMINI.memory_model
    embedding_model: str = ""  # empty: the embeddings provider's default (filled in on creation)
    embedding_dimensions: int = 768
    gemini_timeout_seconds: float = 30.0
    gemini_max_retries: int = 4
    openai_api_key: str = ""  # optional for a local server
    openai_base_url: str = ""  # empty: OpenAI's own API
    # Embeddings from another OpenAI-compatible endpoint than the chat's (chat on OpenRouter, embeddings
    # on a local Ollama); empty: OPENAI_BASE_URL / OPENAI_API_KEY.
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    openai_timeout_seconds: float = 60.0
    openai_max_retries: int = 4
    openai_tools: str = "auto"  # auto: offered, and left out once the endpoint refuses them; off: never
    openai_images: str = "auto"  # the same for images in the chat
    # auto (schema, then object_schema, object and prompt as refused), or one of those
    openai_json: str = "auto"
    # Model calls in flight at once at one endpoint, replies first (bot/llm/schedule.py); None (auto): 1 for
    # a server on this machine or network (llama-cpp-python's serves one at a time), no limit otherwise
    model_concurrency: int | None = None
    database_path: Path = Path("data/memory.sqlite3")
    database_url: str = ""  # postgresql://...: PostgreSQL instead of the SQLite file (may hold a password)
    memory_flush_quiet_seconds: float = 60.0
    memory_flush_max_messages: int = 50
    memory_flush_max_age_seconds: float = 600.0
    memory_flush_concurrency: int = 2
    memory_flush_min_messages: int = 20
    memory_community: bool = True
    memory_removed_server_days: float = 30.0
    extraction_mode: str = "auto"  # select, enumerate, or auto: the measured default of MODEL_PROVIDER
    memory_flush_claim_seconds: float = 300.0
    memory_no_memory_marker: str = "!nomem"
    recall_facts_per_person: int = 6
    recall_max_distance: float = GEMINI_DISTANCES.recall  # load_settings: EMBEDDING_MODEL's (distance_cuts)
    recall_token_budget: int = 1200
    recall_keyword_weight: float = 0.3
    recall_context_weight: float = 0.3
    consolidate_candidate_distance: float = GEMINI_DISTANCES.candidate
    consolidate_duplicate_distance: float = GEMINI_DISTANCES.duplicate
    discord_api_base_url: str = ""
    discord_gateway_url: str = ""
    dev_guild_id: int | None = None
    shard_count: int | None = None
    shard_ids: tuple[int, ...] = ()
    auto_reply_channel_ids: frozenset[int] = field(default_factory=frozenset)
    chat_history_limit: int = 20
    chat_turn_max_chars: int = 4000
    chat_prompt_max_chars: int = 32000
    chat_max_output_tokens: int = 1500
    attachment_max_bytes: int = 10 * 1024 * 1024
    attachments_per_message: int = 4
    attachments_per_prompt: int = 8
    attachment_text_max_chars: int = 12000
    chat_cooldown_replies: int = 5
    chat_cooldown_seconds: float = 60.0
    bot_persona: str = DEFAULT_PERSONA
    admin_log_channel_id: int | None = None
    log_level: str = "INFO"
    mcp_token: str = ""  # `python -m bot mcp --http`: the bearer token agents must send (none: refused)
    # `python -m bot web`: the dashboard's Discord sign-in (OAuth2) and its signed session cookie.
    discord_client_id: str = ""  # the application's id (OAuth2 tab of the developer portal)
    discord_client_secret: str = ""
    web_redirect_url: str = ""  # where Discord sends people back: the dashboard's /auth/callback
    web_session_secret: str = ""  # signs the session cookie (HMAC-SHA256); at least 32 characters
    web_session_hours: float = 12.0  # a sign-in lasts this long, checked on the server
    # The variables of registered providers that have no field here (a third provider's key), by name.
    provider_values: Mapping[str, str] = field(default_factory=dict)

    SECRETS = (
        "discord_token",
        "mcp_token",
        "discord_client_secret",
        "web_session_secret",
    )  # besides the providers' key variables (`secret_names`)

    def __post_init__(self) -> None:
        if not self.embedding_model:  # the embeddings provider's own model, however Settings was made
            object.__setattr__(self, "embedding_model", self.embedder.embedding_model)

    def value(self, name: str) -> Any:
        """A setting by its variable's name: a field, else a registered provider's own variable."""
        key = name.lower()
        if key in _FIELD_NAMES:
            return getattr(self, key)
        return self.provider_values.get(name.upper(), "")

    @property
    def provider(self) -> Provider:
        """MODEL_PROVIDER's record: who chats, extracts and consolidates."""
        return providers.provider(self.model_provider)

    @property
    def embedder(self) -> Provider:
        """The record of who makes the embeddings: EMBEDDING_PROVIDER's, else MODEL_PROVIDER's."""
        return providers.provider(self.embeddings_provider)

    def in_use(self) -> tuple[Provider, ...]:
        """The records of the providers in use, the chat's first."""
        return tuple(dict.fromkeys((self.provider, self.embedder)))

    def missing(self, *names: str) -> list[str]:
        """Lines naming each required variable among `names` that is empty (`model_key`: the keys the
        providers in use need, each as its record says)."""
        hints = {
            "DISCORD_TOKEN": "the bot token from the Discord developer portal",
            "DISCORD_CLIENT_ID": "the application's id, OAuth2 tab of the Discord developer portal",
            "DISCORD_CLIENT_SECRET": "OAuth2 tab of the Discord developer portal",
            "WEB_REDIRECT_URL": "the dashboard's /auth/callback URL, also listed under OAuth2 > Redirects",
            "WEB_SESSION_SECRET": "a random value, such as python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        }
        for record in providers.registered():
            hints.setdefault(record.key_variables[0], record.key_hint)
        wanted = [k.upper() for n in names for k in (self._model_keys() if n == "model_key" else [n])]
        return [
            f"{n} is not set" + (f" ({hints[n]})" if n in hints else "")
            for n in dict.fromkeys(wanted)
            if not self.value(n)
        ]

    def _model_keys(self) -> list[str]:
        """The keys the providers in use need for the part each plays (a local server needs none), in
        the order the providers were registered."""
        parts: list[tuple[Provider, Part]] = [(self.provider, "chat"), (self.embedder, "embeddings")]
        return [
            record.key_variables[0]
            for record in providers.registered()
            if any(used is record and record.needs_key(self, part) for used, part in parts)
        ]

    @property
    def embeddings_provider(self) -> str:
        """Who makes the embeddings: EMBEDDING_PROVIDER, else MODEL_PROVIDER."""
        return self.embedding_provider or self.model_provider

    @property
    def chat_model_name(self) -> str:
        """The chat model: CHAT_MODEL, else the provider's (its own variable's, else its record's default)."""
        return self.chat_model or self._provider_model(0, self.provider.chat_model)

    @property
    def memory_model_name(self) -> str:
        """The model of extraction and consolidation: MEMORY_MODEL, else the provider's."""
        return self.memory_model or self._provider_model(1, self.provider.memory_model)

    def _provider_model(self, which: int, default: str) -> str:
        variable = self.provider.model_variables[which]
        return (self.value(variable) if variable else "") or default

    @property
    def embedding_identity(self) -> str:
        """The embedding model as the database records it: its name after its provider's prefix
        (`openai:`), so a model of the same name from another provider is a change."""
        return self.embedder.identity_prefix + self.embedding_model

    @property
    def calibrated(self) -> bool:
        """Whether EMBEDDING_MODEL's distance cuts were measured (else a model never measured gets
        gemini-embedding-001's, which may not fit it)."""
        return providers.calibrated_cuts(self.embedding_model) is not None

    @property
    def database_location(self) -> Path | str:
        """Where the memory is: DATABASE_URL when set (PostgreSQL), else the SQLite file DATABASE_PATH."""
        return self.database_url or self.database_path

    @property
    def database_shown(self) -> str:
        """The database's location as messages show it: a URL without its password."""
        return _mask_url(self.database_url) if self.database_url else str(self.database_path)

    @classmethod
    def secret_names(cls) -> set[str]:
        """The variables holding secrets: SECRETS, and every registered provider's key variables."""
        return {n.upper() for n in cls.SECRETS} | {
            v for record in providers.registered() for v in record.key_variables
        }

    def secret_values(self) -> list[str]:
        """Every key and token set, whatever the provider, so that a line quoting a request shows none."""
        return [value for name in sorted(self.secret_names()) if (value := self.value(name))]

    def masked(self) -> dict[str, Any]:
        """The settings as plain values with secrets hidden, for `check` and start-up logs."""
        secrets = self.secret_names()
        out: dict[str, Any] = {}
        for name in [*(n.upper() for n in _FIELD_NAMES), *self.provider_values]:
            value = self.value(name)
            if name in secrets:
                value = _mask(value)
            elif name == "DATABASE_URL":
                value = _mask_url(value) if value else "(not set)"
            elif isinstance(value, Path):
                value = str(value)
            elif isinstance(value, frozenset):
                value = sorted(value)
            out[name] = value
        return out

    def in_effect(self) -> dict[str, Any]:
        """The values in effect, for `check`: secrets hidden, a setting left empty shown as what it means
        (the provider's default model, ...), never a blank, and the settings of providers not in use
        left out."""
        ours = {v for record in self.in_use() for v in record.variable_names}
        theirs = {v for record in providers.registered() for v in record.variable_names} - ours
        out: dict[str, Any] = {}
        for name, value in self.masked().items():
            if name in theirs:
                continue
            if self.value(name) in (None, "", (), frozenset()):
                meaning = _WHEN_EMPTY.get(name)
                value = meaning(self) if meaning else "(not set)"
            elif isinstance(value, (list, tuple)):
                value = ", ".join(map(str, value))
            elif name == "EXTRACTION_MODE" and value == "auto":
                value = f"auto ({self.provider.extraction}, measured best on {self.provider.display_name})"
            out[name] = value
        return out


# What a setting left empty means, as `check` shows it (others: "(not set)").
_WHEN_EMPTY: dict[str, Callable[[Settings], str]] = {
    "EMBEDDING_PROVIDER": lambda s: f"{s.embeddings_provider} (MODEL_PROVIDER's)",
    "CHAT_MODEL": lambda s: f"{s.chat_model_name} ({s.provider.display_name}'s default)",
    "MEMORY_MODEL": lambda s: f"{s.memory_model_name} ({s.provider.display_name}'s default)",
    "OPENAI_BASE_URL": lambda s: "(not set: OpenAI's own API)",
    "EMBEDDING_BASE_URL": lambda s: "(not set: OPENAI_BASE_URL's endpoint)",
    "MODEL_CONCURRENCY": lambda s: "auto (1 for a server on this machine or network, else no limit)",
    "DATABASE_URL": lambda s: "(not set: the SQLite file DATABASE_PATH)",
    "DISCORD_API_BASE_URL": lambda s: "(not set: Discord's own)",
    "DISCORD_GATEWAY_URL": lambda s: "(not set: Discord's own)",
    "DEV_GUILD_ID": lambda s: "(not set: slash commands sync to every server)",
    "SHARD_COUNT": lambda s: "(not set: one connection, no shards)",
    "SHARD_IDS": lambda s: "(not set: every shard of SHARD_COUNT)",
    "AUTO_REPLY_CHANNEL_IDS": lambda s: "(none)",
    "ADMIN_LOG_CHANNEL_ID": lambda s: "(not set: each server's own, /memory-admin logchannel)",
    "DISCORD_CLIENT_ID": lambda s: "(not set: `web` cannot sign anyone in)",
    "WEB_REDIRECT_URL": lambda s: "(not set: `web` cannot sign anyone in)",
}


def distance_cuts(model: str) -> DistanceCuts | None:
    """The cuts calibrated for the embedding model `model`; None for a model not measured."""
    return providers.calibrated_cuts(model)


_FIELD_NAMES = tuple(f.name for f in fields(Settings) if f.name != "provider_values")  # in order


def _mask(secret: str) -> str:
    if not secret:
        return "(not set)"
    return "****" + secret[-4:] if len(secret) > 12 else "****"


def _mask_url(url: str) -> str:
    """A database URL with any password replaced by ****, in the user part and in the query alike."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    if ":" in user:
        user = user.split(":", 1)[0] + ":****"
    query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2****", parts.query)
    netloc = f"{user}@{host}" if user else host
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def _database_url(raw: str) -> str:
    """A PostgreSQL URL (postgresql:// or postgres://) with a host or socket to connect to."""
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ValueError
    urlsplit(raw)  # a malformed one (an unclosed [ip]) raises ValueError
    return raw


def _flag(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise ValueError
    return value in ("true", "1", "yes", "on")


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError
    return value


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError
    return value


def _non_negative_float(raw: str) -> float:
    value = float(raw)
    if not value >= 0:
        raise ValueError
    return value


def _concurrency(raw: str) -> int | None:
    return None if raw.strip().lower() == "auto" else _non_negative_int(raw)


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError
    return value


def _shard_ids(raw: str) -> tuple[int, ...]:
    return tuple(sorted({_non_negative_int(part.strip()) for part in raw.split(",") if part.strip()}))


def _shard_problems(values: dict[str, Any]) -> list[str]:
    """SHARD_IDS only with SHARD_COUNT, each below it (discord.py's shards are 0 .. count-1)."""
    ids, count = values.get("shard_ids", ()), values.get("shard_count")
    if ids and count is None:
        return ["SHARD_IDS needs SHARD_COUNT: the number of shards over all processes"]
    if count is not None and any(i >= count for i in ids):
        return [
            f"SHARD_IDS={','.join(map(str, ids))} has a shard beyond SHARD_COUNT={count} (shards are 0 to {count - 1})"
        ]
    return []


def _distance(raw: str) -> float:
    value = float(raw)
    if not 0 <= value <= 2:
        raise ValueError
    return value


def _fraction(raw: str) -> float:
    value = float(raw)
    if not 0 <= value < 1:
        raise ValueError
    return value


def _snowflake(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError
    return value


def _snowflakes(raw: str) -> frozenset[int]:
    return frozenset(_snowflake(part.strip()) for part in raw.replace(";", ",").split(",") if part.strip())


def _url(raw: str) -> str:
    if not raw.startswith(("http://", "https://", "ws://", "wss://")):
        raise ValueError
    return raw.rstrip("/")


def _http_url(raw: str) -> str:
    """An http(s) URL with a host, kept as written (a redirect URL must match Discord's to the letter)."""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError
    return raw


def _digits(raw: str) -> str:
    if not raw.isascii() or not raw.isdigit():
        raise ValueError
    return raw


def _path(raw: str) -> Path:
    """A file path; `~` is expanded, as a shell would, since .env files and hosts do not do it."""
    return Path(raw).expanduser()


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ValueError
        return value

    return parse


def _provider(raw: str) -> str:
    """A registered provider's name (`bot/llm/providers.py`)."""
    return _choice(*providers.names())(raw)


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ValueError
    return level


_PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "model_provider": (_provider, "one of {providers}"),
    "embedding_provider": (_provider, "one of {providers} (empty: MODEL_PROVIDER's)"),
    "openai_base_url": (_url, "an http(s) URL such as http://127.0.0.1:11434/v1"),
    "embedding_base_url": (_url, "an http(s) URL such as http://127.0.0.1:11434/v1"),
    "openai_timeout_seconds": (_non_negative_float, "a number of seconds such as 60"),
    "openai_max_retries": (_non_negative_int, "a whole number of retries such as 4 (0: no retries)"),
    "openai_tools": (_choice("auto", "off"), "auto or off"),
    "openai_images": (_choice("auto", "off"), "auto or off"),
    "openai_json": (
        _choice("auto", "schema", "object_schema", "object", "prompt"),
        "one of auto, schema, object_schema, object, prompt",
    ),
    "model_concurrency": (_concurrency, "auto, or a whole number of calls such as 1 (0: no limit)"),
    "embedding_dimensions": (_positive_int, "a positive integer such as 768"),
    "gemini_timeout_seconds": (_non_negative_float, "a number of seconds such as 30"),
    "gemini_max_retries": (_non_negative_int, "a whole number of retries such as 4 (0: no retries)"),
    "database_path": (_path, "a file path"),
    "database_url": (
        _database_url,
        "a PostgreSQL URL such as postgresql://bot:password@db.example.com/memory",
    ),
    "memory_flush_quiet_seconds": (_non_negative_float, "a number of seconds such as 60"),
    "memory_flush_max_messages": (_positive_int, "a positive integer such as 50"),
    "memory_flush_max_age_seconds": (_non_negative_float, "a number of seconds such as 600"),
    "memory_flush_concurrency": (_positive_int, "a positive integer such as 2"),
    "memory_flush_min_messages": (_positive_int, "a positive integer such as 20"),
    "memory_community": (_flag, "true or false"),
    "memory_removed_server_days": (_non_negative_float, "a number of days such as 30 (0: at once)"),
    "extraction_mode": (_choice("auto", "select", "enumerate"), "auto, select or enumerate"),
    "memory_flush_claim_seconds": (_positive_float, "a positive number of seconds such as 300"),
    "shard_count": (_positive_int, "a positive integer: the bot's shards over all processes"),
    "shard_ids": (_shard_ids, "comma-separated shard numbers such as 0,1"),
    "recall_facts_per_person": (_positive_int, "a positive integer such as 6"),
    "recall_max_distance": (_distance, "a cosine distance between 0 and 2 such as 0.55"),
    "recall_token_budget": (_positive_int, "a positive number of tokens such as 1200"),
    "recall_keyword_weight": (_non_negative_float, "a weight of 0 or more such as 0.3"),
    "recall_context_weight": (_fraction, "a weight from 0 up to (not including) 1 such as 0.3"),
    "consolidate_candidate_distance": (_distance, "a cosine distance between 0 and 2 such as 0.35"),
    "consolidate_duplicate_distance": (_distance, "a cosine distance between 0 and 2 such as 0.02"),
    "gemini_base_url": (_url, "an http(s) URL such as http://127.0.0.1:8080"),
    "discord_api_base_url": (_url, "an http(s) URL ending in /api/v10"),
    "discord_gateway_url": (_url, "a ws(s) URL such as wss://gateway.discord.gg/"),
    "dev_guild_id": (_snowflake, "a Discord server id (a positive integer)"),
    "auto_reply_channel_ids": (_snowflakes, "comma-separated Discord channel ids"),
    "chat_history_limit": (_positive_int, "a positive integer such as 20"),
    "chat_turn_max_chars": (_positive_int, "a positive number of characters such as 4000"),
    "chat_prompt_max_chars": (_positive_int, "a positive number of characters such as 32000"),
    "chat_max_output_tokens": (_positive_int, "a positive number of tokens such as 1500"),
    "attachment_max_bytes": (_positive_int, "a positive number of bytes such as 10485760 (10 MiB)"),
    "attachments_per_message": (_non_negative_int, "a whole number such as 4 (0: attachments are not read)"),
    "attachments_per_prompt": (_non_negative_int, "a whole number such as 8 (0: attachments are not read)"),
    "attachment_text_max_chars": (_positive_int, "a positive number of characters such as 12000"),
    "chat_cooldown_replies": (_non_negative_int, "a whole number of replies such as 5 (0: no cooldown)"),
    "chat_cooldown_seconds": (_non_negative_float, "a number of seconds such as 60"),
    "admin_log_channel_id": (_snowflake, "a Discord channel id (a positive integer)"),
    "log_level": (_log_level, "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    "discord_client_id": (_digits, "the application's id from the developer portal (digits)"),
    "web_redirect_url": (_http_url, "an http(s) URL such as https://memory.example.com/auth/callback"),
    "web_session_hours": (_positive_float, "a positive number of hours such as 12"),
}


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    dotenv_path: str | Path | None = ".env",
    dotenv_required: bool = False,
) -> Settings:
    """Read settings from `env` (default: the process environment, after loading `.env` if present).

    Values already in the environment (unless empty) win over `.env`. A missing `dotenv_path` is fine unless
    `dotenv_required` (a file the user named). Raises ConfigError listing every bad value. The distance
    cuts not set are EMBEDDING_MODEL's (`distance_cuts`; gemini-embedding-001's for a model not measured).
    """
    if env is None:
        if dotenv_path is not None:
            _load_dotenv(Path(dotenv_path).expanduser(), required=dotenv_required)
        env = os.environ
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f in fields(Settings):
        if f.name not in _FIELD_NAMES:
            continue
        name = f.name.upper()
        raw = env.get(name, "")
        if f.name == "gemini_api_key" and not raw.strip():
            raw = env.get("GOOGLE_API_KEY", "")
        raw = raw.strip()
        if not raw:
            continue
        parser, expected = _PARSERS.get(f.name, (str, "text"))
        try:
            values[f.name] = parser(raw)
        except (ValueError, TypeError):
            shown = _mask_url(raw) if f.name == "database_url" else raw
            shown = "(hidden)" if name in Settings.secret_names() else shown
            expected = expected.format(providers=" or ".join(providers.names()))
            problems.append(f"{name}={shown!r} is not valid: expected {expected}")
    problems += _shard_problems(values)
    if problems:
        raise ConfigError(problems)
    own = {v for record in providers.registered() for v in record.variable_names}
    values["provider_values"] = {
        name: env[name].strip() for name in sorted(own) if name.lower() not in _FIELD_NAMES and env.get(name)
    }
    settings = Settings(**values)  # fills in the embeddings provider's model when EMBEDDING_MODEL is empty
    cuts = distance_cuts(settings.embedding_model) or GEMINI_DISTANCES
    values.setdefault("consolidate_duplicate_distance", cuts.duplicate)
    values.setdefault("consolidate_candidate_distance", cuts.candidate)
    values.setdefault("recall_max_distance", cuts.recall)
    return Settings(**values)


def _load_dotenv(path: Path, *, required: bool) -> None:
    """Load a .env file into the environment; a file the user named but that cannot be read is an error."""
    if not path.is_file():
        if required:
            raise ConfigError([f"settings file {path} does not exist (or is not a file)"])
        return
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read settings file {path}: {exc}"]) from exc
    for key, value in values.items():
        # The environment wins, but an empty variable (what `X=${X}` in compose files gives) does not
        # hide the file's value: empty means "not set" everywhere else too.
        if value is not None and not os.environ.get(key):
            os.environ[key] = value
