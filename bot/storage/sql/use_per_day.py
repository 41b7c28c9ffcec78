"""A server's use per UTC day (`use_per_day`): counts only, added in batches by every process sharing the
database, never overwritten, so two shards' counts of one day add up."""

from __future__ import annotations

from collections.abc import Sequence

from bot.storage.sql.database import Connected
from bot.storage.sql.rows import select


class UsePerDay(Connected):
    def add_use_per_day(self, counts: Sequence[tuple[str, str, str, int]]) -> None:
        """Add (scope, day, what, count) rows to what is stored, in one transaction."""
        if not counts:
            return
        with self._tx():
            self.conn.executemany(
                "INSERT INTO use_per_day (scope, day, what, count) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope, day, what) DO UPDATE SET count = use_per_day.count + excluded.count",
                [tuple(c) for c in counts],
            )

    def use_per_day(self, scope: str, since_day: str) -> dict[str, dict[str, int]]:
        """Per UTC day (YYYY-MM-DD) from `since_day` on, the scope's counts by what they count."""
        days: dict[str, dict[str, int]] = {}
        rows = select(
            self.conn,
            "SELECT day, what, count FROM use_per_day WHERE scope = ? AND day >= ? ORDER BY day, what",
            (scope, since_day),
        )
        for row in rows:
            days.setdefault(row["day"], {})[row["what"]] = int(row["count"])
        return days
