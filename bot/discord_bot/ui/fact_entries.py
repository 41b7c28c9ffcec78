"""A fact as the commands list it: its id, date and text, where it was learned (with links to the
messages), and its label in an autocomplete or a menu."""

from __future__ import annotations

from collections.abc import Callable

from discord import app_commands

from bot.memory.consult import MCP_ORIGIN
from bot.memory.models import Fact, Source, guild_id_of, is_discord_id
from bot.memory.service import MemoryService

CHOICE_NAME_CHARS = 100


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def jump_link(scope: str, source: Source) -> str | None:
    """A link to the message a fact was learned from (it leaves the fact's sources when deleted)."""
    if source.origin is None or not is_discord_id(source.message_id):
        return None
    guild = guild_id_of(scope)
    return f"https://discord.com/channels/{guild or '@me'}/{source.origin.channel_id}/{source.message_id}"


def where_learned(fact: Fact) -> str:
    """'said in <#12> · [message](link)', 'said in our DMs', 'told through MCP' (an agent's `remember`,
    whose origin is no channel), or that it is not known."""
    said = [s for s in fact.sources if not s.confirms and s.origin is not None]
    in_discord = [s for s in said if s.origin != MCP_ORIGIN]
    if not said or fact.audience_keys is None:
        where = "where: not recorded (used only in DMs with you)"
    else:
        places = []
        if in_discord and guild_id_of(fact.scope) is None:
            places.append("said in our DMs")
        elif in_discord:
            channels = dict.fromkeys(f"<#{s.origin.channel_id}>" for s in in_discord if s.origin is not None)
            places.append("said in " + ", ".join(channels))
        if len(in_discord) < len(said):
            places.append("told through MCP")
        where = " · ".join(places)
    links = [link for s in said if (link := jump_link(fact.scope, s))]
    if links:
        where += " · " + " ".join(f"[message {n}]({link})" for n, link in enumerate(links[:3], 1))
    if fact.sensitive:
        where += " · sensitive: used only when I talk with you"
    return where


def fact_entry(fact: Fact) -> str:
    """'#123 · 2024-05-01 · Alice lives in Paris' (the id people pass to /forget, the date, the whole
    text) and, below it, where it was learned."""
    return f"#{fact.id} · {fact.recorded_at[:10]} · {' '.join(fact.text.split())}\n   ↳ {where_learned(fact)}"


def choice_name(fact: Fact) -> str:
    """An autocomplete label like '#12 · Alice lives in Paris', within Discord's 100 characters."""
    return shorten(f"#{fact.id} · {fact.text}", CHOICE_NAME_CHARS)


async def fact_choices(
    memory: MemoryService,
    scope: str,
    user_id: int,
    current: str,
    visible: Callable[[Fact], bool] | None = None,
) -> list[app_commands.Choice[int]]:
    """Autocomplete over one person's active facts in this scope, matched on text or id; with `visible`
    (someone else's facts: `readable_by`), only those the caller may see, as `/facts` shows them."""
    facts = await memory.search_own_facts(scope, str(user_id), str(current or ""))
    shown = [f for f in facts if visible is None or visible(f)]
    return [app_commands.Choice(name=choice_name(f), value=f.id) for f in shown[:25]]
