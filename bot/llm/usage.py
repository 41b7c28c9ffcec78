"""Model usage counters per purpose, shared by every provider adapter (and by two adapters at once when
chat and embeddings come from different providers), so `/memory-admin stats` reads one set of figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.memory.ports import Purpose, current_usage_scope


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
    Calls made inside `usage_scope()` are also counted for that scope, so a server sees only its own.
    """

    counters: dict[Purpose, Counters] = field(default_factory=_per_purpose)
    scopes: dict[str, dict[Purpose, Counters]] = field(default_factory=dict)

    def add(self, purpose: Purpose, **amounts: int) -> None:
        """Add to the counters of `purpose`, overall and for the scope the call is made for (if any)."""
        targets = [self.counters[purpose]]
        scope = current_usage_scope()
        if scope is not None:
            targets.append(self.scopes.setdefault(scope, _per_purpose())[purpose])
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
