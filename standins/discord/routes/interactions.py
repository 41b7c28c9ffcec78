"""REST routes with which the bot answers interactions, each answer recorded on its `InteractionRecord`.

The callback must come within `interaction_ack_timeout` and only once; a "thinking" defer is replaced
by the first followup; the original response and followups can be fetched, edited and deleted through
the interaction's webhook.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from standins.discord.model import (
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    MESSAGE_CHAT_INPUT_COMMAND,
    MESSAGE_DEFAULT,
    error_body,
    field_error,
)
from standins.discord.records import InteractionRecord, RecordedRequest, StoredMessage
from standins.discord.routes.base import Body, RestError, parse_id
from standins.discord.routes.messages import (
    MESSAGE_FLAGS_ALLOWED,
    UNKNOWN_MESSAGE,
    MessageRoutes,
    uploaded_attachments,
    validate_message_body,
)

UNKNOWN_INTERACTION = error_body(10062, "Unknown interaction")
UNKNOWN_WEBHOOK = error_body(10015, "Unknown Webhook")


class InteractionRoutes(MessageRoutes):
    """Interaction callbacks, followups and webhook messages."""

    def _interaction(self, interaction_id: str, token: str) -> InteractionRecord:
        record = self._interactions_by_token.get(token)
        if record is None or str(record.id) != interaction_id:
            raise RestError(404, UNKNOWN_INTERACTION)
        return record

    def _webhook_interaction(self, app: str, token: str) -> InteractionRecord:
        record = self._interactions_by_token.get(token)
        if record is None or parse_id(app) != self.application_id:
            raise RestError(404, UNKNOWN_WEBHOOK)
        return record

    def _callback_result(
        self, record: InteractionRecord, kind: int, message: StoredMessage | None, *, with_resource: bool
    ) -> dict[str, Any]:
        """The InteractionCallbackResponse discord.py asks for with `?with_response=1`."""
        interaction: dict[str, Any] = {"id": str(record.id), "type": record.type}
        if message is not None:
            interaction["response_message_id"] = message.data["id"]
            interaction["response_message_loading"] = bool(message.data["flags"] & FLAG_LOADING)
            interaction["response_message_ephemeral"] = message.ephemeral
        result: dict[str, Any] = {"interaction": interaction}
        if with_resource and message is not None:
            result["resource"] = {"type": kind, "message": self._render(message)}
        return result

    async def _interaction_callback(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._interaction(p["interaction_id"], p["token"])
        age = time.monotonic() - record.created
        if self.interaction_ack_timeout is not None and age > self.interaction_ack_timeout:
            record.errors.append(f"callback after {age:.2f}s")
            return 404, UNKNOWN_INTERACTION
        if record.acknowledged:
            record.errors.append("second callback")
            return 400, error_body(40060, "Interaction has already been acknowledged.")
        body = rec.json or {}
        kind = int(body.get("type", 0))
        data = body.get("data") or {}
        allowed = {2: {1, 4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}.get(record.type, {1})
        if kind not in allowed:
            return 400, field_error(
                "type", "INTERACTION_RESPONSE_TYPE_INVALID", f"Invalid response type {kind}"
            )
        message: StoredMessage | None = None
        channel_id = int(record.payload["channel_id"])
        if kind in (4, 5):
            validate_message_body(data, rec.files, require_content=kind == 4)
            ephemeral = bool(int(data.get("flags") or 0) & FLAG_EPHEMERAL)
            flags = (int(data.get("flags") or 0) & MESSAGE_FLAGS_ALLOWED) | (FLAG_LOADING if kind == 5 else 0)
            message = self._create_message(
                channel_id,
                self.bot_user,
                content=(data.get("content") or "") if kind == 4 else "",
                embeds=(data.get("embeds") or []) if kind == 4 else [],
                components=(data.get("components") or []) if kind == 4 else [],
                attachments=uploaded_attachments(rec.files, data, self._snowflake) if kind == 4 else [],
                flags=flags,
                allowed_mentions=data.get("allowed_mentions"),
                ephemeral=ephemeral,
                interaction=record,
                message_type=MESSAGE_CHAT_INPUT_COMMAND if record.type == 2 else MESSAGE_DEFAULT,
            )
            record.original_message_id = message.id
        elif kind in (6, 7):
            source = record.payload.get("message")
            message = self.messages.get(int(source["id"])) if source else None
            if message is None:
                return 400, UNKNOWN_MESSAGE
            record.original_message_id = message.id
        elif kind == 8:
            choices = data.get("choices") or []
            if len(choices) > 25:
                return 400, field_error(
                    "data.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
        record.acknowledged = True
        entry = record.add("callback", body)
        if kind == 7 and message is not None:
            await self._apply_edit(message, RecordedRequest("PATCH", rec.path, {}, data, {}, rec.files))
        elif message is not None:
            await self._dispatch_message("MESSAGE_CREATE", message)
        if message is not None:
            entry["message"] = self._render(message)
        with_response = request.query.get("with_response", "").lower() in ("1", "true")
        if not with_response:
            return 204, None
        return 200, self._callback_result(record, kind, message, with_resource=kind in (4, 5, 7))

    async def _followup(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        if not record.acknowledged:
            record.errors.append("followup before the callback")
            return 404, UNKNOWN_WEBHOOK
        body = rec.json or {}
        original = self.messages.get(record.original_message_id or 0)
        if (
            original is not None
            and original.data["flags"] & FLAG_LOADING
            and original.interaction_token == record.token
            and not original.deleted
        ):
            # The first followup after a "thinking" defer replaces the loading message.
            await self._apply_edit(original, rec)
            stored = original
        else:
            validate_message_body(body, rec.files, require_content=True)
            flags = int(body.get("flags") or 0)
            stored = self._create_message(
                int(record.payload["channel_id"]),
                self.bot_user,
                content=body.get("content") or "",
                embeds=body.get("embeds") or [],
                components=body.get("components") or [],
                attachments=uploaded_attachments(rec.files, body, self._snowflake),
                flags=flags & MESSAGE_FLAGS_ALLOWED,
                allowed_mentions=body.get("allowed_mentions"),
                ephemeral=bool(flags & FLAG_EPHEMERAL),
                interaction=record,
            )
            await self._dispatch_message("MESSAGE_CREATE", stored)
        record.followup_ids.append(stored.id)
        record.add("followup", body, self._render(stored))
        if request.query.get("wait", "").lower() in ("1", "true"):
            return 200, self._render(stored)
        return 204, None

    def _webhook_message(self, record: InteractionRecord, message_id: str) -> StoredMessage:
        if message_id == "@original":
            mid = record.original_message_id
        else:
            mid = parse_id(message_id)
            if mid not in record.followup_ids and mid != record.original_message_id:
                raise RestError(404, UNKNOWN_MESSAGE)
        stored = self.messages.get(mid or 0)
        if stored is None or stored.deleted:
            raise RestError(404, UNKNOWN_MESSAGE)
        return stored

    async def _get_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        return 200, self._render(self._webhook_message(record, p["message_id"]))

    async def _edit_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        stored = self._webhook_message(record, p["message_id"])
        await self._apply_edit(stored, rec)
        kind = "edit_original" if p["message_id"] == "@original" else "edit_message"
        record.add(kind, rec.json, self._render(stored))
        return 200, self._render(stored)

    async def _delete_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        stored = self._webhook_message(record, p["message_id"])
        await self._delete(stored)
        record.add("delete_original" if p["message_id"] == "@original" else "delete_message", None)
        return 204, None
