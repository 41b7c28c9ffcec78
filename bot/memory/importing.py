"""`facts import`'s use case: the facts read from a file (portable.py) sorted (not those memory holds
already, nor opted-out people's) and stored in batches, as they are or consolidated, with a report of
what became of every line, so that a partial import is never a mystery and running it again after a
failure imports only what is missing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.memory.consolidate import Consolidator
from bot.memory.model_ports import Embedder
from bot.memory.models import AppliedChange, Decision, NewFact
from bot.memory.ports import Storage, StorageWorker

if TYPE_CHECKING:
    from bot.memory.service import MemoryService


IMPORT_BATCH = 100
CONSOLIDATED = {
    "ADD": "added (nothing similar known)",
    "KEEP": "added beside similar facts",
    "MERGE": "merged into a known fact",
    "INVALIDATE": "replaced an older fact",
    "DUPLICATE": "already known",
}


@dataclass
class ImportReport:
    """What an import did, line by line where it matters, so a partial import is never a mystery."""

    read: int
    bad_lines: list[str]
    imported: int = 0
    duplicate_lines: list[int] = field(default_factory=list)
    opted_out_lines: list[int] = field(default_factory=list)
    error: str | None = None
    decisions: Counter[str] = field(default_factory=Counter)  # consolidated: what became of the lines

    def as_json(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "decisions": dict(self.decisions),
            "read": self.read,
            "skipped_duplicates": len(self.duplicate_lines),
            "skipped_opted_out": len(self.opted_out_lines),
            "duplicate_lines": self.duplicate_lines,
            "opted_out_lines": self.opted_out_lines,
            "bad_lines": self.bad_lines,
            "error": self.error,
        }

    def summary(self) -> str:
        parts = [f"imported {self.imported} of {self.read} facts"]
        if self.error:
            parts[0] += " before the failure (run the same import again: facts already stored are skipped)"
        if self.duplicate_lines:
            parts.append(f"skipped {len(self.duplicate_lines)} duplicate(s)")
        if self.opted_out_lines:
            parts.append(f"skipped {len(self.opted_out_lines)} of people who opted out")
        if self.decisions:
            parts.append(
                "consolidated: "
                + ", ".join(f"{count} {CONSOLIDATED[name]}" for name, count in sorted(self.decisions.items()))
            )
        if self.bad_lines:
            parts.append(f"{len(self.bad_lines)} bad line(s)")
        return "; ".join(parts)


@dataclass
class ImportTriage:
    """Indexes into a list of facts to import: new ones, ones memory holds already, opted-out people's."""

    new: list[int] = field(default_factory=list)
    known: list[int] = field(default_factory=list)
    opted_out: list[int] = field(default_factory=list)


async def sort_for_import(store: StorageWorker, facts: list[NewFact]) -> ImportTriage:
    """Which of `facts` (by their place in the list) to import: not those of opted-out people, nor
    those memory already holds or the list repeats. "Already holds" counts facts superseded since,
    so importing a file again never revives old statements."""
    opted_out = await store.call(Storage.opted_out)
    texts: dict[tuple[str, str], list[str]] = {}
    for fact in facts:
        texts.setdefault((fact.scope, fact.user_id), []).append(fact.text)
    known: dict[tuple[str, str], set[str]] = {}
    for owner, owned in texts.items():
        if owner not in opted_out:
            held = await store.call(Storage.facts_by_text, *owner, owned, all_statuses=True)
            known[owner] = set(held)
    triage = ImportTriage()
    for index, fact in enumerate(facts):
        owner, key = (fact.scope, fact.user_id), fact.text.casefold()
        if owner in opted_out:
            triage.opted_out.append(index)
        elif key in known[owner]:
            triage.known.append(index)
        else:
            known[owner].add(key)
            triage.new.append(index)
    return triage


async def import_facts(
    store: StorageWorker,
    embedder: Embedder,
    consolidator: Consolidator,
    facts: list[NewFact],
    *,
    consolidate: bool = False,
) -> list[AppliedChange] | int:
    """Store facts brought from elsewhere: embedded in batches, added as they are or consolidated."""
    if consolidate:
        return await consolidator.run(facts, user_names={(f.scope, f.user_id): f.user_name for f in facts})
    vectors = await embedder.embed([f.text for f in facts], "document")
    for fact, vector in zip(facts, vectors, strict=True):
        fact.embedding = vector
    return len(await store.call(Storage.add_facts, facts))


async def import_lines(
    service: MemoryService,
    lines: list[tuple[int, NewFact]],
    report: ImportReport,
    *,
    consolidate: bool,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Store the (line number, fact) pairs not yet known, counting into `report` as batches land: when a
    batch fails, the report already says what the earlier ones stored. `progress(facts done, facts to
    import)` is called after each batch."""
    fresh = await _not_yet_known(service, lines, report)
    await _import_batches(service, fresh, consolidate, report, progress)


async def _not_yet_known(
    service: MemoryService, lines: list[tuple[int, NewFact]], report: ImportReport
) -> list[NewFact]:
    """The facts to import (the engine sorts them), with the line numbers of the rest in the report."""
    triage = await service.sort_for_import([fact for _, fact in lines])
    report.opted_out_lines += [lines[i][0] for i in triage.opted_out]
    report.duplicate_lines += [lines[i][0] for i in triage.known]
    return [lines[i][1] for i in triage.new]


async def _import_batches(
    service: MemoryService,
    facts: list[NewFact],
    consolidate: bool,
    report: ImportReport,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Import in batches; each batch is stored in one transaction, so `report.imported` is what landed."""
    for start in range(0, len(facts), IMPORT_BATCH):
        batch = facts[start : start + IMPORT_BATCH]
        result = await service.import_facts(batch, consolidate=consolidate)
        if isinstance(result, int):
            report.imported += result
        else:
            stored = [c for c in result if c.decision is not Decision.DUPLICATE]
            report.imported += len(stored)
            report.decisions.update(change.decision.value for change in result)
            if len(batch) > len(result):  # near-identical lines of the batch folded into one
                report.decisions["DUPLICATE"] += len(batch) - len(result)
        for fact in batch:  # stored: let the vectors go, so a big file needs memory for one batch only
            fact.embedding = None
        if progress:
            progress(start + len(batch), len(facts))
