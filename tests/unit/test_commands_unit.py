"""The commands' widgets (ui/) and helpers without Discord: page text, choices, permissions, buttons, errors."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import discord
import pytest
from discord import app_commands

from bot.discord_bot.cogs.memory_commands import recap_start
from bot.discord_bot.error_replies import (
    GENERIC_FAILURE,
    GUILD_ONLY,
    NEED_MANAGE_SERVER,
    report_error,
    user_message,
)
from bot.discord_bot.ui.admin_reports import format_stats
from bot.discord_bot.ui.confirm import NOTHING_FORGOTTEN, NOTHING_FORGOTTEN_TIMEOUT, ConfirmView
from bot.discord_bot.ui.episode_entries import episode_entry
from bot.discord_bot.ui.fact_entries import choice_name, fact_choices, fact_entry, where_learned
from bot.discord_bot.ui.forgetting import forgot_text
from bot.discord_bot.ui.listings import FactsPager
from bot.discord_bot.ui.owned import NOT_YOURS
from bot.discord_bot.ui.pages import format_page, paginate
from bot.discord_bot.visibility import may_view_facts
from bot.memory.consult import MCP_ORIGIN
from bot.memory.models import Episode, Fact, FactStatus, NewFact, Origin, Source
from bot.memory.service import MemoryService

SCOPE = "guild:111"
OWNER = 5
STRANGER = 6


def fact(fact_id: int, text: str, recorded_at: str = "2024-05-01T10:00:00.000000Z", **extra: Any) -> Fact:
    return Fact(
        fact_id, SCOPE, str(OWNER), text, FactStatus.ACTIVE, None, None, recorded_at, recorded_at, 0, **extra
    )


class FakeResponse:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def is_done(self) -> bool:
        return bool(self.calls)

    async def send_message(self, content: str, *, view: Any = None, ephemeral: bool = False) -> None:
        self.calls.append({"kind": "send", "content": content, "view": view, "ephemeral": ephemeral})

    async def edit_message(self, **changes: Any) -> None:
        self.calls.append({"kind": "edit", **changes})


class FakeInteraction:
    """The slice of discord.Interaction the views and the error handler touch."""

    def __init__(self, user_id: int = OWNER, *, guild_id: int | None = 111) -> None:
        self.user = SimpleNamespace(id=user_id, display_name=f"user{user_id}")
        self.guild_id = guild_id
        self.type = discord.InteractionType.application_command
        self.command = SimpleNamespace(qualified_name="facts")
        self.posted: list[tuple[int, str]] = []
        self.client = SimpleNamespace(
            admin_log=SimpleNamespace(post=lambda g, line: self.posted.append((g, line)))
        )
        self.response = FakeResponse()
        self.followups: list[dict[str, Any]] = []
        self.original_edits: list[dict[str, Any]] = []
        self.followup = SimpleNamespace(send=self._followup)

    async def _followup(self, content: str, *, ephemeral: bool = False) -> None:
        self.followups.append({"content": content, "ephemeral": ephemeral})

    async def edit_original_response(self, **changes: Any) -> None:
        self.original_edits.append(changes)


# ---- pure helpers --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("total", "pages"), [(0, 1), (1, 1), (10, 1), (11, 2), (27, 3)])
def test_short_facts_come_ten_to_a_page(total: int, pages: int) -> None:
    assert len(paginate([fact(n, "Alice likes tea") for n in range(total)], fact_entry)) == pages


def format_facts_page(heading: str, facts: list[Fact], page: int, pages: int, total: int) -> str:
    return format_page(
        heading, [fact_entry(f) for f in facts], page, pages, f"{total} fact{'s' * (total != 1)}"
    )


def test_a_page_lists_ids_dates_whole_texts_where_learned_and_a_footer() -> None:
    said = Source("900", Origin("456"))
    paris = fact(123, "Alice lives in Paris", sources=(said,))
    text = format_facts_page("What I remember about you here", [paris], 0, 3, 27)
    assert text.splitlines() == [
        "**What I remember about you here**",
        "#123 · 2024-05-01 · Alice lives in Paris",
        "   ↳ said in <#456> · [message 1](https://discord.com/channels/111/456/900)",
        "",
        "Page 1/3 · 27 facts",
    ]
    unknown = format_facts_page("h", [fact(1, "x", sensitive=True)], 0, 1, 1)
    assert "not recorded" in unknown and "sensitive: used only when I talk with you" in unknown
    assert unknown.endswith("Page 1/1 · 1 fact")


def test_a_fact_told_through_mcp_says_so_not_a_channel_named_mcp() -> None:
    """`remember` over MCP records its own origin ("mcp"), which is no channel: no <#mcp>, no link."""
    told = fact(7, "Alice plays the oboe", sources=(Source("mcp-0a1b", MCP_ORIGIN),))
    assert where_learned(told) == "told through MCP"
    direct = replace(told, scope="dm:5")
    assert where_learned(direct) == "told through MCP"
    both = replace(told, sources=(Source("900", Origin("456")), Source("mcp-0a1b", MCP_ORIGIN)))
    assert where_learned(both) == (
        "said in <#456> · told through MCP · [message 1](https://discord.com/channels/111/456/900)"
    )


