"""`python -m bot ...`: run the bot, and the operator commands (check, facts, recall, stats, reembed).

Every command prints plain lines for people and JSON with `--json`; problems go to stderr, one line each,
with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bot.config import ConfigError, Settings, load_settings
from bot.memory.db import DatabaseError
from bot.memory.models import NewFact, valid_scope
from bot.memory.recall import Participant
from bot.memory.store import Store
from bot.memory.text import clean, worth_reading

EXIT_PROBLEM = 1
EXIT_USAGE = 2
IMPORT_BATCH = 100


class CliError(Exception):
    """A problem to report on stderr (one line per entry) before exiting non-zero."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def _scope(text: str) -> str:
    if not valid_scope(text):
        raise argparse.ArgumentTypeError(f"invalid scope {text!r}: expected guild:<id> or dm")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot", description="A Discord bot with long-term memory.")
    parser.add_argument("--env-file", default=".env", help="settings file to read (default: .env)")
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("run", help="connect to Discord and run the bot (the default)")

    check = sub.add_parser("check", help="show effective settings and check the database")
    check.add_argument("--json", action="store_true")

    facts = sub.add_parser("facts", help="list, forget or import facts").add_subparsers(dest="facts_command")
    flist = facts.add_parser("list", help="a person's facts in one scope")
    flist.add_argument("--scope", required=True, type=_scope)
    flist.add_argument("--user", required=True)
    flist.add_argument("--all-statuses", action="store_true", help="include merged and invalidated facts")
    flist.add_argument("--json", action="store_true")
    fforget = facts.add_parser("forget", help="hard-delete one fact or all of a person's facts in a scope")
    fforget.add_argument("--scope", required=True, type=_scope)
    fforget.add_argument("--user", required=True)
    which = fforget.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, dest="fact_id")
    which.add_argument("--all", action="store_true")
    fforget.add_argument("--json", action="store_true")
    fimport = facts.add_parser("import", help="import facts from a JSONL file")
    fimport.add_argument("file", type=Path)
    fimport.add_argument("--consolidate", action="store_true", help="run them through consolidation")
    fimport.add_argument("--json", action="store_true")

    recall = sub.add_parser("recall", help="what the bot would recall for a query")
    recall.add_argument("--scope", type=_scope)
    recall.add_argument("--user", action="append", dest="users", default=[])
    recall.add_argument("--query")
    recall.add_argument(
        "--queries", type=Path, help="JSONL of {scope, user_ids, query}; one JSON line out each"
    )
    recall.add_argument("--limit", type=int, help="facts per person (default RECALL_FACTS_PER_PERSON)")
    recall.add_argument("--json", action="store_true")

    stats = sub.add_parser("stats", help="counts by status, people, pending messages")
    stats.add_argument("--json", action="store_true")

    reembed = sub.add_parser("reembed", help="re-embed every fact with the configured embedding model")
    reembed.add_argument("--batch", type=int, default=100)
    reembed.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "run"
    try:
        settings = load_settings(dotenv_path=args.env_file)
    except ConfigError as exc:
        return _report(exc.problems)
    # The bot logs to stdout (what hosts collect); operator commands keep stdout for their output.
    logging.basicConfig(
        level=settings.log_level,
        stream=sys.stdout if command == "run" else sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if command == "run":
            from bot.runner import run_bot

            return run_bot(settings)
        if command == "check":
            return cmd_check(settings, args)
        if command == "facts":
            if args.facts_command is None:
                parser.parse_args(["facts", "--help"])
            return asyncio.run(cmd_facts(settings, args))
        if command == "recall":
            return asyncio.run(cmd_recall(settings, args))
        if command == "stats":
            return cmd_stats(settings, args)
        if command == "reembed":
            return asyncio.run(cmd_reembed(settings, args))
    except CliError as exc:
        return _report(exc.lines)
    except DatabaseError as exc:
        return _report([str(exc)])
    except KeyboardInterrupt:
        return 130
    parser.error(f"unknown command {command}")
    return EXIT_USAGE


def _report(lines: list[str]) -> int:
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM


def _emit(args: argparse.Namespace, data: Any, human: Iterator[str] | list[str]) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        for line in human:
            print(line)


def _open_store(settings: Settings) -> Store:
    return Store.open(
        settings.database_path,
        embedding_model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
    )


# ---- check --------------------------------------------------------------------------------------------


def cmd_check(settings: Settings, args: argparse.Namespace) -> int:
    problems = settings.missing("discord_token", "gemini_api_key")
    database: dict[str, Any] = {"path": str(settings.database_path)}
    try:
        store = _open_store(settings)
        try:
            database.update(store.health(), ok=True)
        finally:
            store.close()
    except DatabaseError as exc:
        database.update(ok=False, error=str(exc))
        problems.append(f"database {settings.database_path}: {exc}")
    report = {"ok": not problems, "settings": settings.masked(), "database": database, "problems": problems}
    human = [f"{k} = {v}" for k, v in report["settings"].items()]
    if database.get("ok"):
        human.append(
            f"database OK: {database['path']} (SQLite {database['sqlite_version']}, sqlite-vec "
            f"{database['sqlite_vec_version']}, FTS5, {database['embedding_model']} at "
            f"{database['embedding_dimensions']} dimensions)"
        )
    _emit(args, report, human)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM if problems else 0


# ---- facts --------------------------------------------------------------------------------------------


def _fact_json(fact: Any) -> dict[str, Any]:
    data = asdict(fact)
    data["status"] = str(fact.status)
    data["source_message_ids"] = list(fact.source_message_ids)
    return data


async def cmd_facts(settings: Settings, args: argparse.Namespace) -> int:
    if args.facts_command == "import":
        return await cmd_import(settings, args)
    store = _open_store(settings)
    try:
        if args.facts_command == "list":
            facts = store.list_facts(args.scope, args.user, all_statuses=args.all_statuses, limit=1_000_000)
            _emit(
                args,
                [_fact_json(f) for f in facts],
                [f"#{f.id} [{f.status}] {f.recorded_at[:10]} {f.text}" for f in facts] or ["no facts"],
            )
            return 0
        ids = None if args.all else [args.fact_id]
        count = store.forget(args.scope, args.user, ids, actor="cli")
        if ids and not count:
            raise CliError(f"no fact #{args.fact_id} for user {args.user} in {args.scope}")
        _emit(args, {"forgotten": count}, [f"forgot {count} fact(s)"])
        return 0
    finally:
        store.close()


def jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any] | ValueError]]:
    """(line number, object) for each non-blank line, or (line number, error) for a line that is not one."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                yield number, ValueError(f"not JSON: {exc}")
                continue
            yield number, item if isinstance(item, dict) else ValueError("expected a JSON object")


def _scope_field(item: dict[str, Any]) -> str:
    scope = item.get("scope")
    if not isinstance(scope, str) or not valid_scope(scope):
        raise ValueError("'scope' must be guild:<id> or dm")
    return scope


def read_import_lines(path: Path) -> tuple[list[NewFact], list[str]]:
    """Parse a JSONL import file; bad lines are reported by number and the good ones kept."""
    facts: list[NewFact] = []
    problems: list[str] = []
    for number, item in jsonl_objects(path):
        try:
            if isinstance(item, ValueError):
                raise item
            scope, user_id, text = _scope_field(item), item.get("user_id"), item.get("text")
            if isinstance(user_id, bool) or not isinstance(user_id, str | int) or not str(user_id).strip():
                raise ValueError("'user_id' must be a non-empty string or number")
            if not isinstance(text, str) or not worth_reading(text):
                raise ValueError("'text' must be a non-empty string")
            name = item.get("user_name")
            facts.append(
                NewFact(scope, str(user_id).strip(), str(name) if name else "", clean(text, 500), [])
            )
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
    return facts, problems


async def cmd_import(settings: Settings, args: argparse.Namespace) -> int:
    facts, problems = read_import_lines(args.file)
    missing = settings.missing("gemini_api_key")
    if missing:
        raise CliError(*missing, "facts import embeds every fact with Gemini")
    from bot.memory.service import MemoryService

    service = await MemoryService.open(settings)
    imported = 0
    try:
        for start in range(0, len(facts), IMPORT_BATCH):
            batch = facts[start : start + IMPORT_BATCH]
            result = await service.import_facts(batch, consolidate=args.consolidate)
            imported += result if isinstance(result, int) else len(result)
    finally:
        await service.close()
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    _emit(
        args,
        {"imported": imported, "read": len(facts), "bad_lines": problems},
        [
            f"imported {imported} of {len(facts)} facts"
            + (f"; {len(problems)} bad line(s)" if problems else "")
        ],
    )
    return EXIT_PROBLEM if problems else 0


# ---- recall -------------------------------------------------------------------------------------------


async def cmd_recall(settings: Settings, args: argparse.Namespace) -> int:
    if args.queries is None and not (args.scope and args.users and args.query is not None):
        raise CliError("recall needs --scope, at least one --user and --query, or --queries FILE.jsonl")
    missing = settings.missing("gemini_api_key")
    if missing:
        raise CliError(*missing, "recall embeds the query with Gemini")
    if args.limit is not None:
        from dataclasses import replace

        settings = replace(settings, recall_facts_per_person=max(1, args.limit))
    from bot.memory.service import MemoryService

    service = await MemoryService.open(settings)
    problems: list[str] = []
    try:
        await service.reload_caches()
        if args.queries is None:
            answer = await _recall_one(service, args.scope, args.users, args.query)
            _emit(args, answer, _recall_lines(answer))
        else:
            problems = await _recall_file(service, args.queries)
    finally:
        await service.close()
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM if problems else 0


async def _recall_one(service: Any, scope: str, users: list[str], query: str) -> dict[str, Any]:
    names = await service.store.call(Store.user_names, scope, users)
    people = [Participant(str(u), names.get(str(u), "")) for u in users]
    result = await service.recall(scope, people, query)
    return {
        "scope": scope,
        "query": query,
        "users": [
            {
                "user_id": p.user_id,
                "facts": [
                    {
                        "id": s.fact.id,
                        "text": s.fact.text,
                        "score": round(s.score, 6),
                        "distance": None if s.distance is None else round(s.distance, 6),
                        "keyword_rank": s.keyword_rank,
                    }
                    for s in result.facts.get(p.user_id, [])
                ],
            }
            for p in people
        ],
        "block": result.block,
        "elapsed_ms": round(result.elapsed_ms, 3),
    }


def _recall_lines(answer: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for user in answer["users"]:
        lines.append(f"user {user['user_id']}:")
        lines.extend(f"  #{f['id']} ({f['score']:.4f}) {f['text']}" for f in user["facts"])
        if not user["facts"]:
            lines.append("  (nothing recalled)")
    return lines


async def _recall_file(service: Any, path: Path) -> list[str]:
    problems: list[str] = []
    for number, item in jsonl_objects(path):
        try:
            if isinstance(item, ValueError):
                raise item
            scope, users, query = _scope_field(item), item.get("user_ids"), item.get("query")
            if not isinstance(users, list) or not users:
                raise ValueError("'user_ids' must be a non-empty list")
            if not isinstance(query, str):
                raise ValueError("'query' must be a string")
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
            print(json.dumps({"line": number, "error": str(exc)}))
            continue
        answer = await _recall_one(service, scope, [str(u) for u in users], query)
        answer["line"] = number
        print(json.dumps(answer, ensure_ascii=False), flush=True)
    return problems


# ---- stats and reembed ----------------------------------------------------------------------------------


def cmd_stats(settings: Settings, args: argparse.Namespace) -> int:
    store = _open_store(settings)
    try:
        stats = store.stats()
        usage = store.get_state("gemini_usage")
    finally:
        store.close()
    stats["gemini_usage_last_run"] = json.loads(usage) if usage else None
    facts = stats["facts"]
    _emit(
        args,
        stats,
        [
            f"facts: {facts['active']} active, {facts['merged']} merged, {facts['invalidated']} invalidated",
            f"people: {stats['people']} in {stats['scopes']} scope(s)",
            f"pending messages: {stats['pending_messages']}",
            f"gemini usage (last run): {json.dumps(stats['gemini_usage_last_run'])}",
        ],
    )
    return 0


async def cmd_reembed(settings: Settings, args: argparse.Namespace) -> int:
    """Re-embed every fact with the configured model, in batches; safe to interrupt and run again."""
    missing = settings.missing("gemini_api_key")
    if missing:
        raise CliError(*missing)
    from bot.llm.gemini import GeminiClient

    store = Store.open(
        settings.database_path,
        embedding_model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
        allow_model_change=True,
    )
    client = GeminiClient.from_settings(settings)
    done = 0
    try:
        after = store.begin_reembed(settings.embedding_model, settings.embedding_dimensions)
        while batch := store.facts_to_reembed(after, max(1, args.batch)):
            vectors = await client.embed([text for _, text in batch], "document")
            store.store_reembedded([(fid, vec) for (fid, _), vec in zip(batch, vectors, strict=True)])
            after = batch[-1][0]
            done += len(batch)
            logging.getLogger(__name__).info("re-embedded %d facts (up to #%d)", done, after)
        store.finish_reembed(settings.embedding_model, settings.embedding_dimensions)
    finally:
        await client.aclose()
        store.close()
    _emit(args, {"reembedded": done, "model": settings.embedding_model}, [f"re-embedded {done} facts"])
    return 0
