"""REST routes for channels and messages: history, posting, editing, deleting, typing and reactions.

Message bodies are checked as Discord checks them (length, embed count, empty messages), and a bot
without the message content intent reads other people's guild messages empty, as on Discord.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from standins.discord.model import (
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    error_body,
    field_error,
    iso,
    number_components,
)
from standins.discord.records import RecordedRequest, StoredMessage
from standins.discord.routes.base import Body, RestError, RestServer, parse_id

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MESSAGE_FLAGS_ALLOWED = (1 << 2) | (1 << 6) | (1 << 12) | (1 << 15)

UNKNOWN_MESSAGE = error_body(10008, "Unknown Message")
UNKNOWN_CHANNEL = error_body(10003, "Unknown Channel")


class MessageRoutes(RestServer):
    """Channels and their messages."""

    def _channel(self, channel_id: str) -> dict[str, Any]:
        channel = self.channels.get(parse_id(channel_id))
        if channel is None:
            raise RestError(404, UNKNOWN_CHANNEL)
        return channel

    def _message(self, channel_id: str, message_id: str) -> StoredMessage:
        self._channel(channel_id)
        stored = self.messages.get(parse_id(message_id))
        if stored is None or stored.deleted or stored.ephemeral or stored.channel_id != parse_id(channel_id):
            raise RestError(404, UNKNOWN_MESSAGE)
        return stored

    def _rest_view(self, stored: StoredMessage) -> dict[str, Any]:
        """A message as the bot may read it over REST (content hidden without the intent)."""
        payload = self._render(stored)
        intents = self._current_intents()
        if stored.guild_id is not None:
            payload["guild_id"] = str(stored.guild_id)
            payload = self._hide_content(payload, intents)
            payload.pop("guild_id")
        return payload

    def _current_intents(self) -> int:
        if not self.identify_payloads:
            return ~0
        return int(self.identify_payloads[-1].get("intents") or 0)

    async def _get_channel(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, self._channel(p["channel_id"])

    async def _get_messages(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        self._channel(p["channel_id"])
        ids = sorted(self._channel_messages.get(parse_id(p["channel_id"]), []))
        q = request.query
        limit = max(1, min(100, int(q.get("limit", 50))))
        if "before" in q:
            chosen = [i for i in ids if i < int(q["before"])][-limit:]
        elif "after" in q:
            chosen = [i for i in ids if i > int(q["after"])][:limit]
        elif "around" in q:
            around = int(q["around"])
            older = [i for i in ids if i < around][-(limit // 2) :] if limit > 1 else []
            newer = [i for i in ids if i >= around][: limit - len(older)]
            chosen = older + newer
        else:
            chosen = ids[-limit:]
        return 200, [self._rest_view(self.messages[i]) for i in reversed(chosen)]

    async def _get_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, self._rest_view(self._message(p["channel_id"], p["message_id"]))

    async def _post_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        channel_id = parse_id(p["channel_id"])
        self._channel(p["channel_id"])
        body = rec.json or {}
        validate_message_body(body, rec.files, require_content=True)
        reference = None
        ref = body.get("message_reference")
        if ref:
            target = self.messages.get(parse_id(ref.get("message_id")))
            if target is None or target.deleted or target.ephemeral:
                if ref.get("fail_if_not_exists", True):
                    raise RestError(
                        400,
                        field_error(
                            "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                        ),
                    )
            else:
                reference = self._reference_to(target)
                if ref.get("type") == 1:
                    reference["type"] = 1
        stored = self._create_message(
            channel_id,
            self.bot_user,
            content=body.get("content") or "",
            embeds=body.get("embeds") or [],
            components=body.get("components") or [],
            attachments=uploaded_attachments(rec.files, body, self._snowflake),
            flags=int(body.get("flags") or 0) & MESSAGE_FLAGS_ALLOWED & ~FLAG_EPHEMERAL,
            reference=reference,
            allowed_mentions=body.get("allowed_mentions"),
            tts=bool(body.get("tts")),
            nonce=body.get("nonce"),
        )
        await self._dispatch_message("MESSAGE_CREATE", stored)
        return 200, self._render(stored)

    async def _patch_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        if stored.author_id != self.bot_id:
            raise RestError(403, error_body(50005, "Cannot edit a message authored by another user"))
        await self._apply_edit(stored, rec)
        return 200, self._render(stored)

    async def _apply_edit(self, stored: StoredMessage, rec: RecordedRequest) -> None:
        body = rec.json or {}
        validate_message_body(body, rec.files, require_content=False)
        data = stored.data
        for key in ("content", "embeds", "components"):
            if key in body:
                data[key] = body[key] if body[key] is not None else ("" if key == "content" else [])
        if "components" in body:
            number_components(data["components"])
        if "attachments" in body or rec.files:
            kept = {str(a.get("id")) for a in body.get("attachments") or []}
            old = [a for a in data["attachments"] if a["id"] in kept]
            data["attachments"] = old + uploaded_attachments(rec.files, body, self._snowflake)
        if "flags" in body and body["flags"] is not None:
            keep = data["flags"] & FLAG_EPHEMERAL
            data["flags"] = (int(body["flags"]) & MESSAGE_FLAGS_ALLOWED & ~FLAG_EPHEMERAL) | keep
        data["flags"] &= ~FLAG_LOADING
        if "allowed_mentions" in body:
            stored.allowed_mentions = body["allowed_mentions"]
        data["edited_timestamp"] = iso()
        self._compute_mentions(stored, [])
        self._changes.notify()
        await self._dispatch_message("MESSAGE_UPDATE", stored)

    async def _delete_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        await self._delete(stored)
        return 204, None

    async def _typing(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        self._channel(p["channel_id"])
        return 204, None

    async def _add_reaction(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        reactions = stored.data.setdefault("reactions", [])
        name = unquote(p["emoji"])
        if not any(r["emoji"]["name"] == name for r in reactions):
            reactions.append({"emoji": {"id": None, "name": name}, "count": 1, "me": True})
        self._changes.notify()
        return 204, None

    async def _remove_reaction(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        name = unquote(p["emoji"])
        stored.data["reactions"] = [r for r in stored.data.get("reactions", []) if r["emoji"]["name"] != name]
        self._changes.notify()
        return 204, None


def validate_message_body(
    body: dict[str, Any], files: list[dict[str, Any]], *, require_content: bool
) -> None:
    """Discord's checks that catch real bugs: length, embed count, empty messages."""
    content = body.get("content")
    if content is not None and len(content) > MAX_CONTENT:
        raise RestError(
            400, field_error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        )
    embeds = body.get("embeds") or []
    if len(embeds) > MAX_EMBEDS:
        raise RestError(400, field_error("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."))
    for index, embed in enumerate(embeds):
        if len(embed.get("description") or "") > 4096:
            raise RestError(
                400,
                field_error(
                    f"embeds.{index}.description", "BASE_TYPE_MAX_LENGTH", "Must be 4096 or fewer in length."
                ),
            )
    has_something = (
        content or embeds or body.get("components") or files or body.get("sticker_ids") or body.get("poll")
    )
    if require_content and not has_something:
        raise RestError(400, error_body(50006, "Cannot send an empty message"))


def uploaded_attachments(
    files: list[dict[str, Any]], body: dict[str, Any], snowflake: Callable[[], int]
) -> list[dict[str, Any]]:
    """Attachment objects for uploaded files (descriptions from the payload's `attachments`)."""
    described = {str(a.get("id")): a for a in body.get("attachments") or []}
    result = []
    for index, upload in enumerate(files):
        attachment_id = snowflake()
        meta = described.get(str(index), {})
        url = f"https://cdn.discordapp.com/attachments/0/{attachment_id}/{upload['filename']}"
        result.append(
            {
                "id": str(attachment_id),
                "filename": meta.get("filename") or upload["filename"],
                "description": meta.get("description"),
                "size": upload["size"],
                "url": url,
                "proxy_url": url,
                "content_type": upload.get("content_type"),
            }
        )
    return result
