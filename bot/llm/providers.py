"""A model provider is one record: its name, how messages name it, its key variable(s), its default
chat, memory and embedding models, the extraction mode measured best on it, the distance cuts of the
embedding models measured on it, and how its client opens.

Settings (`bot/config.py`), the composition root (`bot/app.py`), `check`, the admin log and stats read
these records, never a provider's name. A third provider is one new adapter module (with an
`open_client(settings, usage, part)`) and one `Provider` given to `register`; nothing else changes.

The records import no SDK and no adapter: an adapter module is imported by name when its client opens,
so reading the settings never loads google-genai or openai. Nor do they import the settings (which
read them): what an adapter reads of the settings is `ProviderSettings`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

Part = Literal["chat", "embeddings"]


@dataclass(frozen=True)
class DistanceCuts:
    """An embedding model's cosine-distance cuts: CONSOLIDATE_DUPLICATE_DISTANCE,
    CONSOLIDATE_CANDIDATE_DISTANCE and RECALL_MAX_DISTANCE when they are not set."""

    duplicate: float
    candidate: float
    recall: float


class ProviderSettings(Protocol):
    """What a provider reads of the settings to open its client (`bot.config.Settings` is one)."""

    @property
    def chat_model_name(self) -> str: ...
    @property
    def memory_model_name(self) -> str: ...
    @property
    def embedding_model(self) -> str: ...
    @property
    def embedding_dimensions(self) -> int: ...
    @property
    def chat_max_output_tokens(self) -> int: ...

    def value(self, name: str) -> Any:
        """A setting by its variable's name (one of the provider's own `variables` among them)."""


def _always(settings: ProviderSettings, part: Part) -> bool:
    return True


@dataclass(frozen=True, eq=False)  # a record is itself: compared and hashed by identity
class Provider:
    """One model provider, as everything outside its adapter knows it."""

    name: str  # what MODEL_PROVIDER and EMBEDDING_PROVIDER say
    display_name: str  # how messages name it
    key_variables: tuple[str, ...]  # its secrets, the API key first
    key_hint: str  # what a line saying the key is not set adds: where a key comes from
    chat_model: str  # CHAT_MODEL when it is empty
    memory_model: str  # MEMORY_MODEL when it is empty
    embedding_model: str  # EMBEDDING_MODEL when it is empty
    extraction: Literal["select", "enumerate"]  # EXTRACTION_MODE=auto: the mode measured best on it
    module: str  # the adapter module; its `open_client(settings, usage, part)` opens a client
    # Its own settings besides the keys (variable names): `check` shows them only while it is in use,
    # and those Settings has no field for are read into `Settings.provider_values`.
    variables: tuple[str, ...] = ()
    # The cuts measured on its embedding models (`python -m bench.calibrate_distances`), by `model_key`.
    distances: Mapping[str, DistanceCuts] = field(default_factory=dict)
    # How the database records its embedding model: the name after this ("openai:"), so a model of the
    # same name from another provider is a change the store refuses until `reembed`.
    identity_prefix: str = ""
    # Variables naming its models when CHAT_MODEL / MEMORY_MODEL are empty (GEMINI_CHAT_MODEL ...).
    model_variables: tuple[str, str] = ("", "")
    # Whether the key is needed for `part` (a local OpenAI-compatible server needs none).
    needs_key: Callable[[ProviderSettings, Part], bool] = _always
    # How messages name the endpoint serving `part` (an OpenAI-compatible one names its host).
    named: Callable[[ProviderSettings, Part], str] | None = None
    # The variable of its retry budget (`check --online` tries once).
    retries_variable: str = ""
    # Whether its embeddings need a client of their own beside its chat's (another URL or key).
    embeds_apart: Callable[[ProviderSettings], bool] = lambda settings: False

    @property
    def variable_names(self) -> tuple[str, ...]:
        """Every variable that is this provider's own: its keys and its settings."""
        return (*self.key_variables, *self.variables)

    def endpoint(self, settings: ProviderSettings, part: Part = "chat") -> str:
        """The provider (or its endpoint) serving `part`, as every message names it."""
        return self.named(settings, part) if self.named is not None else self.display_name

    def open(self, settings: ProviderSettings, usage: Any, part: Part = "chat") -> Any:
        """Its client for `part`, counting in `usage` (the adapter module is imported here, not before)."""
        return importlib.import_module(self.module).open_client(settings, usage, part)


_REGISTRY: dict[str, Provider] = {}


def register(provider: Provider) -> Provider:
    """Make a provider choosable (MODEL_PROVIDER, EMBEDDING_PROVIDER); a name registered again is replaced."""
    _REGISTRY[provider.name] = provider
    return provider


def unregister(name: str) -> None:
    """Take a provider back out (a test's stand-in provider)."""
    _REGISTRY.pop(name, None)


