"""The composition root: settings -> models, storage, memory service, bot.

The only place that reads `Settings` to build the parts; the engine takes plain policies and ports,
so the CLI, the Discord client, the benchmarks and the tests all get a service wired the same way.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from bot.chat.prompts import REMEMBER_TOOL
from bot.config import GEMINI_DISTANCES, Settings
from bot.gist import first_line
from bot.llm.providers import UNCALIBRATED_MODEL, Part
from bot.llm.schedule import EndpointGate, serves_one_at_a_time
from bot.llm.usage import Usage
from bot.memory.capture import FlushPolicy
from bot.memory.counting import ASK_AGAIN_EVERY, STOP_AFTER
from bot.memory.extract import SELECT, counts_lines
from bot.memory.maintenance import Maintenance
from bot.memory.model_ports import ChatModel, ChatTurn, Embedder, InlineData, JsonModel, ModelError, Purpose
from bot.memory.policy import ConsolidationPolicy, MemoryPolicy, RecallPolicy
from bot.memory.prompts.remembering import REMEMBER_SYSTEM, RememberResult, remember_prompt
from bot.memory.service import MemoryService
from bot.processes import process_holder
from bot.storage import AsyncStore, DatabaseError
from bot.storage.copy_to_postgres import MigrationReport, copy_database
from bot.storage.errors import MigrationRefused as MigrationRefused  # for the CLI: a refusal, not a cut
from bot.storage.locations import backend_for

if TYPE_CHECKING:  # the SDK behind it takes a second to import: only a process that uses it pays
    from bot.llm.openai_compat import OpenAICompatClient

P = TypeVar("P")
log = logging.getLogger(__name__)

# A 1x1 PNG: what `check --online` shows an OpenAI-compatible chat model to learn whether it takes images.
PROBE_IMAGE = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


def memory_policy(settings: Settings) -> MemoryPolicy:
    """The engine's knobs from the environment's settings (`RECALL_*` fill `RecallPolicy`, and so on)."""
    if not settings.calibrated:
        _say_uncalibrated(settings.embedding_model)
    return MemoryPolicy(
        flush=_fields(FlushPolicy, settings, "memory_flush_"),
        recall=_fields(RecallPolicy, settings, "recall_"),
        consolidation=_fields(ConsolidationPolicy, settings, "consolidate_"),
        no_memory_marker=settings.memory_no_memory_marker,
        community=settings.memory_community,
        extraction=extraction_mode(settings),
        removed_server_seconds=settings.memory_removed_server_days * 86_400,
    )


def extraction_mode(settings: Settings) -> str:
    """EXTRACTION_MODE, or for `auto` the mode measured best on the extraction model's provider (its
    record's `extraction`)."""
    if settings.extraction_mode != "auto":
        return settings.extraction_mode
    return settings.provider.extraction


@functools.cache
def _say_uncalibrated(model: str) -> None:
    """Said once per model."""
    log.info("%s", uncalibrated_line(model))


def uncalibrated_line(model: str) -> str:
    """What is said (once per model at start, and by `check`) of an embedding model whose distance cuts
    were never measured: the settings not set get another model's, which may not fit it."""
    cuts = GEMINI_DISTANCES
    return (
        f"EMBEDDING_MODEL={model} has no calibrated distance cuts: the distance settings not set are "
        f"{UNCALIBRATED_MODEL}'s (duplicate {cuts.duplicate}, candidate {cuts.candidate}, recall "
        f"{cuts.recall}); `python -m bench.calibrate_distances --embedder settings` measures this model's"
    )


def _fields(policy: type[P], settings: Settings, prefix: str) -> P:
    """A policy whose fields are the settings named `prefix` + field (fields without one keep defaults)."""
    values = {
        f.name: getattr(settings, prefix + f.name)
        for f in fields(policy)  # type: ignore[arg-type]  # every policy is a dataclass
        if hasattr(settings, prefix + f.name)
    }
    return policy(**values)


def failures(settings: Settings) -> tuple[type[Exception], ...]:
    """Every error that means a model or the database failed (ours and the backend driver's): reported in
    one line (`failure_line`), never as a traceback."""
    return (ModelError, DatabaseError, *backend_for(settings.database_location).errors)


async def open_store(settings: Settings, *, allow_model_change: bool = False) -> AsyncStore:
    """The database the settings name, checked against their embedding model (unless a model change is
    allowed: listing and forgetting work whatever the embedding state)."""
    return await AsyncStore.open(
        settings.database_location,
        embedding_model=settings.embedding_identity,
        dimensions=settings.embedding_dimensions,
        allow_model_change=allow_model_change,
    )


