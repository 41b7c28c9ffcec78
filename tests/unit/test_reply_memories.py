"""Which memories recent replies used: kept for a while, for a bounded number of replies."""

from __future__ import annotations

from bot.discord_bot.reply_memories import ReplyMemories
from bot.memory.models import GuildSettings


def test_the_oldest_reply_goes_first_past_the_cap_and_every_reply_after_its_time() -> None:
    now = [0.0]
    kept = ReplyMemories(seconds=60, most=2, clock=lambda: now[0])
    for trigger in (1, 2, 3):
        kept.keep(trigger, 10, "guild:1", (trigger,), ())
    assert kept.get(1) is None
    record = kept.get(3)
    assert record is not None and (record.asker_id, record.fact_ids) == (10, (3,))
    now[0] = 61
    assert kept.get(2) is None and kept.get(3) is None


def test_an_admins_choice_of_auto_reply_wins_over_the_starting_set_and_a_thread_over_its_parent() -> None:
    settings = GuildSettings("1", auto_reply={"20": False, "30": True, "31": False})
    assert settings.replies_in(["10"], starting={"10"})  # the environment's channel
    assert not settings.replies_in(["20"], starting={"20"})  # turned off by an admin
    assert settings.replies_in(["30"]) and settings.replies_in(["32", "30"])  # a thread of #30
    assert not settings.replies_in(["31", "30"])  # a thread turned off in a channel that answers
    assert not settings.replies_in(["40"], starting={"10"})
