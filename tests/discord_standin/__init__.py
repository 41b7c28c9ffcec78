"""A local stand-in for Discord (gateway + REST) that the real discord.py client talks to in tests.

Usage::

    async with DiscordStandIn() as standin:
        guild = standin.add_guild("test")
        alice = standin.add_user("alice")
        async with run_bot(bot, standin):
            await standin.send_message(guild.channels["general"], alice, "hi", mention_bot=True)
            reply = await standin.wait_for_bot_message(guild.channels["general"])
"""

from tests.discord_standin.model import Guild, Member
from tests.discord_standin.records import InteractionRecord, RecordedRequest, StoredMessage
from tests.discord_standin.runner import patch_discord_urls, run_bot
from tests.discord_standin.server import DiscordStandIn

__all__ = [
    "DiscordStandIn",
    "Guild",
    "InteractionRecord",
    "Member",
    "RecordedRequest",
    "StoredMessage",
    "patch_discord_urls",
    "run_bot",
]