def test_long_facts_are_shown_whole_on_pages_that_fit_in_one_message() -> None:
    facts = [fact(10_000 + n, f"fact {n} " + "word " * 98) for n in range(10)]
    pages = paginate(facts, fact_entry)
    assert len(pages) > 1 and [f for page in pages for f in page] == facts
    for number, page in enumerate(pages):
        text = format_facts_page("What I remember about " + "N" * 32 + " here", page, number, len(pages), 10)
        assert len(text) <= 2000
        assert all(" ".join(f.text.split()) in text for f in page)  # nothing cut


def episode(episode_id: int, summary: str, *sources: str, thread: bool = False) -> Episode:
    origin = Origin("789", "456") if thread else Origin("456")
    when = "2024-05-01T10:00:00.000000Z"
    return Episode(episode_id, SCOPE, origin, summary, when, when, when, ("5",), sources)


def test_an_episode_shows_its_channel_when_it_began_a_link_to_its_first_message_and_its_whole_summary() -> (
    None
):
    summary = "- The raid starts at 21:00\n- Bring potions"
    entry = episode_entry(episode(7, summary, "1200", "999", "1100"))
    assert entry.splitlines() == [
        "<#456> · <t:1714557600:f> · [where it began](https://discord.com/channels/111/456/999)",
        "- The raid starts at 21:00",
        "- Bring potions",
    ]
    in_thread = episode_entry(episode(7, summary, "999", thread=True), with_id=True)
    assert in_thread.startswith("#7 · <#789> · ") and "/111/789/999)" in in_thread
    assert "where it began" not in episode_entry(episode(7, summary))  # no source left to link to


def test_long_episodes_are_shown_whole_on_pages_that_fit_in_one_message() -> None:
    episodes = [
        episode(n, "\n".join(f"- point {n}.{p}" + " word" * 55 for p in range(5)), "9") for n in range(6)
    ]
    pages = paginate(episodes, episode_entry, per_page=5)
    assert len(pages) == 6 and [e for page in pages for e in page] == episodes
    for number, page in enumerate(pages):
        text = format_page("What was discussed in <#1234567890123456789> since <t:1714557600:D>",
                           [episode_entry(e) for e in page], number, len(pages), "6 episodes")  # fmt: skip
        assert len(text) <= 2000 and page[0].summary in text


