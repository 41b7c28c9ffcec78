"""Paging through a listing: pages that fit one Discord message with every entry whole, and the
First/Previous/Next/Last view that reads the listing again at each press."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import discord

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.ui.owned import OwnedView

T = TypeVar("T")

PAGE_SIZE = 10
PAGE_CHARS = 1_800  # a page's facts, leaving room in Discord's 2,000 characters for heading and footer
PAGER_TIMEOUT_SECONDS = 300.0
MAX_LISTED = 1_000  # facts or episodes read for one listing; a person has far fewer facts


def paginate(
    items: Sequence[T], entry: Callable[[T], str], *, per_page: int = PAGE_SIZE, chars: int = PAGE_CHARS
) -> list[list[T]]:
    """Items in pages of at most `per_page` whose entries fit in one message, every entry whole."""
    pages: list[list[T]] = [[]]
    size = 0
    for item in items:
        length = len(entry(item)) + 1
        if pages[-1] and (len(pages[-1]) >= per_page or size + length > chars):
            pages.append([])
            size = 0
        pages[-1].append(item)
        size += length
    return pages


def format_page(heading: str, entries: list[str], page: int, pages: int, total: str) -> str:
    """One page (page is 0-based) with a 'Page 1/3 · 27 facts' footer; `total` counts what is listed."""
    return "\n".join([f"**{heading}**", *entries, "", f"Page {page + 1}/{pages} · {total}"])


class Pager(OwnedView, Generic[T]):
    """First/Previous/Next/Last through a listing that each press reads again (so what was forgotten
    meanwhile disappears), on pages that fit one message with every entry whole. Subclasses say what is
    listed (`items`), how (`entry`) and what else the page offers (`extras`); `name` prefixes the
    buttons' custom ids ("facts:next")."""

    noun = "fact"
    per_page = PAGE_SIZE

    def __init__(
        self,
        origin: discord.Interaction,
        *,
        name: str,
        heading: str,
        empty: str,
        timeout: float | None = None,
    ) -> None:
        # Read at call time (not as a default value) so operators and tests can change the module constant.
        super().__init__(origin, timeout=timeout if timeout is not None else PAGER_TIMEOUT_SECONDS)
        self.heading = heading
        self.empty = empty
        self.page = 0
        self.pages = 1
        self.shown: list[T] = []
        self._extras: list[discord.ui.Item[Any]] = []
        for button, action in (
            (self.first_page, "first"),
            (self.previous_page, "prev"),
            (self.next_page, "next"),
            (self.last_page, "last"),
        ):
            button.custom_id = f"{name}:{action}"

    async def items(self) -> list[T]:
        """Everything listed, in order (read again at each press)."""
        raise NotImplementedError

    def entry(self, item: T) -> str:
        raise NotImplementedError

    def extras(self) -> list[discord.ui.Item[Any]]:
        """Controls for the page shown besides the page buttons (none by default)."""
        return []

    async def render(self) -> str:
        """The current page's text; clamps the page and sets which controls are usable."""
        items = await self.items()
        pages = paginate(items, self.entry, per_page=self.per_page)
        self.pages = len(pages)
        self.page = max(0, min(self.page, self.pages - 1))
        self.shown = pages[self.page]
        for button, disabled in (
            (self.first_page, self.page == 0),
            (self.previous_page, self.page == 0),
            (self.next_page, self.page >= self.pages - 1),
            (self.last_page, self.page >= self.pages - 1),
        ):
            button.disabled = disabled
        for item in self._extras:
            self.remove_item(item)
        self._extras = self.extras()
        for item in self._extras:
            self.add_item(item)
        if not items:
            return self.empty
        entries = [self.entry(item) for item in self.shown]
        return format_page(self.heading, entries, self.page, self.pages, plural(len(items), self.noun))

    async def send(self) -> None:
        """Answer the command with the first page; buttons only when there is more than one page."""
        await answer(self.origin, self._first_page())

    async def _first_page(self) -> Reply:
        content = await self.render()
        if self.pages > 1 or self._extras:
            if self.pages == 1:  # nothing to page through: only the extras
                for button in (self.first_page, self.previous_page, self.next_page, self.last_page):
                    self.remove_item(button)
            return Reply(content, self)
        self.stop()
        return Reply(content)

    async def _turn(self, interaction: discord.Interaction, page: int) -> None:
        """Show `page` (0-based); `render` clamps it, so a page past the end is the last one."""
        self.page = page

        async def show() -> Reply:
            return Reply(await self.render(), self)

        await answer(interaction, show(), update=True)

    @discord.ui.button(label="First", style=discord.ButtonStyle.secondary, custom_id="facts:first")
    async def first_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, 0)

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary, custom_id="facts:prev")
    async def previous_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, self.page - 1)

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary, custom_id="facts:next")
    async def next_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, self.page + 1)

    @discord.ui.button(label="Last", style=discord.ButtonStyle.secondary, custom_id="facts:last")
    async def last_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, MAX_LISTED)
