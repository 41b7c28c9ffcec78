"""The attachments a reply reads: downloaded with a size cap and a deadline, made fit for the chat model.

Images (PNG, JPEG, WebP; a GIF's first frame) go to the model as inline data, scaled down and re-encoded
when they pass IMAGE_MAX_SIDE or IMAGE_MAX_BYTES; text files (plain text, Markdown, code, CSV, JSON ...)
as text, cleaned like message text, cut at a number of characters and framed by an opening and a closing
line that nothing in the file can imitate (see framed()). Files are fetched only from Discord's attachment
servers. Whatever cannot be read (too large, another type, a failed download, a link elsewhere, bytes
that are not what they claim) becomes a short note to the model, such as "[image cat.png skipped: too
large]", never an error: the reply goes on without it.

A small PNG can hold a huge blank image, so decoding is bounded: pixels per image and per reply are
capped from the header before anything is decoded (a JPEG is decoded at 1/2, 1/4 or 1/8 of its size
when that still covers IMAGE_MAX_SIDE), and one image at a time is decoded in the process, on one worker
thread off the event loop (which also cleans files' text). What was prepared for an attachment is kept
by its id, so the images of the conversation are not downloaded and decoded again for every reply.

Attachments only help answer the conversation. Memory learns from what people write, never from them:
capture reads a message's text alone.
"""

from __future__ import annotations

import asyncio
import io
import logging
import math
import re
import secrets
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import PurePosixPath
from typing import Protocol, TypeVar

import aiohttp
from PIL import Image, ImageOps
from yarl import URL

from bot.config import Settings
from bot.memory.model_ports import InlineData, TurnPart
from bot.memory.text import MAX_NAME_CHARS, clean

log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)

IMAGE_MAX_SIDE = (
    1536  # pixels: Gemini reads larger images in tiles it scales down anyway, and others shrink them too
)
IMAGE_MAX_BYTES = 2 * 1024 * 1024  # what one image may weigh in the request once re-encoded
IMAGE_MIN_SIDE = 256  # shrinking stops here: an image that still weighs too much is skipped
# Decoding costs 4 bytes a pixel (8 while an RGBA image is resized): 24 million pixels, a 6K screenshot,
# take about 130 MB (220 MB in RGBA) for the moment one is decoded. More is a bomb, not a picture.
IMAGE_MAX_PIXELS = 24_000_000
REPLY_MAX_PIXELS = 64_000_000  # decoded for one reply in all; bounds its CPU time (~0.5 s per 24 million)
PREPARED_MAX_ENTRIES = 256  # attachments whose parts are kept for later replies ...
PREPARED_MAX_BYTES = 32 * 1024 * 1024  # ... and what those parts may weigh in all
DOWNLOAD_TIMEOUT_SECONDS = 10.0
# Where Discord serves attachments: a link anywhere else (a server on the bot's network, a cloud's
# metadata address) is never fetched, and a redirect is never followed.
DISCORD_CDN_ORIGINS = frozenset({"https://cdn.discordapp.com", "https://media.discordapp.net"})
JPEG_QUALITY = 85
IMAGE_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}  # what goes as it is
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
        "application/x-python",
    }
)
TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .csv .tsv .log .json .jsonl .yaml .yml .toml .ini .cfg .conf .xml .html .htm "
    ".css .scss .js .mjs .ts .tsx .jsx .py .pyi .rb .go .rs .java .kt .kts .swift .c .h .cc .cpp .hpp .cs "
    ".php .pl .lua .r .sql .sh .bash .zsh .ps1 .bat .dart .scala .hs .ex .exs .erl .clj .vue .svelte "
    ".tex .diff .patch .env.example .gitignore .dockerfile .makefile".split()
)


# One attachment is prepared at a time in the whole process (an image decoded, a file's text cleaned), off
# the event loop: a worker thread keeps its queue even when a reply waiting on it is cancelled, which a
# lock around asyncio.to_thread would not.
_PREPARER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attachments")