@pytest.mark.parametrize(
    ("since", "start"),
    [
        (None, "2024-10-09T15:30"),
        ("yesterday", "2024-10-15T00:00"),
        ("last week", "2024-10-07T00:00"),
        ("October", "2024-10-01T00:00"),
        ("in march", "2024-03-01T00:00"),
        ("3 days ago", "2024-10-13T00:00"),
        ("the day the server began", None),
    ],
)
def test_a_recap_starts_where_its_since_says_or_a_week_ago(since: str | None, start: str | None) -> None:
    now = datetime(2024, 10, 16, 15, 30, tzinfo=UTC)
    found = recap_start(since, now)
    assert (found and found.strftime("%Y-%m-%dT%H:%M")) == start


def test_choice_names_fit_discords_limit() -> None:
    assert choice_name(fact(12, "Alice lives in Paris")) == "#12 · Alice lives in Paris"
    long = choice_name(fact(12, "a very long\nfact " * 40))
    assert len(long) == 100
    assert long.startswith("#12 · a very long fact") and long.endswith("…")
    assert "\n" not in long


@pytest.mark.parametrize(
    ("caller", "subject", "in_guild", "manage", "others", "allowed"),
    [
        (OWNER, OWNER, True, False, False, True),
        (OWNER, OWNER, False, False, False, True),
        (OWNER, STRANGER, True, False, False, False),
        (OWNER, STRANGER, True, True, False, True),
        (OWNER, STRANGER, True, False, True, True),
        (OWNER, STRANGER, False, True, True, False),
    ],
)
def test_who_may_see_whose_facts(
    caller: int, subject: int, in_guild: bool, manage: bool, others: bool, allowed: bool
) -> None:
    decision = may_view_facts(
        caller_id=caller,
        subject_id=subject,
        in_guild=in_guild,
        manage_guild=manage,
        members_see_others=others,
    )
    assert decision is allowed


def test_forget_texts() -> None:
    assert forgot_text(1, 12) == "Forgot 1 fact."
    assert forgot_text(3, 12) == "Forgot 3 facts (#12 and its other versions)."
    assert forgot_text(0) == "Forgot 0 facts."
    assert forgot_text(27) == "Forgot 27 facts."


def test_stats_report() -> None:
    stats = {
        "facts": {"active": 1200, "merged": 3, "invalidated": 1},
        "people": 1,
        "pending_messages": 4,
        "model_usage": {
            "provider": "127.0.0.1:8080",
            "embeddings_provider": "127.0.0.1:8080",
            "models": {"chat": "llama3", "memory": "llama3", "embeddings": "nomic-embed-text"},
            "purposes": {
                "extract": {
                    "calls": 2,
                    "prompt_tokens": 12345,
                    "output_tokens": 99,
                    "errors": 1,
                    "retries": 0,
                },
                "chat": {"calls": 0, "prompt_tokens": 0, "output_tokens": 0, "errors": 0, "retries": 0},
            },
        },
        "recall_latency_ms": {"p50": 12.5, "p95": 80.0, "samples": 40},
    }
    assert format_stats(stats).splitlines() == [
        "**Memory in this server**",
        "Facts: 1,200 active, 3 merged, 1 invalidated · 1 person",
        "Messages waiting to be read: 4",
        "**Model use since the bot started, for this server**",
        "Models: llama3 (chat and memory) and nomic-embed-text (embeddings), on 127.0.0.1:8080.",
        "extract: 2 calls, 12,345 tokens in, 99 out, 1 error, 0 retries",
        "**Recall speed (the whole bot)**",
        "p50 12.5 ms · p95 80 ms over the last 40 recalls",
    ]


def test_stats_report_with_nothing_yet_says_so_in_sentences() -> None:
    empty = {
        "facts": {"active": 0, "merged": 0, "invalidated": 0},
        "people": 0,
        "pending_messages": 0,
        "model_usage": {"purposes": {"chat": {"calls": 0, "errors": 0}}},
        "recall_latency_ms": {"p50": 0.0, "p95": 0.0, "samples": 0},
    }
    assert format_stats(empty).splitlines() == [
        "**Memory in this server**",
        "No facts yet: nothing has been learned in this server.",
        "No messages waiting to be read.",
        "**Model use since the bot started, for this server**",
        "No model calls yet.",
        "**Recall speed (the whole bot)**",
        "No recalls since the bot started.",
    ]


