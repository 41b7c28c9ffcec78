"""The Discord stand-in's CDN: attachment bytes served on the stand-in's own port, as Discord serves them.

A test posts files with a message (`send_message(..., files=[Upload(...)])`); each becomes an
attachment object whose `url` points here, with the signed-URL query Discord adds (`ex`, `is`, `hm`),
and the bot downloads it with any HTTP client. `cdn_requests` records every download, so a test can
tell that a file too large to read was never fetched. An upload with `redirect` is answered with a
302 to that URL instead, as a CDN led astray would.
"""

from __future__ import annotations

import mimetypes
import secrets
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from standins.discord.state import StandInState

CDN_PREFIX = "/attachments"


@dataclass(frozen=True)
class Upload:
    """A file a person posts. `size` is what the attachment object declares (default: the real size),
    so a test can make a file lie about its size; `content_type` None leaves it out, as Discord does
    for types it does not know; `redirect` makes the CDN answer with a redirect there."""

    filename: str
    data: bytes
    content_type: str | None = ""
    size: int | None = None
    redirect: str | None = None


class Cdn(StandInState):
    """Stores posted files and serves them under /attachments/{channel}/{attachment}/{filename}."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.files: dict[int, bytes] = {}
        self.redirects: dict[int, str] = {}
        self.cdn_requests: list[str] = []

    def _attach(self, channel_id: int, upload: Upload) -> dict[str, Any]:
        """The attachment object of a posted file, its bytes kept for the CDN route."""
        attachment_id = self._snowflake()
        self.files[attachment_id] = upload.data
        if upload.redirect is not None:
            self.redirects[attachment_id] = upload.redirect
        content_type = upload.content_type
        if content_type == "":
            content_type = mimetypes.guess_type(upload.filename)[0]
        now = int(time.time())
        query = f"ex={now + 86400:x}&is={now:x}&hm={secrets.token_hex(32)}&"
        url = f"{self.base_url}{CDN_PREFIX}/{channel_id}/{attachment_id}/{upload.filename}?{query}"
        attachment: dict[str, Any] = {
            "id": str(attachment_id),
            "filename": upload.filename,
            "size": len(upload.data) if upload.size is None else upload.size,
            "url": url,
            "proxy_url": url.replace("/attachments/", "/media-proxy/attachments/", 1),
        }
        if content_type:
            attachment["content_type"] = content_type
        return attachment

    async def _cdn(self, request: web.Request) -> web.Response:
        self.cdn_requests.append(request.path)
        attachment_id = request.match_info.get("attachment_id", "")
        data = self.files.get(int(attachment_id)) if attachment_id.isdigit() else None
        if data is None:
            return web.Response(status=404, text="Not Found")
        if int(attachment_id) in self.redirects:
            return web.Response(status=302, headers={"Location": self.redirects[int(attachment_id)]})
        kind = mimetypes.guess_type(request.match_info.get("filename", ""))[0] or "application/octet-stream"
        return web.Response(body=data, headers={"Content-Type": kind})
