"""Image bombs cost a bounded amount of memory: measured in a fresh process, whose peak is its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
PEAK_MB = 450  # one 24-million-pixel RGBA image scaled at a time: ~285 MB measured; 3-4 GB all at once


def test_a_reply_reading_eight_image_bombs_stays_within_a_few_hundred_mb(tmp_path: Path) -> None:
    # Blank PNGs of a few hundred kB: 50 million RGB pixels (passed the former cap), and 24 million RGBA
    # pixels, just under the cap and the costliest to scale.
    Image.new("RGB", (7070, 7070), "white").save(tmp_path / "bomb.png")
    Image.new("RGBA", (4898, 4898), "white").save(tmp_path / "cap.png")
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.attachment_memory_child", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    figures = json.loads(done.stdout)
    assert figures["before_mb"] < 150
    assert figures["peak_mb"] < PEAK_MB, figures
    # The 50-million-pixel bombs are refused from their header; the reply's pixels allow two at the cap.
    assert figures["images"] == 2