# ---- the error handler ---------------------------------------------------------------------------------------


def test_expected_errors_get_specific_messages() -> None:
    assert user_message(app_commands.MissingPermissions(["manage_guild"])) == NEED_MANAGE_SERVER
    assert user_message(app_commands.NoPrivateMessage()) == GUILD_ONLY
    cooldown = app_commands.CommandOnCooldown(app_commands.Cooldown(1, 30), 12.4)
    assert user_message(cooldown) == "Slow down a little: try again in 12 s."
    assert user_message(RuntimeError("boom")) is None


async def test_a_bug_is_reported_to_the_person_and_the_admin_log() -> None:
    interaction = FakeInteraction()
    await report_error(interaction, RuntimeError("boom"))  # type: ignore[arg-type]
    assert interaction.response.calls == [
        {"kind": "send", "content": GENERIC_FAILURE, "view": None, "ephemeral": True}
    ]
    assert interaction.posted == [(111, "/facts failed for user5: RuntimeError (details in the bot's log).")]


async def test_an_answered_interaction_gets_a_followup() -> None:
    interaction = FakeInteraction(guild_id=None)
    await interaction.response.send_message("working on it")
    await report_error(interaction, app_commands.NoPrivateMessage())  # type: ignore[arg-type]
    assert interaction.followups == [{"content": GUILD_ONLY, "ephemeral": True}]
    assert interaction.posted == []


# ---- views ---------------------------------------------------------------------------------------------------


async def add_facts(service: MemoryService, count: int, user_id: int = OWNER) -> None:
    await service.import_facts(
        [NewFact(SCOPE, str(user_id), "Alice", f"fact number {n}", [f"m{n}"]) for n in range(count)]
    )


def pager(service: MemoryService, origin: FakeInteraction) -> FactsPager:
    return FactsPager(
        origin,  # type: ignore[arg-type]
        service,
        scope=SCOPE,
        subject_id=str(OWNER),
        heading="What I remember about you here",
        empty="I don't remember anything about you here yet.",
    )


async def test_the_pager_walks_pages_and_disables_the_ends(service: MemoryService) -> None:
    await add_facts(service, 23)
    origin = FakeInteraction()
    view = pager(service, origin)
    await view.send()
    [sent] = origin.response.calls
    assert sent["ephemeral"] and sent["view"] is view
    assert sent["content"].endswith("Page 1/3 · 23 facts")
    assert sent["content"].count("\n#") == 10
    assert [c.custom_id for c in view.children] == [  # type: ignore[attr-defined]
        "facts:first",
        "facts:prev",
        "facts:next",
        "facts:last",
        "facts:correct",
    ]
    assert (view.previous_page.disabled, view.next_page.disabled) == (True, False)

    press = FakeInteraction()
    await view.next_page.callback(press)  # type: ignore[arg-type]
    assert press.response.calls[0]["content"].endswith("Page 2/3 · 23 facts")
    press = FakeInteraction()
    await view.last_page.callback(press)  # type: ignore[arg-type]
    [edit] = press.response.calls
    assert edit["content"].endswith("Page 3/3 · 23 facts")
    assert edit["content"].count("\n#") == 3
    assert (view.previous_page.disabled, view.next_page.disabled, view.last_page.disabled) == (
        False,
        True,
        True,
    )
    press = FakeInteraction()
    await view.first_page.callback(press)  # type: ignore[arg-type]
    assert press.response.calls[0]["content"].endswith("Page 1/3 · 23 facts")

    await view.on_timeout()
    assert origin.original_edits == [{"view": view}]
    assert all(item.disabled for item in view.children if isinstance(item, discord.ui.Button))
    view.stop()


