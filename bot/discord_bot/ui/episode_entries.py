"""An episode as the recap and the admin's list show it: its channel, when it began (in each reader's
time zone), a link to where it began, and its points with a link each."""

from __future__ import annotations

from bot.discord_bot.discord_text import discord_time
from bot.discord_bot.ui.pages import PAGE_CHARS
from bot.memory.models import Episode, guild_id_of, is_discord_id
from bot.memory.shared import point_links


def episode_link(episode: Episode) -> str | None:
    """A link to the message an episode began with: its oldest source, the smallest Discord id."""
    guild = guild_id_of(episode.scope)
    ids = [int(m) for m in episode.source_message_ids if is_discord_id(m)]
    if guild is None or not ids:
        return None
    return f"https://discord.com/channels/{guild}/{episode.origin.channel_id}/{min(ids)}"


def episode_entry(episode: Episode, *, with_id: bool = False) -> str:
    """'<#12> · <when it began> · [where it began](link)' (with the id first for admins) and, below it,
    its points, each with a link to the message it comes from."""
    head = [f"#{episode.id}"] if with_id else []
    head += [f"<#{episode.origin.channel_id}>", discord_time(episode.started_at)]
    if (link := episode_link(episode)) is not None:
        head.append(f"[where it began]({link})")
    if not episode.points:
        return " · ".join(head) + "\n" + episode.summary.strip()
    lines = [f"- {' '.join(point.text.split())}" for point in episode.points]
    room = PAGE_CHARS - len(" · ".join(head)) - sum(len(line) + 1 for line in lines)
    for n, source in enumerate(point_links(episode)):  # each point's link, as far as a page holds them
        link = f" [↗]({source})" if source else ""
        if len(link) > room:
            break
        lines[n] += link
        room -= len(link)
    return " · ".join(head) + "\n" + "\n".join(lines)
