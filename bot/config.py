"""Typed settings read from the environment (and `.env`), validated with messages that name the variable.

Every setting has a default except the two secrets; which secrets are required depends on what is run
(`python -m bot facts list` needs neither), so `Settings.missing()` reports them instead of failing the load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PROVIDERS = ("gemini", "openai")
# What MODEL_PROVIDER=openai uses when CHAT_MODEL, MEMORY_MODEL or EMBEDDING_MODEL is not set: OpenAI's own
# small models (another endpoint names its own models, so the settings name them there).
OPENAI_CHAT_MODEL = "gpt-4o-mini"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
GEMINI_EMBEDDING_MODEL = "gemini-embedding-001"


@dataclass(frozen=True)
class DistanceCuts:
    """An embedding model's cosine-distance cuts: CONSOLIDATE_DUPLICATE_DISTANCE,
    CONSOLIDATE_CANDIDATE_DISTANCE and RECALL_MAX_DISTANCE when they are not set."""

    duplicate: float
    candidate: float
    recall: float


# The cuts tuned for gemini-embedding-001 at 768 dimensions: also what any other model gets.
GEMINI_DISTANCES = DistanceCuts(duplicate=0.02, candidate=0.35, recall=0.55)
# Models measured by `python -m bench.calibrate_distances` (docs/benchmarks.md), by `model_key`.
EMBEDDING_DISTANCES = {
    "gemini-embedding-001": GEMINI_DISTANCES,
    "all-minilm-l6-v2": DistanceCuts(duplicate=0.01, candidate=0.40, recall=0.65),
}

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
    model_provider: str = "gemini"  # chat, extraction and consolidation: gemini or openai (compatible)
    embedding_provider: str = ""  # the embeddings' provider; empty: MODEL_PROVIDER's
    chat_model: str = ""  # empty: GEMINI_CHAT_MODEL on Gemini, OPENAI_CHAT_MODEL on OpenAI
    memory_model: str = ""  # empty: GEMINI_MEMORY_MODEL on Gemini, OPENAI_CHAT_MODEL on OpenAI
    gemini_api_key: str = ""
    gemini_base_url: str = ""
    gemini_chat_model: str = "gemini-flash-latest"
    gemini_memory_model: str = "gemini-flash-lite-latest"
    embedding_model: str = GEMINI_EMBEDDING_MODEL
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

    SECRETS = ("discord_token", "gemini_api_key", "openai_api_key", "embedding_api_key", "mcp_token")

    def missing(self, *names: str) -> list[str]:
        """Lines naming each required variable among `names` that is empty (`model_key`: the keys the
        chosen model providers need)."""
        hints = {
            "discord_token": "DISCORD_TOKEN is not set (the bot token from the Discord developer portal)",
            "gemini_api_key": "GEMINI_API_KEY is not set (or GOOGLE_API_KEY; a key from Google AI Studio)",
            "openai_api_key": (
                "OPENAI_API_KEY is not set (OpenAI's API needs one; set OPENAI_BASE_URL for another endpoint)"
            ),
        }
        wanted = [k for n in names for k in (self._model_keys() if n == "model_key" else [n])]
        return [
            hints.get(n, f"{n.upper()} is not set") for n in dict.fromkeys(wanted) if not getattr(self, n)
        ]

    def _model_keys(self) -> list[str]:
        """The keys the providers in use need: Gemini's always, OpenAI's only for OpenAI's own API."""
        providers = {self.model_provider, self.embeddings_provider}
        keys = ["gemini_api_key"] if "gemini" in providers else []
        openai_own_api = (self.model_provider == "openai" and not self.openai_base_url) or (
            self.embeddings_provider == "openai" and not (self.embedding_base_url or self.openai_base_url)
        )
        return keys + (["openai_api_key"] if openai_own_api else [])

    @property
    def embeddings_provider(self) -> str:
        """Who makes the embeddings: EMBEDDING_PROVIDER, else MODEL_PROVIDER."""
        return self.embedding_provider or self.model_provider

    @property
    def chat_model_name(self) -> str:
        """The chat model: CHAT_MODEL, else the provider's default."""
        return self.chat_model or (
            self.gemini_chat_model if self.model_provider == "gemini" else OPENAI_CHAT_MODEL
        )

    @property
    def memory_model_name(self) -> str:
        """The model of extraction and consolidation: MEMORY_MODEL, else the provider's default."""
        return self.memory_model or (
            self.gemini_memory_model if self.model_provider == "gemini" else OPENAI_CHAT_MODEL
        )

    @property
    def embedding_identity(self) -> str:
        """The embedding model as the database records it: its name, after `openai:` for an
        OpenAI-compatible endpoint, so a model of the same name from another provider is a change."""
        if self.embeddings_provider == "gemini":
            return self.embedding_model
        return f"openai:{self.embedding_model}"

    @property
    def database_location(self) -> Path | str:
        """Where the memory is: DATABASE_URL when set (PostgreSQL), else the SQLite file DATABASE_PATH."""
        return self.database_url or self.database_path

    @property
    def database_shown(self) -> str:
        """The database's location as messages show it: a URL without its password."""
        return _mask_url(self.database_url) if self.database_url else str(self.database_path)

    def masked(self) -> dict[str, Any]:
        """The settings as plain values with secrets hidden, for `check` and start-up logs."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in self.SECRETS:
                value = _mask(value)
            elif f.name == "database_url":
                value = _mask_url(value) if value else "(not set)"
            elif isinstance(value, Path):
                value = str(value)
            elif isinstance(value, frozenset):
                value = sorted(value)
            out[f.name.upper()] = value
        return out


def model_key(model: str) -> str:
    """An embedding model's name as `EMBEDDING_DISTANCES` knows it: lower case, without a path
    ("sentence-transformers/all-MiniLM-L6-v2", "models/gemini-embedding-001")."""
    return model.rsplit("/", 1)[-1].strip().lower()


def distance_cuts(model: str) -> DistanceCuts | None:
    """The cuts calibrated for the embedding model `model`; None for a model not measured."""
    return EMBEDDING_DISTANCES.get(model_key(model))


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


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ValueError
    return level


_PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "model_provider": (_choice(*PROVIDERS), "gemini or openai (any OpenAI-compatible endpoint)"),
    "embedding_provider": (_choice(*PROVIDERS), "gemini or openai (empty: MODEL_PROVIDER's)"),
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
    cuts not set are EMBEDDING_MODEL's (`distance_cuts`; Gemini's for a model not measured).
    """
    if env is None:
        if dotenv_path is not None:
            _load_dotenv(Path(dotenv_path).expanduser(), required=dotenv_required)
        env = os.environ
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f in fields(Settings):
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
            shown = "(hidden)" if f.name in Settings.SECRETS else shown
            problems.append(f"{name}={shown!r} is not valid: expected {expected}")
    problems += _shard_problems(values)
    if problems:
        raise ConfigError(problems)
    if (
        "embedding_model" not in values
        and (values.get("embedding_provider") or values.get("model_provider")) == "openai"
    ):
        values["embedding_model"] = OPENAI_EMBEDDING_MODEL
    cuts = distance_cuts(values.get("embedding_model", GEMINI_EMBEDDING_MODEL)) or GEMINI_DISTANCES
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