async def test_one_page_needs_no_page_buttons_only_the_correct_menu_and_no_facts_a_friendly_line(
    service: MemoryService,
) -> None:
    origin = FakeInteraction()
    await pager(service, origin).send()
    assert origin.response.calls == [
        {
            "kind": "send",
            "content": "I don't remember anything about you here yet.",
            "view": None,
            "ephemeral": True,
        }
    ]
    await add_facts(service, 2)
    origin = FakeInteraction()
    view = pager(service, origin)
    await view.send()
    assert origin.response.calls[0]["view"] is view  # one's own facts can be corrected
    assert [c.custom_id for c in view.children] == ["facts:correct"]  # type: ignore[attr-defined]
    assert origin.response.calls[0]["content"].endswith("Page 1/1 · 2 facts")
    view.stop()


async def test_buttons_answer_only_their_owner(service: MemoryService) -> None:
    view = pager(service, FakeInteraction())
    stranger = FakeInteraction(STRANGER)
    assert await view.interaction_check(stranger) is False  # type: ignore[arg-type]
    assert stranger.response.calls == [
        {"kind": "send", "content": NOT_YOURS, "view": None, "ephemeral": True}
    ]
    assert await view.interaction_check(FakeInteraction(OWNER)) is True  # type: ignore[arg-type]
    view.stop()


async def test_confirm_cancel_and_timeout() -> None:
    ran: list[bool] = []

    async def action() -> str:
        ran.append(True)
        return forgot_text(4)

    def confirm_view() -> ConfirmView:
        return ConfirmView(FakeInteraction(), action, confirm_label="Forget everything")  # type: ignore[arg-type]

    view = confirm_view()
    assert [c.custom_id for c in view.children] == ["forget:confirm", "forget:cancel"]  # type: ignore[attr-defined]
    press = FakeInteraction()
    await view.children[0].callback(press)  # type: ignore[arg-type]
    assert press.response.calls == [{"kind": "edit", "content": "Forgot 4 facts.", "view": None}]
    assert ran == [True] and view.is_finished()

    view = confirm_view()
    press = FakeInteraction()
    await view.children[1].callback(press)  # type: ignore[arg-type]
    assert press.response.calls == [{"kind": "edit", "content": NOTHING_FORGOTTEN, "view": None}]
    assert ran == [True]

    view = confirm_view()
    await view.on_timeout()
    assert view.origin.original_edits == [{"content": NOTHING_FORGOTTEN_TIMEOUT, "view": None}]  # type: ignore[attr-defined]
    view.stop()


async def test_autocomplete_offers_only_the_callers_facts(service: MemoryService) -> None:
    await add_facts(service, 3)
    await add_facts(service, 2, user_id=STRANGER)
    choices = await fact_choices(service, SCOPE, OWNER, "number")
    assert len(choices) == 3
    own = {f.id for f in await service.list_facts(SCOPE, str(OWNER))}
    assert {c.value for c in choices} == own
    assert all(c.name.startswith(f"#{c.value} · fact number") for c in choices)


def test_the_persona_in_force_is_the_channels_then_its_parents_then_the_servers() -> None:
    from bot.memory.models import GuildSettings

    settings = GuildSettings("1", persona="server", channel_personas={"10": "ten", "20": "twenty"})
    assert settings.persona_for("10") == "ten"
    assert settings.persona_for("thread", "20") == "twenty"  # a thread of channel 20
    assert settings.persona_for("30") == "server"
    assert GuildSettings("2").persona_for("10") is None  # the bot's default


def test_a_status_with_many_channel_personas_fits_one_message() -> None:
    from bot.discord_bot.ui.admin_reports import STATUS_MAX_CHARS, format_status
    from bot.memory.models import GuildSettings

    many = {str(1000 + i): "x" * 500 for i in range(40)}
    text = format_status(GuildSettings("1", channel_personas=many), "default")
    assert len(text) <= STATUS_MAX_CHARS and "more channels" in text
    assert text.count("In <#") + int(text.rsplit("and ", 1)[1].split()[0]) == 40
