"""What /memory-admin stats and /memory-admin status show: a server's memory in figures, and the
settings in force there, each in one Discord message."""

from __future__ import annotations

from typing import Any

from bot.discord_bot.adminlog import plural
from bot.llm.usage import served_by, usage_lines
from bot.memory.models import GuildSettings

STATUS_MAX_CHARS = 1900  # a status fits one message (2,000 characters) with room to spare


def format_stats(stats: dict[str, Any]) -> str:
    """memory.stats() as a short report: this server's facts and backlog, the models that served it
    (named as they run) and what they were asked, then recall speed; a sentence where there is nothing
    to count yet.

    Recall latency is the bot's as a whole: it depends on the database and the machine, not on the server.
    """
    facts = stats.get("facts", {})
    usage = stats.get("model_usage", {})
    pending = stats.get("pending_messages", 0)
    lines = ["**Memory in this server**"]
    if any(facts.values()):
        lines.append(
            "Facts: "
            + ", ".join(f"{count:,} {status}" for status, count in facts.items())
            + f" · {plural(stats.get('people', 0), 'person', 'people')}"
        )
    else:
        lines.append("No facts yet: nothing has been learned in this server.")
    lines.append(
        f"Messages waiting to be read: {pending:,}" if pending else "No messages waiting to be read."
    )
    lines.append("**Model use since the bot started, for this server**")
    if usage.get("models"):
        lines.append(served_by(usage))
    lines += usage_lines(usage.get("purposes", {}))
    latency = stats.get("recall_latency_ms", {})
    samples = int(latency.get("samples", 0))
    lines.append("**Recall speed (the whole bot)**")
    lines.append(
        f"p50 {latency.get('p50', 0):g} ms · p95 {latency.get('p95', 0):g} ms over the last "
        f"{plural(samples, 'recall')}"
        if samples
        else "No recalls since the bot started."
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
