"""A member's export as a file: the JSON `/memory export` gives, and the same facts as CSV.

The CSV is for spreadsheets: a header row, one row per fact (every status, oldest first, as the JSON),
RFC 4180 quoting, UTF-8 with a byte order mark (so that Excel reads accents and CJK right), and a cell
that a spreadsheet would run as a formula (one starting with = + - @, a tab or a carriage return) begins
with an apostrophe instead, as OWASP advises for CSV exports. The JSON keeps every text exactly.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from bot.memory.models import Fact, iso, utcnow
from bot.memory.portable import fact_record

ABOUT = (
    "Everything this bot holds about you in this place: each fact, whether it is still current, when it "
    "was learned and from which of your messages, in which channel."
)
CSV_COLUMNS = (
    "id",
    "text",
    "status",
    "superseded_by",
    "sensitive",
    "said_at",
    "recorded_at",
    "updated_at",
    "valid_from",
    "message_ids",
    "channel_ids",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def file_name(scope: str, user_id: str, extension: str) -> str:
    return f"memory-{scope.replace(':', '-')}-{user_id}.{extension}"


def json_export(scope: str, user_id: str, name: str, facts: list[Fact]) -> str:
    """The JSON file of `/memory export`."""
    document = {
        "about": ABOUT,
        "scope": scope,
        "user_id": user_id,
        "exported_at": iso(utcnow()),
        "facts": [fact_record(f, name) for f in facts],
    }
    return json.dumps(document, ensure_ascii=False, indent=1)


def csv_export(facts: list[Fact]) -> str:
    """The same facts as CSV: a header, a row each; its messages' ids and their channels' ids,
    each space-separated."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for fact in facts:
        record = fact_record(fact)
        sources = record["sources"]
        row: list[Any] = [
            *(record[c] for c in CSV_COLUMNS[:-2]),
            " ".join(s["message_id"] for s in sources),
            " ".join(dict.fromkeys(s["channel_id"] for s in sources if s["channel_id"])),
        ]
        writer.writerow([cell(value) for value in row])
    return "\ufeff" + out.getvalue()


def cell(value: Any) -> str:
    """A value as a CSV cell: empty for None, true/false, and never a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