def provider(name: str) -> Provider:
    """The record of a registered provider (KeyError for one not registered)."""
    return _REGISTRY[name]


def names() -> tuple[str, ...]:
    """Every registered provider's name, in the order of registration."""
    return tuple(_REGISTRY)


def registered() -> tuple[Provider, ...]:
    return tuple(_REGISTRY.values())


def model_key(model: str) -> str:
    """An embedding model's name as the records' `distances` know it: lower case, without a path
    ("sentence-transformers/all-MiniLM-L6-v2", "models/gemini-embedding-001")."""
    return model.rsplit("/", 1)[-1].strip().lower()


def calibrated_cuts(model: str) -> DistanceCuts | None:
    """The cuts measured for the embedding model `model` on any provider; None for a model not measured."""
    key = model_key(model)
    return next((p.distances[key] for p in _REGISTRY.values() if key in p.distances), None)


def endpoint_name(base_url: str) -> str:
    """How messages name an OpenAI-compatible endpoint: "OpenAI" for OpenAI's API, else its host (and port)."""
    host = urlsplit(base_url).netloc if base_url else ""
    return "OpenAI" if not host or host == "api.openai.com" else host


# The cuts tuned for gemini-embedding-001 at 768 dimensions: also what a model never measured gets.
GEMINI_DISTANCES = DistanceCuts(duplicate=0.02, candidate=0.35, recall=0.55)
UNCALIBRATED_MODEL = "gemini-embedding-001"  # whose cuts a model never measured gets


def _openai_embeds_apart(settings: ProviderSettings) -> bool:
    """Whether embeddings go to another URL (another path on the same host too) or with another key."""
    own_key = settings.value("EMBEDDING_API_KEY")
    return _openai_base_url(settings, "embeddings") != _openai_base_url(settings, "chat") or bool(
        own_key and own_key != settings.value("OPENAI_API_KEY")
    )


def _openai_base_url(settings: ProviderSettings, part: Part) -> str:
    """The endpoint of `part`: EMBEDDING_BASE_URL for embeddings when set, else OPENAI_BASE_URL."""
    own = part == "embeddings" and settings.value("EMBEDDING_BASE_URL")
    return str(own or settings.value("OPENAI_BASE_URL"))


GEMINI = register(
    Provider(
        name="gemini",
        display_name="Gemini",
        key_variables=("GEMINI_API_KEY",),
        key_hint="or GOOGLE_API_KEY; a key from Google AI Studio",
        chat_model="gemini-flash-latest",
        memory_model="gemini-flash-lite-latest",
        embedding_model="gemini-embedding-001",
        # Gemini keeps enumeration, the mode its runs were made with (docs/benchmarks.md section 4: the
        # benchmark machine cannot reach Gemini to compare).
        extraction="enumerate",
        module="bot.llm.gemini",
        variables=(
            "GEMINI_BASE_URL",
            "GEMINI_CHAT_MODEL",
            "GEMINI_MEMORY_MODEL",
            "GEMINI_TIMEOUT_SECONDS",
            "GEMINI_MAX_RETRIES",
        ),
        distances={"gemini-embedding-001": GEMINI_DISTANCES},
        model_variables=("GEMINI_CHAT_MODEL", "GEMINI_MEMORY_MODEL"),
        retries_variable="GEMINI_MAX_RETRIES",
    )
)

OPENAI = register(
    Provider(
        name="openai",
        display_name="OpenAI",
        key_variables=("OPENAI_API_KEY", "EMBEDDING_API_KEY"),
        key_hint="OpenAI's API needs one; set OPENAI_BASE_URL for another endpoint",
        # OpenAI's own small models; another endpoint names its own models, so the settings name them there.
        chat_model="gpt-4o-mini",
        memory_model="gpt-4o-mini",
        embedding_model="text-embedding-3-small",
        # Selection, measured on the local llama.cpp server's small model (docs/benchmarks.md section 4).
        extraction="select",
        module="bot.llm.openai_compat.client",
        variables=(
            "OPENAI_BASE_URL",
            "EMBEDDING_BASE_URL",
            "OPENAI_TIMEOUT_SECONDS",
            "OPENAI_MAX_RETRIES",
            "OPENAI_TOOLS",
            "OPENAI_IMAGES",
            "OPENAI_JSON",
        ),
        # Served by OpenAI-compatible local servers (llama.cpp, Ollama).
        distances={"all-minilm-l6-v2": DistanceCuts(duplicate=0.01, candidate=0.40, recall=0.65)},
        identity_prefix="openai:",
        needs_key=lambda settings, part: not _openai_base_url(settings, part),  # only OpenAI's own API
        named=lambda settings, part: endpoint_name(_openai_base_url(settings, part)),
        retries_variable="OPENAI_MAX_RETRIES",
        embeds_apart=_openai_embeds_apart,
    )
)
