"""The engine's knobs, as plain values: the composition root (`bot/app.py`) fills them from settings.

The engine reads no environment and no `Settings`, so a test, a benchmark or another front end builds
a `MemoryPolicy` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.memory.capture import FlushPolicy
from bot.memory.extract import ENUMERATE
from bot.memory.recall import CONTEXT_WEIGHT, KEYWORD_WEIGHT


@dataclass(frozen=True)
class RecallPolicy:
    facts_per_person: int = 6
    max_distance: float = 0.55
    token_budget: int = 1200
    keyword_weight: float = KEYWORD_WEIGHT
    context_weight: float = CONTEXT_WEIGHT


@dataclass(frozen=True)
class ConsolidationPolicy:
    candidate_distance: float = 0.35
    duplicate_distance: float = 0.02


@dataclass(frozen=True)
class MemoryPolicy:
    flush: FlushPolicy = field(default_factory=FlushPolicy)
    recall: RecallPolicy = field(default_factory=RecallPolicy)
    consolidation: ConsolidationPolicy = field(default_factory=ConsolidationPolicy)
    no_memory_marker: str = "!nomem"  # a message starting with it is never remembered
    community: bool = True  # servers' community facts and episodes (MEMORY_COMMUNITY)
    extraction: str = ENUMERATE  # how extraction asks the model (EXTRACTION_MODE): ENUMERATE or SELECT
    settings_poll_seconds: float = 0.5  # how soon a change made by another process is honoured here
    index_upkeep_seconds: float = 1800.0  # how often the keyword index is looked at (upkeep.tidy_word_index)
    # How soon what a forget deleted leaves the files where the backend keeps it until a VACUUM (PostgreSQL).
    vacuum_seconds: float = 120.0
    # A server the bot was removed from keeps its memory this long (a mistaken kick must not erase a year),
    # then everything learned there is erased (MEMORY_REMOVED_SERVER_DAYS; service.forget_removed_servers).
    removed_server_seconds: float = 30 * 86_400.0
