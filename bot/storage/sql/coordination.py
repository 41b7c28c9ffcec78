"""Several processes on one database: leases on keys, and a counter of settings changes.

A claim is all-or-nothing over its keys and lapses at its deadline, so a process that dies holding
one blocks nobody for longer than the lease, and for no time at all where the caller can tell that
the holder died (`dead_owners`, judged by the caller on the names `lease_holders` gives). The settings
version is bumped in the same transaction as an opt-out, a switch or an ignored channel, so another
process that sees the new number reloads a state that already holds the change.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.storage.sql.database import Connected
from bot.storage.sql.rows import scalar

SETTINGS_VERSION = "settings_version"


class Coordination(Connected):
    def claim(self, keys: Sequence[str], owner: str, seconds: float, dead_owners: Sequence[str] = ()) -> bool:
        now = time.time()
        free = {owner, *dead_owners}
        with self._tx():
            for key in keys:
                holder = self.conn.execute(
                    "SELECT owner FROM claims WHERE key = ? AND until > ?", (key, now)
                ).fetchone()
                if holder is not None and holder[0] not in free:
                    return False
            self.conn.executemany(
                "INSERT INTO claims (key, owner, until) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE "
                "SET owner = excluded.owner, until = excluded.until",
                [(key, owner, now + seconds) for key in keys],
            )
        return True

    def lease_holders(self, keys: Sequence[str]) -> list[str]:
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        rows = self.conn.execute(
            f"SELECT DISTINCT owner FROM claims WHERE until > ? AND key IN ({marks}) ORDER BY owner",
            (time.time(), *keys),
        ).fetchall()
        return [row[0] for row in rows]

    def release(self, keys: Sequence[str], owner: str) -> None:
        with self._tx():
            self.conn.executemany(
                "DELETE FROM claims WHERE key = ? AND owner = ?", [(key, owner) for key in keys]
            )

    def settings_version(self) -> int:
        return int(scalar(self.conn, "SELECT value FROM app_state WHERE key = ?", (SETTINGS_VERSION,)) or 0)

    def _settings_changed(self) -> None:
        """Bump the settings version; call inside the transaction that makes the change."""
        self.conn.execute(
            "UPDATE app_state SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = ?",
            (SETTINGS_VERSION,),
        )