@dataclass(frozen=True)
class Models:
    """The models the settings choose: structured answers for the engine, embeddings, the chat, and the
    usage counters they all count in. One client may play several parts; `aclose` closes each once."""

    json: JsonModel
    embedder: Embedder
    chat: ChatModel
    usage: Usage
    clients: tuple[Any, ...]

    async def aclose(self) -> None:
        for client in self.clients:
            with contextlib.suppress(Exception):
                await client.aclose()


def open_models(settings: Settings, *, max_retries: int | None = None) -> Models:
    """The clients of the settings' providers: MODEL_PROVIDER's chats, extracts and consolidates,
    EMBEDDING_PROVIDER's embeds (one client when they are the same), all counting in one `Usage`, and
    taking turns at one `EndpointGate` per endpoint (MODEL_CONCURRENCY calls at once, replies first).
    `max_retries` overrides their retry budget."""
    usage = Usage()
    chat = settings.provider.open(settings, usage)
    embedder = chat
    if settings.embedder is not settings.provider or settings.embedder.embeds_apart(settings):
        embedder = settings.embedder.open(settings, usage, "embeddings")
    clients = (chat,) if embedder is chat else (chat, embedder)
    gates: dict[str, EndpointGate] = {}
    for client in clients:  # one gate per endpoint: the embedder may be the chat's server too
        slots = settings.model_concurrency
        if slots is None:
            slots = 1 if serves_one_at_a_time(client.base_url) else 0
        client.gate = gates.setdefault(client.where, EndpointGate(slots))
    if max_retries is not None:
        for client in clients:
            client.max_retries = max_retries
    return Models(json=chat, embedder=embedder, chat=chat, usage=usage, clients=clients)


def _where(settings: Settings, part: Part) -> str:
    """The endpoint serving `part`, as its provider names it (one client per endpoint)."""
    record = settings.provider if part == "chat" else settings.embedder
    return record.endpoint(settings, part)


async def probe_models(settings: Settings) -> dict[str, dict[str, Any]]:
    """`check --online`: each model provider in use tried for next to nothing, a verdict per provider.

    The embedder embeds one word (the key, the endpoint and the embedding model at its dimensions). An
    OpenAI-compatible chat provider also answers one short chat (with a tool offered and a 1x1 image)
    and one small JSON task, so the verdict says what the endpoint takes: tools, images, which JSON mode.
    """
    from bot.llm.openai_compat import OpenAICompatClient

    variable = settings.provider.retries_variable
    models = open_models(settings, max_retries=min(1, settings.value(variable)) if variable else 1)
    verdicts: dict[str, dict[str, Any]] = {}
    try:
        name = provider_name(settings, Purpose.EMBED)
        verdicts[name] = await _verdict(name, _probe_embedder(settings, models))
        if isinstance(models.chat, OpenAICompatClient):
            name = provider_name(settings)
            selects = extraction_mode(settings) == SELECT
            verdicts[name] = _both(
                verdicts.get(name), await _verdict(name, _probe_chat(models.chat, selects=selects))
            )
    finally:
        await models.aclose()
    return verdicts


def _both(first: dict[str, Any] | None, second: dict[str, Any]) -> dict[str, Any]:
    """One provider's verdict from two probes: the first failure, else both details."""
    if first is None or not second["ok"]:
        return second if first is None or first["ok"] else first
    return first if not first["ok"] else {"ok": True, "detail": f"{first['detail']}; {second['detail']}"}


async def _verdict(name: str, probe: Any) -> dict[str, Any]:
    try:
        detail = await probe
    except ModelError as exc:
        text = str(exc)
        return {"ok": False, "error": text if text.startswith(name) else f"{name}: {text}"}
    return {"ok": True, "detail": detail}


async def _probe_embedder(settings: Settings, models: Models) -> str:
    await models.embedder.embed(["check"], "query")
    return f"{settings.embedding_model} answered at {settings.embedding_dimensions} dimensions"


async def _probe_chat(client: OpenAICompatClient, *, selects: bool) -> str:
    turn = ChatTurn("user", "Say OK.", parts=[InlineData("image/png", PROBE_IMAGE)])
    async with contextlib.aclosing(
        client.chat_stream(system="Answer in one word.", turns=[turn], tools=[REMEMBER_TOOL])
    ) as stream:
        async for _ in stream:
            pass
    await client.generate_json(
        Purpose.EXTRACT,
        system=REMEMBER_SYSTEM,
        prompt=remember_prompt("Ana", "I like tea"),
        schema=RememberResult,
    )
    features = client.features
    json_mode = {
        "schema": "response schema",
        "object_schema": "JSON mode with the schema",
        "object": "JSON mode",
        "prompt": "schema in the instruction",
    }
    ignored = (
        " (response_format ignored)" if features.schema_in_prompt and features.json_mode != "prompt" else ""
    )
    said = (
        f"{client.chat_model} answered; tools: {_feature(features.tools, 'tools', client)}, "
        f"images: {_feature(features.images, 'images', client)}, "
        f"JSON: {json_mode[features.json_mode]}{ignored}"
    )
    if selects:
        try:
            said += f"; line selection: {_selection_verdict(await counts_lines(client))}"
        except ModelError as exc:
            said += f"; line selection: no usable answer ({first_line(exc)})"
    return said + f"; {_turns(client)}"


