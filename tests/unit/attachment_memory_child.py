"""Reads image bombs for one reply and prints this process's peak memory (for test_attachment_memory).

Usage: python -m tests.unit.attachment_memory_child FOLDER
FOLDER holds bomb.png and cap.png; four copies of bomb.png are attached to the message being answered and
four of cap.png to an earlier one, served by a local server in this process. Prints one line of JSON: the
peak resident memory (VmHWM) in MB before and after the reply, and how many images it sent the model.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from aiohttp import web

from bot.discord_bot.attachments import AttachmentLimits, AttachmentReader
from bot.memory.model_ports import InlineData


def peak_mb() -> float:
    line = next(s for s in Path("/proc/self/status").read_text().splitlines() if s.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


async def main(folder: Path) -> None:
    files = {kind: (folder / f"{kind}.png").read_bytes() for kind in ("bomb", "cap")}
    app = web.Application()
    app.router.add_get("/{kind}/{id}", lambda r: web.Response(body=files[r.match_info["kind"]]))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    before = peak_mb()
    attachments = {
        kind: [
            SimpleNamespace(
                id=i,
                url=f"{base}/{kind}/{i}",
                filename=f"{i}.png",
                size=len(files[kind]),
                content_type="image/png",
            )
            for i in ids
        ]
        for kind, ids in (("bomb", range(4)), ("cap", range(4, 8)))
    }
    limits = AttachmentLimits(
        max_bytes=10**7, per_message=4, per_prompt=8, text_chars=100, origins=frozenset({base})
    )
    reader = AttachmentReader(limits)
    parts = await reader.read([(2, attachments["bomb"]), (1, attachments["cap"])])
    images = sum(isinstance(p, InlineData) for got in parts.values() for p in got)
    sys.stdout.write(json.dumps({"before_mb": before, "peak_mb": peak_mb(), "images": images}) + "\n")
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
