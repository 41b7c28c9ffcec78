"""Reading the pages' forms: URL-encoded bodies of at most MAX_FORM_BYTES (a correction is at most 500
characters, a persona 2,000); anything else reads as an empty form, which no CSRF check passes. Read here
rather than by Starlette's form parser, which needs python-multipart for what these forms never send."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

MAX_FORM_BYTES = 65_536  # the admin's settings form holds a persona per channel


async def form_fields(request: Request) -> dict[str, list[str]]:
    """Every value of every field (a group of checkboxes repeats its name)."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    size = request.headers.get("content-length", "")
    if kind != "application/x-www-form-urlencoded" or not size.isdigit() or int(size) > MAX_FORM_BYTES:
        return {}
    body = await request.body()  # kept by the request: read again, it is the same
    fields: dict[str, list[str]] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        fields.setdefault(name, []).append(value)
    return fields


async def form_of(request: Request) -> dict[str, str]:
    """A form's fields, the last value of each (as the member's pages send them)."""
    return {name: values[-1] for name, values in (await form_fields(request)).items()}
