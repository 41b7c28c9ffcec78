"""`facts list|forget|forget-server|export|import`: one person's facts, or a server's, read, erased, or
moved between instances as JSONL (bot/memory/portable.py's records, read back by bot/memory/importing.py)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bot.app import failure_line, failures, open_memory, provider_name
from bot.cli import arguments
from bot.cli.common import EXIT_PROBLEM, CliError, Commands, emit, in_event_loop, open_database
from bot.cli.progress import Progress
from bot.config import Settings
from bot.memory.importing import ImportReport, import_lines
from bot.memory.model_ports import Purpose
from bot.memory.models import MAX_FACT_CHARS, Fact
from bot.memory.portable import UnreadableFile, fact_record, read_import_lines


def register(commands: Commands) -> None:
    facts = commands.add_parser("facts", help="list, forget or import facts").add_subparsers(
        dest="facts_command", required=True, metavar="{list,forget,forget-server,export,import}"
    )
    flist = facts.add_parser("list", help="a person's facts in one scope")
    flist.add_argument("--scope", required=True, type=arguments.scope)
    flist.add_argument("--user", required=True, type=arguments.user)
    flist.add_argument("--all-statuses", action="store_true", help="include merged and invalidated facts")
    flist.add_argument("--json", action="store_true")
    flist.set_defaults(func=in_event_loop(list_facts))
    fforget = facts.add_parser("forget", help="hard-delete one fact or all of a person's facts in a scope")
    fforget.add_argument("--scope", required=True, type=arguments.scope)
    fforget.add_argument("--user", required=True, type=arguments.user)
    which = fforget.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=arguments.positive, dest="fact_id")
    which.add_argument("--all", action="store_true")
    fforget.add_argument("--json", action="store_true")
    fforget.set_defaults(func=in_event_loop(forget_facts))
    fserver = facts.add_parser(
        "forget-server",
        help="erase everything learned in one server (everyone's facts, the community's, its conversations)",
        description=(
            "Everything learned in the server goes for good, as /memory-admin forget-server does there: for a "
            "server the bot was removed from, or to erase one now instead of after MEMORY_REMOVED_SERVER_DAYS."
        ),
    )
    fserver.add_argument("--scope", required=True, type=arguments.guild_scope, help="guild:<server id>")
    fserver.add_argument("--json", action="store_true")
    fserver.set_defaults(func=in_event_loop(forget_server))
    fimport = facts.add_parser(
        "import",
        help="import facts from a JSONL file",
        description=(
            'One {"scope", "user_id", "text", "user_name"?, "sensitive"?, "sources"?} object per line, UTF-8 '
            "(what `facts export` writes). `sources` say where the fact was learned (message_id, channel_id, "
            "parent_channel_id, private_thread); a fact without them is used only in DMs with its owner. "
            "Lines that are not such "
            f"an object, or whose text is longer than {MAX_FACT_CHARS} characters, are reported by line "
            "number and not imported (split long facts); the other lines are. A fact the person already has "
            "in that scope (same text, ignoring case), or one of a person who opted out there, is skipped "
            "and counted, so running the same file again after a failure imports only what is missing."
        ),
    )
    fimport.add_argument("file", type=Path)
    fimport.add_argument("--consolidate", action="store_true", help="run them through consolidation")
    fimport.add_argument("--json", action="store_true")
    fimport.set_defaults(func=in_event_loop(import_facts))
    fexport = facts.add_parser(
        "export",
        help="write facts as JSONL that `facts import` reads (to move to another instance)",
        description="Active facts of one person (or everyone) in a scope, with where each was learned.",
    )
    fexport.add_argument("--scope", required=True, type=arguments.scope)
    fexport.add_argument("--user", type=arguments.user, help="one person (default: everyone in the scope)")
    fexport.add_argument("--output", type=Path, help="a file to write (default: standard output)")
    fexport.set_defaults(func=in_event_loop(export_facts))


async def list_facts(settings: Settings, args: argparse.Namespace) -> int:
    async with open_database(settings) as memory:
        facts = await memory.list_facts(args.scope, args.user, all_statuses=args.all_statuses)
        emit(
            args,
            [_fact_json(f) for f in facts],
            [f"#{f.id} [{f.status}] {f.recorded_at[:10]} {f.text}" for f in facts] or ["no facts"],
        )
    return 0


def _fact_json(fact: Any) -> dict[str, Any]:
    data = asdict(fact)
    data["status"] = str(fact.status)
    data["source_message_ids"] = list(fact.source_message_ids)
    return data


async def forget_facts(settings: Settings, args: argparse.Namespace) -> int:
    ids = None if args.all else [args.fact_id]
    async with open_database(settings) as memory:
        count = await memory.forget(args.scope, args.user, ids, actor="cli")
        if ids and not count:
            raise CliError(f"no fact #{args.fact_id} for user {args.user} in {args.scope}")
        emit(args, {"forgotten": count}, [f"forgot {count} fact(s)"])
    return 0


async def forget_server(settings: Settings, args: argparse.Namespace) -> int:
    async with open_database(settings) as memory:
        erased, episodes = await memory.forget_server(args.scope, actor="cli")
        emit(
            args,
            {"facts": erased, "episodes": episodes},
            [f"erased {args.scope}: {erased} fact(s) and {episodes} conversation(s)"],
        )
    return 0


async def export_facts(settings: Settings, args: argparse.Namespace) -> int:
    async with open_database(settings) as memory:
        return write_export(await memory.export(args.scope, args.user), args)


def write_export(facts: list[tuple[Fact, str]], args: argparse.Namespace) -> int:
    """JSONL of the (fact, owner's name) pairs, one per line; says how many on stderr."""
    lines = [json.dumps(fact_record(fact, name), ensure_ascii=False) for fact, name in facts]
    text = "".join(line + "\n" for line in lines)
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    print(f"exported {len(lines)} fact(s)", file=sys.stderr)
    return 0


async def import_facts(settings: Settings, args: argparse.Namespace) -> int:
    try:
        lines, problems = read_import_lines(args.file)
    except UnreadableFile as exc:
        raise CliError(str(exc)) from None
    for line in problems:  # at once: nothing that fails later can lose them
        print(f"error: {line}", file=sys.stderr, flush=True)
    missing = settings.missing("model_key")
    if missing:
        raise CliError(
            *missing, f"facts import embeds every fact with {provider_name(settings, Purpose.EMBED)}"
        )
    report = ImportReport(read=len(lines), bad_lines=problems)
    service = await open_memory(settings)
    try:
        with Progress("importing", "facts") as progress:
            await import_lines(service, lines, report, consolidate=args.consolidate, progress=progress)
    except failures(settings) as exc:
        report.error = failure_line(settings, exc)
    finally:
        await service.close(record_usage=False)
    emit(args, report.as_json(), [report.summary()])
    if report.error:
        print(f"error: {report.error}", file=sys.stderr)
    return EXIT_PROBLEM if problems or report.error else 0
