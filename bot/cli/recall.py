"""`recall`: what the bot would recall for a query, or for each line of a JSONL file of them, seen as an
operator sees it (no audience rule applied) and leaving the facts' retrieval counts as they were."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.app import open_memory, provider_name
from bot.cli import arguments
from bot.cli.common import EXIT_PROBLEM, CliError, Commands, emit, in_event_loop, require_database
from bot.config import Settings
from bot.memory.model_ports import Purpose
from bot.memory.portable import UnreadableFile, jsonl_objects, scope_field, user_field
from bot.memory.recall import Audience, Participant

RECALL_BATCH = 100  # queries of a --queries file embedded in one request


def register(commands: Commands) -> None:
    recall = commands.add_parser("recall", help="what the bot would recall for a query")
    recall.add_argument("--scope", type=arguments.scope)
    recall.add_argument("--user", action="append", dest="users", default=[], type=arguments.user)
    recall.add_argument("--query")
    recall.add_argument(
        "--queries", type=Path, help="JSONL of {scope, user_ids, query}; one JSON line out each"
    )
    recall.add_argument(
        "--limit", type=arguments.positive, help="facts per person (default RECALL_FACTS_PER_PERSON)"
    )
    recall.add_argument("--json", action="store_true")
    recall.set_defaults(func=in_event_loop(recall_facts))


async def recall_facts(settings: Settings, args: argparse.Namespace) -> int:
    if args.queries is None and not (args.scope and args.users and args.query is not None):
        raise CliError("recall needs --scope, at least one --user and --query, or --queries FILE.jsonl")
    require_database(settings)
    missing = settings.missing("model_key")
    if missing:
        raise CliError(*missing, f"recall embeds the query with {provider_name(settings, Purpose.EMBED)}")
    if args.limit is not None:
        settings = replace(settings, recall_facts_per_person=args.limit)
    service = await open_memory(settings)
    bad_lines = 0
    try:
        await service.reload_caches()
        if args.queries is None:
            answer = await _recall_one(service, args.scope, args.users, args.query)
            emit(args, answer, _recall_lines(answer))
        else:
            try:
                bad_lines = await _recall_file(service, args.queries)
            except UnreadableFile as exc:
                raise CliError(str(exc)) from None
    finally:
        await service.close(record_usage=False)
    return EXIT_PROBLEM if bad_lines else 0


async def _recall_one(
    service: Any, scope: str, users: list[str], query: str, vector: list[float] | None = None
) -> dict[str, Any]:
    names = await service.names(scope, users)
    people = [Participant(str(u), names.get(str(u), "")) for u in users]
    result = await service.recall(
        scope, people, query, audience=Audience.operator(), count_retrievals=False, vector=vector
    )
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


async def _recall_file(service: Any, path: Path) -> int:
    """One JSON line per input line, in order; the queries are embedded 100 to a request."""
    bad_lines = 0
    group: list[tuple[int, tuple[str, list[str], str] | ValueError]] = []
    for number, item in jsonl_objects(path):
        parsed = _recall_request(item)
        if isinstance(parsed, ValueError):
            bad_lines += 1
            print(f"error: {path}:{number}: {parsed}", file=sys.stderr, flush=True)
        group.append((number, parsed))
        if len(group) == RECALL_BATCH:
            await _answer_group(service, group)
            group = []
    await _answer_group(service, group)
    return bad_lines


def _recall_request(item: Any) -> tuple[str, list[str], str] | ValueError:
    """(scope, user ids, query) from one line of a queries file, or what is wrong with it."""
    try:
        if isinstance(item, ValueError):
            raise item
        scope, users, query = scope_field(item), item.get("user_ids"), item.get("query")
        if not isinstance(users, list) or not users:
            raise ValueError("'user_ids' must be a non-empty list")
        users = [user_field(u, "user_ids") for u in users]
        if not isinstance(query, str):
            raise ValueError("'query' must be a string")
    except ValueError as exc:
        return exc
    return scope, users, query


async def _answer_group(
    service: Any, group: list[tuple[int, tuple[str, list[str], str] | ValueError]]
) -> None:
    queries = sorted({r[2].strip() for _, r in group if not isinstance(r, ValueError) and r[2].strip()})
    vectors = dict(zip(queries, await service.embed_queries(queries), strict=True)) if queries else {}
    for number, request in group:
        if isinstance(request, ValueError):
            print(json.dumps({"line": number, "error": str(request)}), flush=True)
            continue
        scope, users, query = request
        answer = await _recall_one(service, scope, users, query, vectors.get(query.strip()))
        answer["line"] = number
        print(json.dumps(answer, ensure_ascii=False), flush=True)