def _selection_verdict(counted: bool | None) -> str:
    if counted:
        return (
            f"tells nothing (every line, or past its budget): after {STOP_AFTER} such selections in a row "
            f"the bot reads chunks by its own rules, asking again every {ASK_AGAIN_EVERY} flushes"
        )
    return "chooses lines" if counted is False else "could not tell"


def _turns(client: OpenAICompatClient) -> str:
    """How the bot takes turns at the endpoint (a local server is sent one call at a time)."""
    slots = client.gate.slots
    if not slots:
        return "calls at once: no limit (MODEL_CONCURRENCY)"
    return f"calls at once: {slots}, replies first (MODEL_CONCURRENCY)"


def _feature(on: bool, name: str, client: OpenAICompatClient) -> str:
    if on:
        return "yes"
    return (
        f"off (OPENAI_{name.upper()}=off)"
        if name in client.switched_off
        else "no (the endpoint refuses them)"
    )


def provider_name(settings: Settings, purpose: Purpose | None = None) -> str:
    """The provider of `purpose` as messages name it ("Gemini", "OpenAI", an endpoint's host): its
    record's `endpoint`."""
    return _where(settings, "embeddings" if purpose is Purpose.EMBED else "chat")


def model_name(settings: Settings, purpose: Purpose | str | None = None) -> str:
    """The model doing `purpose` (a `Purpose` or its value): the embedding model for embeddings, the
    memory model for reading and consolidating, the chat model for replies."""
    value = purpose.value if isinstance(purpose, Purpose) else purpose
    if value == Purpose.EMBED.value:
        return settings.embedding_model
    return settings.chat_model_name if value in (None, Purpose.CHAT.value) else settings.memory_model_name


def key_variable(settings: Settings, purpose: Purpose | None = None) -> str:
    """The variable of the API key the provider of `purpose` reads (its record's first)."""
    return (settings.embedder if purpose is Purpose.EMBED else settings.provider).key_variables[0]


def usage_report(settings: Settings, usage: Usage, scope: str | None = None) -> dict[str, Any]:
    """The model usage as stats keep it: who served it (providers and models, as messages name them)
    and the counters per purpose (all, or those of `scope`)."""
    return {
        "provider": provider_name(settings),
        "embeddings_provider": provider_name(settings, Purpose.EMBED),
        "models": {
            "chat": settings.chat_model_name,
            "memory": settings.memory_model_name,
            "embeddings": settings.embedding_model,
        },
        "purposes": usage.snapshot(scope),
    }


async def open_memory(settings: Settings, models: Models | None = None) -> MemoryService:
    """The memory service on the settings' database and models (opened here unless given);
    not started yet. Closing the service closes the models."""
    store = await open_store(settings)
    models = models or open_models(settings)
    service = MemoryService(
        store,
        models.json,
        models.embedder,
        memory_policy(settings),
        usage=functools.partial(usage_report, settings, models.usage),
        holder=process_holder(),
        close_models=models.aclose,
    )
    models.usage.listeners.append(service.daily_use.model_use)  # a server's model calls per day
    return service


async def open_maintenance(settings: Settings, *, embedder: Embedder | None = None) -> Maintenance:
    """The operator's use cases on the settings' database, whatever its embedding state; `embedder` for
    re-embedding only."""
    return Maintenance(await open_store(settings, allow_model_change=True), embedder)


def database_exists(settings: Settings) -> bool:
    """Whether there is a database to read (commands that only read must not create an empty one)."""
    return backend_for(settings.database_location).exists(str(settings.database_location))


def database_backend(settings: Settings) -> str:
    """The name of the storage backend the settings choose ("SQLite", "PostgreSQL")."""
    return backend_for(settings.database_location).name


def migrate_database(
    settings: Settings,
    target: Settings,
    *,
    into_non_empty: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """Copy the SQLite file of `settings` into the PostgreSQL database of `target` (resumable, verified)."""
    if not target.database_url:
        raise DatabaseError("the target must be a PostgreSQL database (postgresql://...)")
    return copy_database(
        settings.database_path, target.database_url, into_non_empty=into_non_empty, progress=progress
    )


def failure_line(settings: Settings, exc: BaseException) -> str:
    """One line for a model or database failure, naming which failed (and never a password)."""
    if isinstance(exc, ModelError):
        return f"{provider_name(settings, exc.purpose)}: {exc}"
    location, where = str(settings.database_location), settings.database_shown
    text = str(exc) if isinstance(exc, DatabaseError) else backend_for(location).describe(location, exc)
    return text if where in text else f"database {where}: {text}"
