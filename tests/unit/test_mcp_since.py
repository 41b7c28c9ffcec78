"""The MCP tools' `since` reads what /memory recap reads, and refuses alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.mcp.session import since_of
from bot.memory.consult import ConsultError
from bot.memory.models import utcnow


def test_a_duration_and_a_named_day_are_read_as_the_recap_reads_them() -> None:
    two_weeks = datetime.fromisoformat(str(since_of("2 weeks")))
    assert abs(utcnow() - timedelta(weeks=2) - two_weeks) < timedelta(minutes=2)
    before_yesterday = datetime.fromisoformat(str(since_of("the day before yesterday")))
    today = utcnow().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    assert before_yesterday == today - timedelta(days=2)


def test_an_iso_moment_is_kept_and_an_unreadable_phrase_is_refused_with_examples() -> None:
    assert since_of("2026-05-01") == "2026-05-01T00:00:00.000000Z"
    with pytest.raises(ConsultError, match="2 weeks") as refused:
        since_of("when the moon was full")
    assert "\n" not in str(refused.value)
