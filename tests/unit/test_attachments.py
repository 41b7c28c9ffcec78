"""Making attachments fit for the model: which files are read, images scaled and re-encoded, text cut."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from bot.config import Settings
from bot.discord_bot.attachments import (
    IMAGE_MAX_PIXELS,
    IMAGE_MAX_SIDE,
    AttachmentLimits,
    AttachmentReader,
    OverBudget,
    PixelBudget,
    PreparedCache,
    Skipped,
    attachment_limits,
    checked_url,
    fit_image,
    kind_of,
    read_text,
)
from bot.memory.model_ports import InlineData


def test_images_and_text_files_are_read_by_type_else_by_name_and_nothing_else_is() -> None:
    assert kind_of("a.bin", "image/webp") == "image"
    assert kind_of("a.heic", "image/heic") is None and kind_of("a.svg", "image/svg+xml") is None
    assert kind_of("main.rs", None) == "text" and kind_of("notes", "text/plain; charset=utf-8") == "text"
    assert kind_of("photo.JPG", "application/octet-stream") == "image"
    assert kind_of("report.pdf", "application/pdf") is None and kind_of("song.mp3", None) is None
    assert kind_of("data.json", "application/json") == "text"


def test_a_transparent_image_keeps_its_transparency_and_a_heavy_photo_shrinks_until_it_fits() -> None:
    logo = Image.new("RGBA", (2000, 1000), (255, 0, 0, 0))
    out = io.BytesIO()
    logo.save(out, "PNG")
    fitted = fit_image(out.getvalue(), max_side=500)
    with Image.open(io.BytesIO(fitted.data)) as image:
        assert fitted.mime_type == "image/png" and image.size == (500, 250) and image.mode == "RGBA"
    noise = Image.frombytes("RGB", (800, 800), random.Random(1).randbytes(800 * 800 * 3))
    out = io.BytesIO()
    noise.save(out, "PNG")
    fitted = fit_image(out.getvalue(), max_side=800, max_bytes=60_000)
    assert fitted.mime_type == "image/jpeg" and len(fitted.data) <= 60_000
    with Image.open(io.BytesIO(fitted.data)) as image:
        assert max(image.size) < 800  # JPEG at full size was still too heavy


def test_an_image_of_too_many_pixels_is_skipped_before_it_is_decoded() -> None:
    side = int(IMAGE_MAX_PIXELS**0.5) + 100
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, "PNG")
    with pytest.raises(Skipped, match="too large"):
        fit_image(out.getvalue())
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "TIFF")
    with pytest.raises(Skipped, match="unsupported image type TIFF"):
        fit_image(out.getvalue())


def test_a_jpeg_past_the_pixel_cap_is_decoded_at_a_fraction_of_its_size_and_each_reply_has_a_pixel_budget() -> (
    None
):
    out = io.BytesIO()
    Image.new("L", (6400, 4800), 128).save(out, "JPEG")  # 30.7 million pixels, decoded at 1/4
    budget = PixelBudget(1600 * 1200 + 64)
    fitted = fit_image(out.getvalue(), budget=budget)
    with Image.open(io.BytesIO(fitted.data)) as image:
        assert image.size == (IMAGE_MAX_SIDE, IMAGE_MAX_SIDE * 3 // 4)
    assert budget.left == 64
    small = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(small, "PNG")
    fit_image(small.getvalue(), budget=budget)
    with pytest.raises(OverBudget, match="too large together with the other images of this reply"):
        fit_image(small.getvalue(), budget=budget)
    out = io.BytesIO()
    Image.new("L", (6400, 4800)).save(out, "PNG")  # a PNG has no smaller decode
    with pytest.raises(Skipped, match=r"too large \(6,400 x 4,800 pixels\)"):
        fit_image(out.getvalue())


def test_prepared_parts_are_kept_by_attachment_id_within_a_count_and_a_weight() -> None:
    cache = PreparedCache(max_entries=2, max_bytes=100)
    cache.put(1, ["[file a.txt]\nhello\n[end of file a.txt]"])
    cache.put(2, ["[image b.png]", InlineData("image/png", bytes(40))])
    assert cache.get(1) is not None  # 1 is now the most recently used
    cache.put(3, ["x" * 10])
    assert cache.get(2) is None and cache.get(1) is not None and cache.get(3) == ["x" * 10]
    cache.put(4, [InlineData("image/png", bytes(91))])  # past the weight: the oldest go
    assert cache.get(1) is None and cache.get(3) is None and cache.get(4) is not None
    cache.put(5, [InlineData("image/png", bytes(101))])  # heavier than the whole cache: not kept
    assert cache.get(5) is None and cache.get(4) is not None


def test_files_are_downloaded_only_from_discords_attachment_servers_or_the_configured_api_host() -> None:
    discord_only = attachment_limits(Settings()).origins
    for url in (
        "https://cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=3&",
        "https://media.discordapp.net/attachments/1/2/a.png",
        "https://CDN.discordapp.com:443/attachments/1/2/a.png",
    ):
        assert checked_url(url, discord_only).host in ("cdn.discordapp.com", "media.discordapp.net")
    for url in (
        "http://cdn.discordapp.com/attachments/1/2/a.png",  # https only
        "https://cdn.discordapp.com:8443/a.png",
        "https://cdn.discordapp.com@169.254.169.254/latest/meta-data/",
        "https://cdn.discordapp.com.example.org/a.png",
        "http://127.0.0.1:8080/attachments/1/2/a.png",
        "file:///etc/passwd",
        "/attachments/1/2/a.png",
        "",
    ):
        with pytest.raises(Skipped, match="not on Discord's attachment servers"):
            checked_url(url, discord_only)
    standin = attachment_limits(Settings(discord_api_base_url="http://127.0.0.1:8080/api/v10")).origins
    assert checked_url("http://127.0.0.1:8080/attachments/1/2/a.png", standin).port == 8080
    with pytest.raises(Skipped):
        checked_url("http://127.0.0.1:8081/latest/meta-data/iam", standin)


def test_text_is_decoded_leniently_cut_with_a_note_and_binary_is_refused() -> None:
    assert read_text("\ufeffnaïve café".encode(), 100) == "naïve café"
    assert read_text(b"caf\xe9", 100) == "caf\ufffd"
    assert (
        read_text(b"x" * 50, 10)
        == "x" * 10 + "\n[... cut: the file has 50 characters; the first 10 are shown]"
    )
    with pytest.raises(Skipped, match="not a text file"):
        read_text(b"PK\x03\x04\x00\x00", 100)
    # Cleaned as message text is (U+2028 goes too); whatever else breaks a line is a newline; no line
    # begins like an end.
    assert read_text("a\u202eb\u200b\r[end of x]\r\n  [ END ]\x85c\u2028[endless\n".encode(), 100) == (
        "ab\n\\[end of x]\n  \\[ END ]\nc[endless"
    )


class _File:
    def __init__(self, filename: str, content_type: str | None, size: int = 10) -> None:
        self.id, self.url, self.filename, self.content_type, self.size = (
            1,
            "http://127.0.0.1:9/none",
            filename,
            content_type,
            size,
        )


async def test_with_a_cap_of_zero_nothing_is_downloaded_and_the_model_is_told() -> None:
    reader = AttachmentReader(AttachmentLimits(max_bytes=1000, per_message=0, per_prompt=8, text_chars=100))
    parts = await reader.read([(1, [_File("cat.png", "image/png"), _File("a.md", None)])])
    assert parts == {
        1: [
            "[image cat.png skipped: attachments are not read here]",
            "[file a.md skipped: attachments are not read here]",
        ]
    }
    # A name cannot close the note early or add lines.
    reader = AttachmentReader(AttachmentLimits(max_bytes=1, per_message=4, per_prompt=8, text_chars=100))
    [[note]] = (await reader.read([(1, [_File("x].png\u200b", "image/png", size=5)])])).values()
    assert note == "[image x).png skipped: too large (5 B; at most 1 B)]"
