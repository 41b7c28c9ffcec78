"""What /memory-admin stats and /memory-admin status show: a server's memory in figures, and the
settings in force there, each in one Discord message."""

from __future__ import annotations

from typing import Any

from bot.discord_bot.adminlog import plural
from bot.memory.models import GuildSettings

STATUS_MAX_CHARS = 1900  # a status fits one message (2,000 characters) with room to spare


def format_stats(stats: dict[str, Any]) -> str:
    """memory.stats() as a short report: this server's facts, backlog and Gemini use, then recall speed.

    Recall latency is the bot's as a whole: it depends on the database and the machine, not on the server.
    """
    facts = stats.get("facts", {})
    lines = [
        "**Memory in this server**",
        "Facts: "
        + ", ".join(f"{count:,} {status}" for status, count in facts.items())
        + f" · {plural(stats.get('people', 0), 'person', 'people')}",
        f"Messages waiting to be read: {stats.get('pending_messages', 0):,}",
        f"**{stats.get('provider', 'Gemini')} since start, for this server**",
    ]
    used = {p: c for p, c in stats.get("gemini", {}).items() if c.get("calls") or c.get("errors")}
    for purpose, c in used.items():
        lines.append(
            f"{purpose}: {plural(c.get('calls', 0), 'call')}, {c.get('prompt_tokens', 0):,} tokens in, "
            f"{c.get('output_tokens', 0):,} out, {plural(c.get('errors', 0), 'error')}, "
            f"{plural(c.get('retries', 0), 'retry', 'retries')}"
        )
    if not used:
        lines.append("No calls yet.")
    latency = stats.get("recall_latency_ms", {})
    lines.append(
        f"**Recall latency (the whole bot)** p50 {latency.get('p50', 0):g} ms · p95 {latency.get('p95', 0):g} ms "
        f"({plural(int(latency.get('samples', 0)), 'recall')})"
    )
    return "\n".join(lines)


def format_status(settings: GuildSettings, default_persona: str) -> str:
    """A server's settings, including which persona answers where."""
    lines = [
        "**Memory in this server**",
        f"Memory: {'on' if settings.memory_enabled else 'off'}",
        "Memory log: "
        + (f"<#{settings.log_channel_id}>" if settings.log_channel_id else "the bot's default"),
        f"Members see each other's facts: {'yes' if settings.members_see_others else 'no'}",
        "Speak for the server: Manage Server or Manage Messages"
        + (f", and <@&{settings.moderator_role_id}>" if settings.moderator_role_id else ""),
        "Ignored channels: " + (", ".join(f"<#{c}>" for c in sorted(settings.ignored_channel_ids)) or "none"),
        "**Persona**",
        "Server-wide: "
        + (quoted(settings.persona) if settings.persona else f"the default, {quoted(default_persona)}"),
    ]
    channels = [
        f"In <#{channel}>: {quoted(text)}" for channel, text in sorted(settings.channel_personas.items())
    ]
    shown = len(channels)
    while shown and len(_status_text(lines, channels, shown)) > STATUS_MAX_CHARS:  # one Discord message
        shown -= 1
    return _status_text(lines, channels, shown)


def _status_text(lines: list[str], channels: list[str], shown: int) -> str:
    more = [f"… and {plural(len(channels) - shown, 'more channel')}"] if shown < len(channels) else []
    return "\n".join([*lines, *channels[:shown], *more])


def quoted(text: str, limit: int = 200) -> str:
    """A persona shown in a status line: quoted, and cut so that many of them fit one Discord message."""
    return f"“{text if len(text) <= limit else text[: limit - 1] + '…'}”"
