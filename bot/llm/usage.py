"""Model usage counters per purpose, shared by every provider adapter (and by two adapters at once when
chat and embeddings come from different providers), so `/memory-admin stats` reads one set of figures;
and the words they are read in there and in `stats` (`usage_lines`, `served_by`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.gist import plural
from bot.memory.model_ports import Purpose, current_usage_scope


class Counters:
    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0
    retries: int = 0
    embedded_texts: int = 0


def _per_purpose() -> dict[Purpose, Counters]:
    return {p: Counters() for p in Purpose}


@dataclass
class Usage:
    """Counters since start, per purpose, so operators can see what the bot costs and how often it fails.

    `calls` counts requests that got an answer (refusals and malformed answers included), `errors` final
    failures (after retries), `retries` the extra attempts. Tokens are what the answers report.
    Calls made inside `usage_scope()` are also counted for that scope, so a server sees only its own,
    and told to each of `listeners` (scope, purpose, the amounts added): the engine's use per day.
    """

    counters: dict[Purpose, Counters] = field(default_factory=_per_purpose)
    scopes: dict[str, dict[Purpose, Counters]] = field(default_factory=dict)
    listeners: list[Callable[[str, Purpose, Mapping[str, int]], None]] = field(default_factory=list)

    def add(self, purpose: Purpose, **amounts: int) -> None:
        """Add to the counters of `purpose`, overall and for the scope the call is made for (if any)."""
        targets = [self.counters[purpose]]
        scope = current_usage_scope()
        if scope is not None:
            targets.append(self.scopes.setdefault(scope, _per_purpose())[purpose])
            for listener in self.listeners:
                listener(scope, purpose, amounts)
        for counters in targets:
            for name, amount in amounts.items():
                setattr(counters, name, getattr(counters, name) + amount)

    def record(self, purpose: Purpose, prompt_tokens: int = 0, output_tokens: int = 0) -> None:
        """Count one answered request and the tokens its answer reports."""
        self.add(purpose, calls=1)
        self.add_tokens(purpose, prompt_tokens, output_tokens)

    def add_tokens(self, purpose: Purpose, prompt_tokens: int, output_tokens: int) -> None:
        if prompt_tokens or output_tokens:
            self.add(purpose, prompt_tokens=prompt_tokens, output_tokens=output_tokens)

    def snapshot(self, scope: str | None = None) -> dict[str, dict[str, int]]:
        """Plain JSON-ready numbers, e.g. `{"extract": {"calls": 3, ...}, "embed": {..., "embedded_texts": 40}}`.

        With `scope`, only the calls made for it.
        """
        counters = self.counters if scope is None else self.scopes.get(scope, _per_purpose())
        out: dict[str, dict[str, int]] = {}
        for purpose, c in counters.items():
            out[purpose.value] = {
                "calls": c.calls,
                "prompt_tokens": c.prompt_tokens,
                "output_tokens": c.output_tokens,
                "errors": c.errors,
                "retries": c.retries,
            }
        out[Purpose.EMBED.value]["embedded_texts"] = counters[Purpose.EMBED].embedded_texts
        return out


def tokens(value: Any) -> int:
    """A token count as an answer reports it: a number, or nothing (None, missing)."""
    return value if isinstance(value, int) and value > 0 else 0


def usage_lines(purposes: dict[str, dict[str, int]]) -> list[str]:
    """A `Usage.snapshot` in words, one line per purpose that was used; one sentence when none was."""
    lines = []
    for purpose, c in purposes.items():
        if c.get("calls") or c.get("errors"):
            lines.append(
                f"{purpose}: {plural(c.get('calls', 0), 'call')}, {c.get('prompt_tokens', 0):,} tokens in, "
                f"{c.get('output_tokens', 0):,} out, {plural(c.get('errors', 0), 'error')}, "
                f"{plural(c.get('retries', 0), 'retry', 'retries')}"
            )
    return lines or ["No model calls yet."]


def served_by(report: dict[str, Any]) -> str:
    """Who served the usage of a usage report (`bot.app.usage_report`), in one sentence: the models
    and where they run, as messages name the providers."""
    models = report.get("models", {})
    chat, memory, embeddings = models.get("chat"), models.get("memory"), models.get("embeddings")
    provider, embedder = report.get("provider", ""), report.get("embeddings_provider", "")
    said = f"{chat} (chat and memory)" if chat == memory else f"{chat} (chat) and {memory} (memory)"
    if embedder == provider:
        return f"Models: {said} and {embeddings} (embeddings), on {provider}."
    return f"Models: {said} on {provider}; {embeddings} (embeddings) on {embedder}."
