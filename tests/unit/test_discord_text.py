"""Splitting long answers for Discord's 2,000-character limit."""

from __future__ import annotations

from bot.discord_bot.discord_text import DISCORD_LIMIT, STREAMING_MARKER, split_message, streaming_parts


def test_short_text_is_one_part() -> None:
    assert split_message("  hello  ") == ["hello"]
    assert split_message("   ") == []


def test_cuts_on_paragraphs_then_lines_then_words() -> None:
    paragraphs = "\n\n".join(f"Paragraph {i}. " + "word " * 150 for i in range(8))
    parts = split_message(paragraphs)
    assert len(parts) > 1 and all(len(p) <= 2000 for p in parts)
    assert all(p.startswith("Paragraph") for p in parts)
    words = " ".join(["lorem"] * 1000)
    parts = split_message(words)
    assert all(len(p) <= 2000 and not p.endswith(" ") for p in parts)
    assert " ".join(parts) == words


def test_code_fences_are_closed_and_reopened() -> None:
    code = "\n".join(f"print({i})  # a line of code" for i in range(150))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\nThat's it."
    parts = split_message(text)
    assert len(parts) >= 3 and all(len(p) <= 2000 for p in parts)
    for part in parts:
        assert part.count("```") % 2 == 0, part[-80:]
    assert parts[1].startswith("```python\n")
    rebuilt = "".join(p.replace("```python\n", "").replace("\n```", "") for p in parts)
    assert all(f"print({i})" in rebuilt for i in range(150))


def test_a_word_longer_than_the_limit_is_cut_hard() -> None:
    parts = split_message("x" * 4500)
    assert [len(p) for p in parts] == [1996, 1996, 508]


def test_inline_triple_backticks_on_one_line_are_not_a_fence() -> None:
    text = "```pip install x``` installs it.\n\n" + "More words here. " * 200
    parts = split_message(text)
    assert len(parts) == 2
    assert not parts[0].endswith("```") and not parts[1].startswith("```")
    assert " ".join(parts).replace("\n", " ").split() == text.split()


def test_a_four_backtick_fence_holding_three_backtick_lines_stays_one_block() -> None:
    inner = "\n".join(["```python", *(f"print({i})  # inside a markdown example" for i in range(120)), "```"])
    text = "Markdown example:\n\n````markdown\n" + inner + "\n````\n\nDone."
    parts = split_message(text)
    assert len(parts) >= 2 and all(len(p) <= 2000 for p in parts)
    assert parts[0].endswith("\n````")
    assert all(p.startswith("````markdown\n") for p in parts[1:])
    for part in parts:  # every part opens and closes its 4-backtick block
        assert sum(1 for line in part.split("\n") if line.startswith("````")) % 2 == 0, part[-80:]


def test_a_streaming_reply_shows_the_marker_on_its_last_part_only_until_the_final_edit() -> None:
    text = "Some words to explain. " * 200  # several parts
    shown, said = streaming_parts(text, final=False)
    assert len(shown) >= 3 and shown[-1].endswith(STREAMING_MARKER)
    assert not any(p.endswith(STREAMING_MARKER) for p in shown[:-1])
    assert all(len(p) <= DISCORD_LIMIT for p in shown)
    assert STREAMING_MARKER not in "".join(said)
    final, final_said = streaming_parts(text, final=True)
    assert final == final_said == said  # the marker goes; no part is cut elsewhere
    assert not final[-1].endswith(STREAMING_MARKER)
    # A part that fills the whole room for text still fits with the marker.
    full = "x" * (DISCORD_LIMIT - len(STREAMING_MARKER))
    assert streaming_parts(full, final=False)[0] == [full + STREAMING_MARKER]
