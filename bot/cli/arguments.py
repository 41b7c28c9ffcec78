"""Argument types: a malformed id, scope or count is a usage error that names what was expected, before
any settings are read or a database is opened."""

from __future__ import annotations

import argparse

from bot.memory.models import guild_id_of, is_discord_id, positive_number, valid_scope


def scope(text: str) -> str:
    if not valid_scope(text):
        raise argparse.ArgumentTypeError(f"invalid scope {text!r}: expected guild:<id>, dm or terminal")
    return text


def guild_scope(text: str) -> str:
    if guild_id_of(text) is None:
        raise argparse.ArgumentTypeError(f"invalid server scope {text[:40]!r}: expected guild:<server id>")
    return text


def user(text: str) -> str:
    if not is_discord_id(text):
        raise argparse.ArgumentTypeError(f"invalid user id {text!r}: expected a Discord user id (digits)")
    return text


def snowflake(text: str) -> int:
    if not is_discord_id(text) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"invalid channel id {text!r}: expected a Discord id (digits)")
    return int(text)


def positive(text: str) -> int:
    """A count or id: 0, negatives and '١' are usage errors rather than silently clamped or accepted."""
    number = positive_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return number


def http_address(parser: argparse.ArgumentParser, port: int, *, served: str, port_note: str = "") -> None:
    """--host (127.0.0.1 unless told otherwise) and --port for a command that serves HTTP (`served`: what
    the help calls the address, "the HTTP address")."""
    parser.add_argument("--host", default="127.0.0.1", help=f"{served} (default 127.0.0.1)")
    parser.add_argument("--port", type=positive, default=port, help=f"the port (default {port}{port_note})")
