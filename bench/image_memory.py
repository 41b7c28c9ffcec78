"""Peak memory of replies that read image bombs: eight blank PNGs of millions of pixels in a few hundred kB.

Four are attached to a member's message and four to the message that mentions the bot, the case found
through the wire with 7,070 x 7,070 PNGs; then the same with the largest square image the per-image
pixel cap lets through, in RGBA (the worst the caps allow). For each, a fresh Python process (so the
figure is its own, not the parent's) imports the attachment reader, reads the eight as the chat cog
does for a reply (the message being answered first, then the history), then again for the next reply
in the channel, where all eight are history; after each step it reports its peak resident memory
(VmHWM of /proc/self/status) and its resident memory (VmRSS). The files are served by a local HTTP
server in this (parent) process standing in for Discord's CDN, which counts the downloads.

    python -m bench.image_memory            # ~10 s (~30 s on code without the pixel caps)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import time
from asyncio.subprocess import PIPE
from collections import Counter
from dataclasses import dataclass, replace
from math import isqrt
from pathlib import Path
from typing import Any

from aiohttp import web
from PIL import Image

from bench.common import ROOT, machine, table, write_json

BOMB_SIDE = 7070  # 50 million pixels: passed the old cap of 50 million
PER_MESSAGE = 4


def scenarios() -> list[tuple[str, int, str]]:
    """(name, side, mode): the bombs found through the wire, and the largest square the per-image cap
    lets through, in RGBA (the mode that costs most to scale)."""
    from bot.discord_bot.attachments import IMAGE_MAX_PIXELS

    return [
        ("7,070 px RGB bombs", BOMB_SIDE, "RGB"),
        ("at the pixel cap, RGBA", isqrt(IMAGE_MAX_PIXELS), "RGBA"),
    ]


def blank(side: int, mode: str) -> bytes:
    """A blank square PNG: millions of pixels in a few hundred kB."""
    out = io.BytesIO()
    Image.new(mode, (side, side), "white").save(out, "PNG")
    return out.getvalue()


def status_mb(field: str) -> float:
    """A VmHWM or VmRSS figure of this process, in MB (10^6 bytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError(f"no {field} in /proc/self/status")


@dataclass(frozen=True)
class File:
    """An attachment as the reader sees it (discord.Attachment's fields it uses)."""

    id: int
    url: str
    filename: str
    size: int
    content_type: str | None = "image/png"


async def child(base: str, size: int) -> None:
    """The measured process: one line of JSON per step, with VmHWM, VmRSS, seconds and images sent."""
    from bot.config import Settings
    from bot.discord_bot.attachments import AttachmentReader, attachment_limits
    from bot.memory.model_ports import InlineData

    def report(step: str, started: float, images: int = 0) -> None:
        figures = {"step": step, "images": images, "hwm_mb": status_mb("VmHWM"), "rss_mb": status_mb("VmRSS")}
        print(json.dumps({**figures, "seconds": round(time.perf_counter() - started, 2)}), flush=True)

    report("imported", time.perf_counter())
    settings = replace(Settings(), discord_api_base_url=f"{base}/api/v10")
    reader = AttachmentReader(attachment_limits(settings))
    for step in ("first reply", "next reply"):  # in the next, the bot's answer and the new question have none
        history, trigger = (
            [File(i, f"{base}/{i}/image{i}.png?step={step}", f"image{i}.png", size) for i in ids]
            for ids in (range(1, PER_MESSAGE + 1), range(PER_MESSAGE + 1, 2 * PER_MESSAGE + 1))
        )
        started = time.perf_counter()
        parts = await reader.read([(2, trigger), (1, history)])
        report(step, started, sum(isinstance(p, InlineData) for got in parts.values() for p in got))


async def measure(data: bytes) -> list[dict[str, Any]]:
    """Serve `data` as every file, run the child, and return its steps with the downloads each made."""
    downloads: Counter[str] = Counter()

    async def serve(request: web.Request) -> web.Response:
        downloads[request.query.get("step", "")] += 1
        return web.Response(body=data, content_type="image/png")

    app = web.Application()
    app.router.add_get("/{id}/{name}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.image_memory", "--child", base, str(len(data)), cwd=ROOT, stdout=PIPE
        )
        assert process.stdout is not None
        steps = [json.loads(line) async for line in process.stdout]
        if await process.wait() != 0:
            raise RuntimeError("the child failed (see its output above)")
    finally:
        await runner.cleanup()
    return [{**step, "downloads": downloads[step["step"]]} for step in steps]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("BASE_URL", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        asyncio.run(child(args.child[0], int(args.child[1])))
        return
    results, rows = [], []
    for name, side, mode in scenarios():
        data = blank(side, mode)
        steps = asyncio.run(measure(data))
        results.append({"scenario": name, "side": side, "mode": mode, "png_bytes": len(data), "steps": steps})
        for s in steps:
            figures = (s["downloads"], s["images"], s["seconds"], round(s["hwm_mb"]), round(s["rss_mb"]))
            rows.append((f"{name} ({len(data) // 1000:,} kB)", s["step"], *figures))
    print("eight blank PNGs, 4 in a member's message + 4 in the message that mentions the bot\n")
    headers = (
        "images",
        "step",
        "downloads",
        "images sent",
        "seconds",
        "peak (VmHWM) MB",
        "resident after MB",
    )
    print(table(headers, rows))
    print(
        f"\nwrote {write_json('image_memory', {'benchmark': 'image_memory', 'machine': machine(), 'results': results})}"
    )


if __name__ == "__main__":
    main()