class AttachmentLike(Protocol):
    """What the reader needs of an attachment (discord.Attachment has it)."""

    @property
    def id(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def content_type(self) -> str | None: ...


@dataclass(frozen=True)
class AttachmentLimits:
    """The caps of ATTACHMENT_MAX_BYTES, ATTACHMENTS_PER_MESSAGE, ATTACHMENTS_PER_PROMPT and
    ATTACHMENT_TEXT_MAX_CHARS, and the origins (scheme, host and port) files are downloaded from."""

    max_bytes: int
    per_message: int
    per_prompt: int
    text_chars: int
    origins: frozenset[str] = DISCORD_CDN_ORIGINS


def attachment_limits(settings: Settings) -> AttachmentLimits:
    """The settings' caps; files come from Discord's CDN or from where DISCORD_API_BASE_URL points (a
    proxy of Discord's, or the stand-in in tests, which serves them on its own port)."""
    origins = set(DISCORD_CDN_ORIGINS)
    if settings.discord_api_base_url:
        origins.add(str(URL(settings.discord_api_base_url).origin()))
    return AttachmentLimits(
        max_bytes=settings.attachment_max_bytes,
        per_message=settings.attachments_per_message,
        per_prompt=settings.attachments_per_prompt,
        text_chars=settings.attachment_text_max_chars,
        origins=frozenset(origins),
    )


class Skipped(Exception):
    """An attachment that is not read; the message says why, for the model's note."""


class OverBudget(Skipped):
    """An image the reply has no pixels left for: a later reply may read it, so it is not kept."""


class PixelBudget:
    """The pixels a reply may still decode (used by one decode at a time)."""

    def __init__(self, pixels: int) -> None:
        self.left = pixels

    def take(self, pixels: int) -> None:
        if pixels > self.left:
            raise OverBudget("too large together with the other images of this reply")
        self.left -= pixels


class PreparedCache:
    """The parts prepared for attachments, by attachment id, least recently used dropped first past
    `max_entries` or `max_bytes` (an attachment's file never changes, so its parts stay right)."""

    def __init__(self, max_entries: int = PREPARED_MAX_ENTRIES, max_bytes: int = PREPARED_MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.entries: OrderedDict[int, tuple[list[TurnPart], int]] = OrderedDict()
        self.bytes = 0

    def get(self, key: int) -> list[TurnPart] | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        self.entries.move_to_end(key)
        return entry[0]

    def put(self, key: int, parts: list[TurnPart]) -> None:
        weight = sum(len(p.data) if isinstance(p, InlineData) else len(p) for p in parts)
        if key in self.entries or weight > self.max_bytes:
            return
        self.entries[key] = (parts, weight)
        self.bytes += weight
        while len(self.entries) > self.max_entries or self.bytes > self.max_bytes:
            _, (_, dropped) = self.entries.popitem(last=False)
            self.bytes -= dropped


def kind_of(filename: str, content_type: str | None) -> str | None:
    """ "image", "text" or None (not read): by the declared type, else by the file name's suffix."""
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared in IMAGE_TYPES:
        return "image"
    if declared.startswith("text/") or declared in TEXT_TYPES:
        return "text"
    if declared and declared != "application/octet-stream":
        return None  # a type the model is not sent: HEIC, SVG, PDF, audio ...
    suffix = PurePosixPath(filename.lower()).suffix
    if suffix in IMAGE_SUFFIXES:
        return "image"
    return "text" if suffix in TEXT_SUFFIXES else None


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / 1024 / 1024:.1f} MB"
    return f"{math.ceil(count / 1024)} kB" if count >= 1024 else f"{count} B"


def fit_image(
    data: bytes,
    *,
    max_side: int = IMAGE_MAX_SIDE,
    max_bytes: int = IMAGE_MAX_BYTES,
    budget: PixelBudget | None = None,
) -> InlineData:
    """The image as a model may read it: as it is when small enough and of a type models read, else its
    (first) frame scaled down and re-encoded (PNG for drawings, a GIF's frame and transparency, JPEG for
    photos or when PNG weighs too much), shrinking further until it weighs at most `max_bytes`.
    What it decodes is judged from the header first: at most IMAGE_MAX_PIXELS, and taken from `budget`.
    Raises Skipped for anything else."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format not in (*IMAGE_MIME, "GIF"):
                raise Skipped(f"unsupported image type {image.format or 'unknown'}")
            mime = IMAGE_MIME.get(image.format or "")
            small = max(image.size) <= max_side and len(data) <= max_bytes
            _check_pixels(image, max_side, budget)
            if mime is not None and small:
                image.load()  # a truncated or corrupt file fails here rather than at the model
                return InlineData(mime, data)
            lossless = image.format in ("PNG", "GIF")
            image.seek(0)  # a GIF's (or an animated WebP's) first frame
            image.thumbnail((max_side, max_side))  # decodes; the full-size pixels go once it is scaled
            frame = ImageOps.exif_transpose(image)
    except Skipped:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise Skipped("not a readable image") from exc
    side = max_side
    while side >= IMAGE_MIN_SIDE:
        frame.thumbnail((side, side))
        for encoded in _encodings(frame, lossless):
            if len(encoded.data) <= max_bytes:
                return encoded
        side = int(side * 0.7)
    raise Skipped("too large")


def _check_pixels(image: Image.Image, max_side: int, budget: PixelBudget | None) -> None:
    """Refuse, before decoding, an image of more than IMAGE_MAX_PIXELS or than `budget` has left. A JPEG is
    first set to decode at the smallest of 1/2, 1/4 or 1/8 of its size that still covers `max_side`."""
    width, height = image.size
    scale = max_side / max(width, height)
    if scale < 1:
        image.draft(None, (max(1, int(width * scale)), max(1, int(height * scale))))
    pixels = image.width * image.height
    if pixels > IMAGE_MAX_PIXELS:
        raise Skipped(f"too large ({width:,} x {height:,} pixels)")
    if budget is not None:
        budget.take(pixels)


def _encodings(frame: Image.Image, lossless: bool) -> Iterator[InlineData]:
    """The frame as PNG (when it was lossless or has transparency), then as JPEG (transparency on white)."""
    transparent = frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info
    if lossless or transparent:
        out = io.BytesIO()
        frame.convert("RGBA" if transparent else "RGB").save(out, "PNG", optimize=True)
        yield InlineData("image/png", out.getvalue())
    flat = frame.convert("RGBA")
    background = Image.new("RGB", flat.size, "white")
    background.paste(flat, mask=flat.getchannel("A"))
    out = io.BytesIO()
    background.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
    yield InlineData("image/jpeg", out.getvalue())


# A line of a file's text that begins like its closing line, in any case or spacing: escaped, so that
# even without the boundary (see framed()) it does not read as the end of the file.
_CLOSING_LOOKALIKE = re.compile(r"^([ \t]*)(?=\[[ \t]*end\b)", re.IGNORECASE | re.MULTILINE)


def read_text(data: bytes, max_chars: int) -> str:
    """A text file's content as UTF-8 (undecodable bytes replaced), cleaned as message text is (no control,
    zero-width or bidirectional characters), a line that begins like a closing line ("[end of ...") escaped
    with a backslash, and cut at `max_chars` with a note. Raises Skipped for a file that is binary whatever
    its name says."""
    if b"\x00" in data[:8192]:
        raise Skipped("not a text file")
    decoded = data.decode("utf-8-sig", errors="replace")
    lines = clean(decoded, len(decoded)).splitlines()  # any line break (\r, U+0085 ...) becomes \n
    text = _CLOSING_LOOKALIKE.sub(r"\1\\", "\n".join(lines))
    if len(text) > max_chars:
        return f"{text[:max_chars]}\n[... cut: the file has {len(text):,} characters; the first {max_chars:,} are shown]"
    return text


def framed(name: str, text: str) -> str:
    """A file's text between an opening and a closing line that share a random boundary the text does not
    contain: written before the boundary was drawn, no line of the file can pass for its end."""
    boundary = secrets.token_hex(4)
    while boundary in text:
        boundary = secrets.token_hex(4)
    return f"[file {name} {boundary}]\n{text}\n[end of file {name} {boundary}]"


def checked_url(url: str, origins: frozenset[str]) -> URL:
    """`url` parsed, when its origin (scheme, host and port) is one of `origins`; else Skipped."""
    try:
        parsed = URL(url)
        allowed = parsed.is_absolute() and str(parsed.origin()) in origins
    except (ValueError, TypeError):
        allowed = False
    if not allowed:
        log.info("refused to download an attachment from %r", url[:200])
        raise Skipped("not on Discord's attachment servers")
    return parsed


async def download(session: aiohttp.ClientSession, url: str, limits: AttachmentLimits) -> bytes:
    """The body at `url`, only from one of `limits.origins` and without following redirects, read in chunks
    and given up as soon as it passes `limits.max_bytes` (the declared size may lie), within
    DOWNLOAD_TIMEOUT_SECONDS."""
    checked = checked_url(url, limits.origins)
    max_bytes = limits.max_bytes
    timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_SECONDS)
    try:
        async with session.get(checked, timeout=timeout, allow_redirects=False) as response:
            if response.status != 200:
                raise Skipped(f"could not be downloaded (HTTP {response.status})")
            if response.content_length is not None and response.content_length > max_bytes:
                raise Skipped("too large")
            body = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > max_bytes:
                    raise Skipped("too large")
            return bytes(body)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.info("could not download an attachment: %s", type(exc).__name__)
        raise Skipped("could not be downloaded") from exc


class AttachmentReader:
    """Turns the attachments of a conversation into parts for the model, within the limits; one lives as
    long as the bot, keeping what it prepared for later replies."""

    def __init__(self, limits: AttachmentLimits) -> None:
        self.limits = limits
        self.prepared = PreparedCache()

    async def read(self, messages: Sequence[tuple[K, Sequence[AttachmentLike]]]) -> dict[K, list[TurnPart]]:
        """Parts per message key, for messages given in order of priority (the one being answered first,
        then the newest): at most `per_message` attachments each and `per_prompt` in all are read, the
        rest get a note. Messages without attachments are left out. Downloads run together; images are
        then decoded one by one in that order, within the reply's REPLY_MAX_PIXELS."""
        limits = self.limits
        chosen: list[tuple[K, int, AttachmentLike]] = []
        parts: dict[tuple[K, int], list[TurnPart]] = {}
        for key, attachments in messages:
            for index, attachment in enumerate(attachments):
                if not (limits.per_message and limits.per_prompt):
                    reason = "attachments are not read here"
                elif index >= limits.per_message:
                    reason = f"at most {limits.per_message} attachments of a message are read"
                elif len(chosen) >= limits.per_prompt:
                    reason = f"at most {limits.per_prompt} attachments are read for a reply"
                else:
                    chosen.append((key, index, attachment))
                    continue
                parts[(key, index)] = [note(attachment, reason)]
        if chosen:
            async with aiohttp.ClientSession() as session:
                fetched = await asyncio.gather(*(self.fetch(session, a) for _, _, a in chosen))
            budget = PixelBudget(REPLY_MAX_PIXELS)
            for (key, index, attachment), got in zip(chosen, fetched, strict=True):
                parts[(key, index)] = (
                    await self.prepare(attachment, got, budget) if isinstance(got, bytes) else got
                )
        out: dict[K, list[TurnPart]] = {}
        for key, attachments in messages:
            for index in range(len(attachments)):
                out.setdefault(key, []).extend(parts[(key, index)])
        return out

    async def fetch(
        self, session: aiohttp.ClientSession, attachment: AttachmentLike
    ) -> list[TurnPart] | bytes:
        """An attachment's parts kept from an earlier reply, a note saying why it is not read, or else
        its downloaded bytes."""
        kept = self.prepared.get(attachment.id)
        if kept is not None:
            return kept
        try:
            if kind_of(attachment.filename, attachment.content_type) is None:
                raise Skipped(f"unsupported type {attachment.content_type or 'unknown'}")
            if attachment.size > self.limits.max_bytes:
                raise Skipped(f"too large ({_size(attachment.size)}; at most {_size(self.limits.max_bytes)})")
            return await download(session, attachment.url, self.limits)
        except Skipped as skipped:
            return [note(attachment, str(skipped))]

    async def prepare(self, attachment: AttachmentLike, data: bytes, budget: PixelBudget) -> list[TurnPart]:
        """A downloaded attachment's parts: a label and the image, the file's text, or a note saying why
        not; kept for later replies unless the reply's pixels ran out first."""
        name = display_name(attachment)
        loop = asyncio.get_running_loop()
        try:
            if kind_of(attachment.filename, attachment.content_type) == "image":
                image = await loop.run_in_executor(_PREPARER, partial(fit_image, data, budget=budget))
                got: list[TurnPart] = [f"[image {name}]", image]
            else:
                text = await loop.run_in_executor(_PREPARER, read_text, data, self.limits.text_chars)
                got = [framed(name, text)]
        except OverBudget as skipped:
            return [note(attachment, str(skipped))]
        except Skipped as skipped:
            got = [note(attachment, str(skipped))]
        self.prepared.put(attachment.id, got)
        return got


def display_name(attachment: AttachmentLike) -> str:
    """The file name as the model sees it: cleaned like message text, without brackets that could end a
    note early."""
    name = clean(attachment.filename, MAX_NAME_CHARS).replace("[", "(").replace("]", ")")
    return name or "attachment"


def note(attachment: AttachmentLike, reason: str) -> str:
    """What the model reads in place of an attachment that was not read."""
    kind = "image" if kind_of(attachment.filename, attachment.content_type) == "image" else "file"
    return f"[{kind} {display_name(attachment)} skipped: {reason}]"
