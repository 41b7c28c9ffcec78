"""A local stand-in for Discord (gateway + REST) that the real discord.py client talks to in tests.

Usage::

    async with DiscordStandIn() as standin:
        guild = standin.add_guild("test")
        alice = standin.add_user("alice")
        async with run_bot(bot, standin):
            await standin.send_message(guild.channels["general"], alice, "hi", mention_bot=True)
            reply = await standin.wait_for_bot_message(guild.channels["general"])
"""

from standins.discord.cdn import Upload
from standins.discord.model import Guild, Member
from standins.discord.records import InteractionRecord, RecordedRequest, StoredMessage
from standins.discord.runner import patch_discord_urls, run_bot
from standins.discord.server import DiscordStandIn

__all__ = [
    "DiscordStandIn",
    "Guild",
    "InteractionRecord",
    "Member",
    "RecordedRequest",
    "StoredMessage",
    "Upload",
    "patch_discord_urls",
    "run_bot",
]
