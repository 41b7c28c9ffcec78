"""`python -m bot ...`: run the bot, chat with it in a terminal, and the operator commands (check, facts,
recall, stats, reembed).

Every command prints plain lines for people and JSON with `--json`; problems go to stderr, one line each,
with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bot.app import (
    MigrationRefused,
    database_backend,
    database_exists,
    failure_line,
    failures,
    migrate_database,
    open_maintenance,
    open_memory,
    open_models,
    open_store,
    probe_models,
    provider_name,
)
from bot.config import ConfigError, Settings, load_settings
from bot.memory.importing import ImportReport, import_lines
from bot.memory.maintenance import Maintenance
from bot.memory.models import (
    MAX_FACT_CHARS,
    Fact,
    guild_id_of,
    is_discord_id,
    positive_number,
    valid_scope,
)
from bot.memory.portable import (
    UnreadableFile,
    fact_record,
    jsonl_objects,
    read_import_lines,
    scope_field,
    user_field,
)
from bot.memory.ports import Purpose
from bot.memory.recall import Audience, Participant

log = logging.getLogger(__name__)

EXIT_PROBLEM = 1
RECALL_BATCH = 100  # queries of a --queries file embedded in one Gemini request


class CliError(Exception):
    """A problem to report on stderr (one line per entry) before exiting non-zero."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def _scope(text: str) -> str:
    if not valid_scope(text):
        raise argparse.ArgumentTypeError(f"invalid scope {text!r}: expected guild:<id>, dm or terminal")
    return text


def _guild_scope(text: str) -> str:
    if guild_id_of(text) is None:
        raise argparse.ArgumentTypeError(f"invalid server scope {text[:40]!r}: expected guild:<server id>")
    return text


def _user(text: str) -> str:
    if not is_discord_id(text):
        raise argparse.ArgumentTypeError(f"invalid user id {text!r}: expected a Discord user id (digits)")
    return text


def _snowflake(text: str) -> int:
    if not is_discord_id(text) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"invalid channel id {text!r}: expected a Discord id (digits)")
    return int(text)


def _positive(text: str) -> int:
    """A count or id: 0, negatives and '١' are usage errors rather than silently clamped or accepted."""
    number = positive_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return number


