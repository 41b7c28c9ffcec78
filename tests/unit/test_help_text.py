"""/help and the welcome say what is in force: the no-memory marker, and the recap only with community memory."""

from __future__ import annotations

from bot.discord_bot.cogs.help import help_text, welcome_text


def test_without_community_memory_neither_text_speaks_of_what_channels_discussed() -> None:
    on = help_text("Bot", marker="!nomem", community=True)
    off = help_text("Bot", marker="!nomem", community=False)
    assert "/memory recap" in on and "talk about and decide" in on
    assert "/memory recap" not in off and "decide" not in off
    assert "decide" in welcome_text("Bot", marker="!x", community=True)
    assert "decide" not in welcome_text("Bot", marker="!x", community=False)


def test_the_welcome_is_three_lines_naming_the_marker_in_force_and_help() -> None:
    lines = welcome_text("Bot", marker="!quiet", community=True).splitlines()
    assert len(lines) == 3
    assert "`!quiet`" in lines[1] and "/help" in lines[2]
