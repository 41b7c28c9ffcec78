"""`stats`, `migrate` and `reembed`: the operator's care of the database (what it holds, moving it to
PostgreSQL, re-embedding it for another embedding model), each safe to run again after a failure."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bot.app import (
    MigrationRefused,
    extraction_mode,
    failure_line,
    failures,
    migrate_database,
    open_maintenance,
    open_models,
)
from bot.cli import arguments
from bot.cli.common import (
    EXIT_PROBLEM,
    CliError,
    Commands,
    emit,
    in_event_loop,
    open_database,
    require_database,
)
from bot.cli.progress import Progress
from bot.config import ConfigError, Settings, load_settings
from bot.gist import plural
from bot.llm.usage import served_by, usage_lines
from bot.memory.extract import SELECT


def register(commands: Commands) -> None:
    stats = commands.add_parser("stats", help="counts by status, people, pending messages")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=in_event_loop(show_stats))

    migrate = commands.add_parser(
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
    migrate.set_defaults(func=copy_to_postgres)

    reembed = commands.add_parser("reembed", help="re-embed every fact with the configured embedding model")
    reembed.add_argument("--batch", type=arguments.positive, default=100)
    reembed.add_argument(
        "--force", action="store_true", help="re-embed even when the facts already use the configured model"
    )
    reembed.add_argument("--json", action="store_true")
    reembed.set_defaults(func=in_event_loop(reembed_facts))


async def show_stats(settings: Settings, args: argparse.Namespace) -> int:
    async with open_database(settings) as memory:
        stats = await memory.stats()
    emit(args, stats, stats_lines(stats, selects=extraction_mode(settings) == SELECT))
    return 0


def stats_lines(stats: dict[str, Any], *, selects: bool) -> list[str]:
    """`stats` for people: sentences, and a sentence where there is nothing to count yet; how line
    selection goes when the memory model is asked to select (`selects`)."""
    facts = stats["facts"]
    lines = (
        [
            f"Facts: {facts['active']:,} active, {facts['merged']:,} merged, {facts['invalidated']:,} "
            f"invalidated, about {plural(stats['people'], 'person', 'people')} in "
            f"{plural(stats['scopes'], 'scope')}."
        ]
        if any(facts.values())
        else ["No facts yet: the bot has learned nothing in this database."]
    )
    pending = stats["pending_messages"]
    lines.append(
        f"Messages waiting to be read: {pending:,}." if pending else "No messages waiting to be read."
    )
    usage = stats["model_usage_last_run"]
    if usage is None:
        lines.append(
            "Model use: no run of the bot recorded yet (the bot records its model use when it stops)."
        )
    else:
        lines.append(
            "Model use in the bot's last run: "
            + (
                served_by(usage)
                if "models" in usage
                else "(recorded by an earlier version, without its models)"
            )
        )
        lines += [f"  {line}" for line in usage_lines(usage.get("purposes", {}))]
    if selects:
        lines.append(f"Line selection (EXTRACTION_MODE=select): {stats['selection']}.")
    return lines


def copy_to_postgres(settings: Settings, args: argparse.Namespace) -> int:
    """Copy DATABASE_PATH into the PostgreSQL database at --to; say what was copied and whether it adds up."""
    if not settings.database_path.exists():
        raise CliError(f"no database at {settings.database_path} to copy (DATABASE_PATH)")
    try:
        target = replace(settings, database_url=load_settings({"DATABASE_URL": args.url}).database_url)
    except ConfigError as exc:
        raise CliError(*exc.problems) from None

    try:
        with Progress("copying", "rows") as progress:
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
    emit(
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


async def reembed_facts(settings: Settings, args: argparse.Namespace) -> int:
    """Re-embed every fact with the configured model, in batches; safe to interrupt and run again."""
    require_database(settings)
    missing = settings.missing("model_key")
    if missing:
        raise CliError(*missing)
    models = open_models(settings)
    try:
        memory = await open_maintenance(settings, embedder=models.embedder)
        try:
            with Progress("re-embedding", "texts") as progress:
                result = await memory.reembed(
                    settings.embedding_identity,
                    settings.embedding_dimensions,
                    batch=args.batch,
                    force=args.force,
                    progress=progress,
                )
        finally:
            await memory.close()
    finally:
        await models.aclose()
    target = f"{settings.embedding_model} at {settings.embedding_dimensions} dimensions"
    if result.up_to_date:
        emit(
            args,
            {"reembedded": 0, "model": settings.embedding_model, "up_to_date": True},
            [f"the facts already use {target}; nothing to do (--force re-embeds anyway)"],
        )
        return 0
    if result.error:
        # Progress is saved per batch: say what landed, and that running again carries on from there.
        emit(
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
    emit(
        args,
        {"reembedded": result.done, "model": settings.embedding_model},
        [f"re-embedded {result.done} facts"],
    )
    return 0