def _name(text: str) -> str:
    from bot.terminal import session_name

    name = session_name(text)
    if name is None:
        raise argparse.ArgumentTypeError(f"invalid name {text!r}: expected a name with letters or digits")
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot", description="A Discord bot with long-term memory.")
    parser.add_argument(
        "--env-file", help="settings file to read; it must exist (default: .env, when there is one)"
    )
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("run", help="connect to Discord and run the bot (the default)")

    chat = sub.add_parser(
        "chat",
        help="chat with the bot in this terminal, through the same memory (needs only GEMINI_API_KEY)",
        description=(
            "Talk with the bot here: what you say is remembered in a scope of its own (`terminal`, apart "
            "from every Discord server and DMs), learned when you go quiet and when you leave, and recalled "
            "in its replies. /facts, /forget ID, /remember TEXT, /flush, /quit. Reads a pipe too."
        ),
    )
    chat.add_argument(
        "--name", type=_name, help="who you are; the same name is the same person (default: your login name)"
    )

    check = sub.add_parser("check", help="show effective settings and check the database")
    check.add_argument("--json", action="store_true")
    check.add_argument(
        "--online", action="store_true", help="also try DISCORD_TOKEN and the Gemini key on their services"
    )

    facts = sub.add_parser("facts", help="list, forget or import facts").add_subparsers(
        dest="facts_command", required=True, metavar="{list,forget,forget-server,export,import}"
    )
    flist = facts.add_parser("list", help="a person's facts in one scope")
    flist.add_argument("--scope", required=True, type=_scope)
    flist.add_argument("--user", required=True, type=_user)
    flist.add_argument("--all-statuses", action="store_true", help="include merged and invalidated facts")
    flist.add_argument("--json", action="store_true")
    fforget = facts.add_parser("forget", help="hard-delete one fact or all of a person's facts in a scope")
    fforget.add_argument("--scope", required=True, type=_scope)
    fforget.add_argument("--user", required=True, type=_user)
    which = fforget.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=_positive, dest="fact_id")
    which.add_argument("--all", action="store_true")
    fforget.add_argument("--json", action="store_true")
    fserver = facts.add_parser(
        "forget-server",
        help="erase everything learned in one server (everyone's facts, the community's, its conversations)",
        description=(
            "Everything learned in the server goes for good, as /memory-admin forget-server does there: for a "
            "server the bot was removed from, or to erase one now instead of after MEMORY_REMOVED_SERVER_DAYS."
        ),
    )
    fserver.add_argument("--scope", required=True, type=_guild_scope, help="guild:<server id>")
    fserver.add_argument("--json", action="store_true")
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
    fexport = facts.add_parser(
        "export",
        help="write facts as JSONL that `facts import` reads (to move to another instance)",
        description="Active facts of one person (or everyone) in a scope, with where each was learned.",
    )
    fexport.add_argument("--scope", required=True, type=_scope)
    fexport.add_argument("--user", type=_user, help="one person (default: everyone in the scope)")
    fexport.add_argument("--output", type=Path, help="a file to write (default: standard output)")
    fimport.add_argument("file", type=Path)
    fimport.add_argument("--consolidate", action="store_true", help="run them through consolidation")
    fimport.add_argument("--json", action="store_true")

    recall = sub.add_parser("recall", help="what the bot would recall for a query")
    recall.add_argument("--scope", type=_scope)
    recall.add_argument("--user", action="append", dest="users", default=[], type=_user)
    recall.add_argument("--query")
    recall.add_argument(
        "--queries", type=Path, help="JSONL of {scope, user_ids, query}; one JSON line out each"
    )
    recall.add_argument("--limit", type=_positive, help="facts per person (default RECALL_FACTS_PER_PERSON)")
    recall.add_argument("--json", action="store_true")

    mcp = sub.add_parser(
        "mcp",
        help="serve the memory as MCP tools to other agents, bound to one audience (stdio, or HTTP)",
        description=(
            "Serves recall, get and recap (and remember, forget in a person's own session) over stdio, for "
            "desktop clients, or streamable HTTP with --http (agents on other machines send MCP_TOKEN as a "
            "bearer token). A session sees what one audience may: --channel ID, what a reply there could "
            "use; --user ID --scope S, what that person sees with /facts; --terminal, the terminal chat's "
            "person. Permissions are read from Discord with DISCORD_TOKEN; without them a channel's session "
            "reads only what was said in that channel."
        ),
    )
    audience = mcp.add_mutually_exclusive_group(required=True)
    audience.add_argument("--channel", type=_snowflake, help="a server channel (or thread) id")
    audience.add_argument("--user", type=_user, help="a person's Discord id (with --scope)")
    audience.add_argument("--terminal", action="store_true", help="the terminal chat's person (--name)")
    mcp.add_argument("--scope", type=_scope, help="guild:<id> or dm (a --user session's)")
    mcp.add_argument("--name", type=_name, help="the terminal chat's person (default: your login name)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="the HTTP address (default 127.0.0.1)")
    mcp.add_argument("--port", type=_positive, default=8765, help="the HTTP port (default 8765)")

    stats = sub.add_parser("stats", help="counts by status, people, pending messages")
    stats.add_argument("--json", action="store_true")

    migrate = sub.add_parser(
        "migrate",
        help="copy the SQLite database (DATABASE_PATH) into PostgreSQL",
        description=(
            "Copies every fact with its history, vectors, sources and events, the message buffer, people and "
            "opt-outs, server settings and personas into a PostgreSQL database with pgvector, then counts "
            "the rows on both sides. Run it with the bot stopped. Interrupted, run it again: it carries on, "
            "removing and updating what changed in the file meanwhile. "
            "Then set DATABASE_URL to the same URL and start the bot."
        ),
    )
    migrate.add_argument(
        "--to", required=True, dest="url", help="postgresql://user:password@host:5432/dbname"
    )
    migrate.add_argument(
        "--into-non-empty", action="store_true", help="add to a database that already holds memory"
    )
    migrate.add_argument("--json", action="store_true")

    reembed = sub.add_parser("reembed", help="re-embed every fact with the configured embedding model")
    reembed.add_argument("--batch", type=_positive, default=100)
    reembed.add_argument(
        "--force", action="store_true", help="re-embed even when the facts already use the configured model"
    )
    reembed.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; output piped into a reader that stops early (`| head`) ends it quietly."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try, so a closed pipe is noticed here and not at exit
    except BrokenPipeError:
        # The standard recipe: point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PROBLEM
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "run"
    try:
        settings = load_settings(
            dotenv_path=args.env_file or ".env", dotenv_required=args.env_file is not None
        )
    except ConfigError as exc:
        if command == "check" and getattr(args, "json", False):  # scripts still get their JSON verdict
            print(json.dumps({"ok": False, "settings": None, "database": None, "problems": exc.problems}))
        return _report(exc.problems)
    # The bot logs to stdout (what hosts collect); operator commands keep stdout for their output. The chat
    # says what fails in its own lines, so only errors are logged between them (LOG_LEVEL=DEBUG: all).
    level = logging.getLevelName(settings.log_level)
    logging.basicConfig(
        level=logging.ERROR if command == "chat" and level > logging.DEBUG else level,
        stream=sys.stdout if command == "run" else sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(command, settings, args)
    except CliError as exc:
        return _report(exc.lines)
    except failures(settings) as exc:
        return _report([failure_line(settings, exc)])
    except KeyboardInterrupt:
        return 130


def _dispatch(command: str, settings: Settings, args: argparse.Namespace) -> int:
    if command == "run":
        from bot.discord_bot.runner import run_bot

        return run_bot(settings)
    if command == "chat":
        return cmd_chat(settings, args)
    if command == "check":
        return cmd_check(settings, args)
    if command == "facts":
        return asyncio.run(cmd_facts(settings, args))
    if command == "recall":
        return asyncio.run(cmd_recall(settings, args))
    if command == "stats":
        return asyncio.run(cmd_stats(settings, args))
    if command == "mcp":
        return cmd_mcp(settings, args)
    if command == "migrate":
        return cmd_migrate(settings, args)
    return asyncio.run(cmd_reembed(settings, args))


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


def require_database(settings: Settings) -> None:
    """Commands that only read (or delete) must not leave an empty database behind a mistyped path."""
    if not database_exists(settings):
        raise CliError(f"no database at {settings.database_shown} (run the bot or facts import first)")


async def _maintenance(settings: Settings) -> Maintenance:
    """The database for commands that never search vectors (list, forget, export, stats).

    They work whatever the embedding state, so a deletion request never waits for a re-embedding.
    """
    require_database(settings)
    return await open_maintenance(settings)


# ---- chat ---------------------------------------------------------------------------------------------


def cmd_chat(settings: Settings, args: argparse.Namespace) -> int:
    """The terminal chat (bot/terminal.py); a model's key (or a local endpoint) is all it needs."""
    missing = settings.missing("model_key")
    if missing:
        raise CliError(
            *missing, f"python -m bot chat talks with {provider_name(settings)}; put the key in .env"
        )
    from bot.terminal import default_name, run_chat

    return run_chat(
        settings, name=args.name or default_name(), stdin=sys.stdin, out=sys.stdout, err=sys.stderr
    )


# ---- mcp ----------------------------------------------------------------------------------------------


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    """The MCP front-end (bot/mcp/): checked here, then served until the client leaves."""
    if args.user is not None and args.scope != "dm" and not (args.scope or "").startswith("guild:"):
        raise CliError("--user needs --scope guild:<id> (a server) or --scope dm (their DMs)")
    if args.terminal and args.scope is not None:
        raise CliError("--terminal reads the terminal chat's scope; leave out --scope")
    if args.http and not settings.mcp_token:
        raise CliError("MCP_TOKEN is not set: HTTP is served only to agents that send it as a bearer token")
    missing = settings.missing("model_key")
    if missing:
        raise CliError(*missing, f"recall embeds queries with {provider_name(settings, Purpose.EMBED)}")
    require_database(settings)
    from bot.mcp.discord_view import DiscordUnavailable
    from bot.mcp.server import run
    from bot.memory.consult import ConsultError
    from bot.terminal import default_name

    if args.terminal and args.name is None:
        args.name = default_name()
    try:
        return run(settings, args)
    except (ConsultError, DiscordUnavailable) as exc:  # a session that cannot start: one line
        raise CliError(str(exc)) from None


# ---- check --------------------------------------------------------------------------------------------


async def database_health(settings: Settings) -> dict[str, Any]:
    """The database's health, opened as the bot opens it (so `check` creates it on a first run)."""
    store = await open_store(settings)
    try:
        return await Maintenance(store).health()
    finally:
        await store.close()


def cmd_check(settings: Settings, args: argparse.Namespace) -> int:
    problems = settings.missing("discord_token", "model_key")
    database: dict[str, Any] = {"location": settings.database_shown}
    try:
        database["backend"] = database_backend(settings)
        database.update(asyncio.run(database_health(settings)), ok=True)
    except failures(settings) as exc:
        problem = failure_line(settings, exc)
        database.update(ok=False, error=problem)
        problems.append(problem)
    online = asyncio.run(check_online(settings)) if args.online else {}
    problems += [verdict["error"] for verdict in online.values() if not verdict["ok"]]
    report: dict[str, Any] = {
        "ok": not problems,
        "settings": settings.masked(),
        "database": database,
        "problems": problems,
    }
    if args.online:
        report["online"] = online
    human = [f"{k} = {v}" for k, v in report["settings"].items()]
    if database.get("ok"):
        human.append(
            f"database OK: {database['location']} ({database['description']}, {database['embedding_model']} at "
            f"{database['embedding_dimensions']} dimensions)"
        )
    human += [f"{service}: OK ({verdict['detail']})" for service, verdict in online.items() if verdict["ok"]]
    _emit(args, report, human)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM if problems else 0


async def check_online(settings: Settings) -> dict[str, dict[str, Any]]:
    """DISCORD_TOKEN and the models tried on their services (a Discord token that is not set is skipped;
    a model provider is tried when its key is set or it needs none)."""
    verdicts: dict[str, dict[str, Any]] = {}
    if settings.discord_token:
        verdicts["Discord"] = await _check_discord(settings)
    if not settings.missing("model_key"):
        verdicts.update(await probe_models(settings))
    return verdicts


# The application flags saying a privileged intent is on: the full flag (a verified bot) or the
# "limited" one (an unverified bot in fewer than 100 servers), as Discord documents them.
PRIVILEGED_INTENTS = {
    "MESSAGE CONTENT INTENT": 1 << 18 | 1 << 19,
    "SERVER MEMBERS INTENT": 1 << 14 | 1 << 15,
}


async def _check_discord(settings: Settings) -> dict[str, Any]:
    """Log in over REST only (GET /users/@me), as the bot's start does before it connects."""
    import aiohttp
    import discord

    from bot.discord_bot.client import point_discord_at
    from bot.discord_bot.runner import TOKEN_REJECTED
    from bot.gist import first_line

    point_discord_at(settings.discord_api_base_url, settings.discord_gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        me = await http.static_login(settings.discord_token)
        application = await http.application_info()
    except discord.LoginFailure:
        return {"ok": False, "error": TOKEN_REJECTED}
    except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
        where = settings.discord_api_base_url or "discord.com"
        return {"ok": False, "error": f"cannot reach Discord ({where}): {first_line(exc)}"}
    finally:
        await http.close()
    flags = int(application.get("flags") or 0)
    missing = [name for name, bits in PRIVILEGED_INTENTS.items() if not flags & bits]
    if missing:
        return {
            "ok": False,
            "error": (
                f"Discord: the bot cannot run without {' and '.join(missing)}: switch "
                f"{'them' if len(missing) > 1 else 'it'} on in the Developer Portal (your application, "
                "Bot, Privileged Gateway Intents)"
            ),
        }
    return {"ok": True, "detail": f"logged in as {me.get('username', '?')}; intents on"}


# ---- facts --------------------------------------------------------------------------------------------


def _fact_json(fact: Any) -> dict[str, Any]:
    data = asdict(fact)
    data["status"] = str(fact.status)
    data["source_message_ids"] = list(fact.source_message_ids)
    return data


async def cmd_facts(settings: Settings, args: argparse.Namespace) -> int:
    if args.facts_command == "import":
        return await cmd_import(settings, args)
    memory = await _maintenance(settings)
    try:
        if args.facts_command == "export":
            return write_export(await memory.export(args.scope, args.user), args)
        if args.facts_command == "list":
            facts = await memory.list_facts(args.scope, args.user, all_statuses=args.all_statuses)
            _emit(
                args,
                [_fact_json(f) for f in facts],
                [f"#{f.id} [{f.status}] {f.recorded_at[:10]} {f.text}" for f in facts] or ["no facts"],
            )
            return 0
        if args.facts_command == "forget-server":
            erased, episodes = await memory.forget_server(args.scope, actor="cli")
            _emit(
                args,
                {"facts": erased, "episodes": episodes},
                [f"erased {args.scope}: {erased} fact(s) and {episodes} conversation(s)"],
            )
            return 0
        ids = None if args.all else [args.fact_id]
        count = await memory.forget(args.scope, args.user, ids, actor="cli")
        if ids and not count:
            raise CliError(f"no fact #{args.fact_id} for user {args.user} in {args.scope}")
        _emit(args, {"forgotten": count}, [f"forgot {count} fact(s)"])
        return 0
    finally:
        await memory.close()


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


async def cmd_import(settings: Settings, args: argparse.Namespace) -> int:
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
        await import_lines(service, lines, report, consolidate=args.consolidate)
    except failures(settings) as exc:
        report.error = failure_line(settings, exc)
    finally:
        await service.close(record_usage=False)
    _emit(args, report.as_json(), [report.summary()])
    if report.error:
        print(f"error: {report.error}", file=sys.stderr)
    return EXIT_PROBLEM if problems or report.error else 0


# ---- recall -------------------------------------------------------------------------------------------


async def cmd_recall(settings: Settings, args: argparse.Namespace) -> int:
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
            _emit(args, answer, _recall_lines(answer))
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
    """One JSON line per input line, in order; the queries are embedded 100 to a Gemini request."""
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


# ---- stats and reembed ----------------------------------------------------------------------------------


async def cmd_stats(settings: Settings, args: argparse.Namespace) -> int:
    memory = await _maintenance(settings)
    try:
        stats = await memory.stats()
    finally:
        await memory.close()
    facts = stats["facts"]
    _emit(
        args,
        stats,
        [
            f"facts: {facts['active']} active, {facts['merged']} merged, {facts['invalidated']} invalidated",
            f"people: {stats['people']} in {stats['scopes']} scope(s)",
            f"pending messages: {stats['pending_messages']}",
            f"model usage (the bot's last run): {json.dumps(stats['gemini_usage_last_run'])}",
            f"line selection (select mode): {stats['selection']}",
        ],
    )
    return 0


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Copy DATABASE_PATH into the PostgreSQL database at --to; say what was copied and whether it adds up."""
    if not settings.database_path.exists():
        raise CliError(f"no database at {settings.database_path} to copy (DATABASE_PATH)")
    try:
        target = replace(settings, database_url=load_settings({"DATABASE_URL": args.url}).database_url)
    except ConfigError as exc:
        raise CliError(*exc.problems) from None

    def progress(table: str, rows: int) -> None:
        log.info("copied %d rows of %s", rows, table)

    try:
        report = migrate_database(settings, target, into_non_empty=args.into_non_empty, progress=progress)
    except MigrationRefused as exc:
        raise CliError(failure_line(target, exc)) from None
    except failures(target) as exc:
        raise CliError(failure_line(target, exc) + " (run the same command again to carry on)") from None
    rows = {table: (report.source_rows[table], report.target_rows[table]) for table in report.source_rows}
    removed = {table: n for table, n in report.removed.items() if n}
    updated = {table: n for table, n in report.updated.items() if n}
    human = [f"{table}: {copied:,} of {total:,}" for table, (total, copied) in rows.items()]
    human += [f"{table}: removed {n:,} no longer in the source" for table, n in removed.items()]
    human += [f"{table}: updated {n:,} changed in the source" for table, n in updated.items()]
    human.append(
        f"copied {settings.database_path} into {target.database_shown}; every table adds up. Set "
        "DATABASE_URL to it and start the bot."
        if report.verified
        else "the counts differ (above): run the same command again to carry on"
    )
    _emit(
        args,
        {
            "verified": report.verified,
            "resumed": report.resumed,
            "tables": rows,
            "removed": removed,
            "updated": updated,
        },
        human,
    )
    return 0 if report.verified else EXIT_PROBLEM


async def cmd_reembed(settings: Settings, args: argparse.Namespace) -> int:
    """Re-embed every fact with the configured model, in batches; safe to interrupt and run again."""
    require_database(settings)
    missing = settings.missing("model_key")
    if missing:
        raise CliError(*missing)
    models = open_models(settings)
    try:
        memory = await open_maintenance(settings, embedder=models.embedder)
        try:
            result = await memory.reembed(
                settings.embedding_identity,
                settings.embedding_dimensions,
                batch=args.batch,
                force=args.force,
                progress=lambda done, last: log.info("re-embedded %d facts (up to #%d)", done, last),
            )
        finally:
            await memory.close()
    finally:
        await models.aclose()
    target = f"{settings.embedding_model} at {settings.embedding_dimensions} dimensions"
    if result.up_to_date:
        _emit(
            args,
            {"reembedded": 0, "model": settings.embedding_model, "up_to_date": True},
            [f"the facts already use {target}; nothing to do (--force re-embeds anyway)"],
        )
        return 0
    if result.error:
        # Progress is saved per batch: say what landed, and that running again carries on from there.
        _emit(
            args,
            {
                "reembedded": result.done,
                "model": settings.embedding_model,
                "error": failure_line(settings, result.error),
            },
            [
                f"re-embedded {result.done} facts before the failure; run `python -m bot reembed` again to continue"
            ],
        )
        raise result.error
    _emit(
        args,
        {"reembedded": result.done, "model": settings.embedding_model},
        [f"re-embedded {result.done} facts"],
    )
    return 0
