"""The Discord stand-in against the real discord.py client: gateway, REST, messages and interactions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
import yarl
from discord import app_commands
from discord.ext import commands

from standins.discord import DiscordStandIn, Guild, run_bot
from standins.discord.model import SEND_MESSAGES, overwrite

pytestmark = pytest.mark.e2e

FRUITS = ["apple", "apricot", "banana", "blueberry", "cherry"]


class ConfirmView(discord.ui.View):
    """A button that edits the message it is on."""

    def __init__(self) -> None:
        super().__init__(timeout=30)

    @discord.ui.button(label="Confirm", custom_id="confirm", style=discord.ButtonStyle.primary)
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmView]) -> None:
        button.disabled = True
        await interaction.response.edit_message(content="confirmed", view=self)


class TinyCog(commands.Cog):
    """What the real bot does, in miniature."""

    def __init__(self, bot: commands.Bot) -> None:
        self.bot = bot
        self.seen: list[discord.Message] = []

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot:
            return
        self.seen.append(message)
        if message.content == "ping":
            await message.reply("pong", mention_author=False)

    @app_commands.command(name="hello", description="Say hello with a button.")
    async def hello(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message("hello!", view=ConfirmView(), ephemeral=True)

    @app_commands.command(name="fruit", description="Pick a fruit.")
    @app_commands.describe(name="The fruit")
    async def fruit(
        self, interaction: discord.Interaction, name: str, who: discord.User | None = None
    ) -> None:
        await interaction.response.defer(thinking=True)
        target = who.name if who else interaction.user.name
        await interaction.followup.send(f"{target} gets {name}")

    @fruit.autocomplete("name")
    async def fruit_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=f, value=f) for f in FRUITS if f.startswith(current)]


def bot_intents() -> discord.Intents:
    """Default intents plus the two privileged ones the real bot needs."""
    intents = discord.Intents.default()
    intents.message_content = True
    intents.members = True
    return intents


class TinyBot(commands.Bot):
    """Loads the cog and syncs commands globally in setup_hook, as the real bot does."""

    def __init__(self) -> None:
        super().__init__(command_prefix="!", intents=bot_intents(), help_command=None)
        self.cog = TinyCog(self)

    async def setup_hook(self) -> None:
        await self.add_cog(self.cog)
        self.tree.add_command(app_commands.ContextMenu(name="Quote this message", callback=quote))
        await self.tree.sync()


async def quote(interaction: discord.Interaction, message: discord.Message) -> None:
    """A message command: what discord.py read of the message it was run on."""
    where = "guild" if message.guild is not None else "dm"
    await interaction.response.send_message(
        f"{message.author.name} in {where} #{message.channel.id}: {message.content}", ephemeral=True
    )


class World:
    """A started stand-in with one guild and two people, and a ready bot."""

    def __init__(self, standin: DiscordStandIn, guild: Guild, bot: TinyBot, cog: TinyCog) -> None:
        self.standin = standin
        self.guild = guild
        self.bot = bot
        self.cog = cog
        self.alice: dict[str, Any] = {}
        self.bob: dict[str, Any] = {}


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with DiscordStandIn() as standin:
        guild = standin.add_guild("test-guild")
        alice = standin.add_user("alice", admin_in=[guild.id])
        bob = standin.add_user("bob")
        bot = TinyBot()
        async with run_bot(bot, standin):
            w = World(standin, guild, bot, bot.cog)
            w.alice, w.bob = alice, bob
            yield w
        assert standin.errors == []


async def test_ready_and_cache(world: World) -> None:
    standin, guild, bot = world.standin, world.guild, world.bot
    await standin.wait_until_ready()
    assert bot.user is not None and bot.user.id == standin.bot_id
    assert bot.application_id == standin.application_id
    cached = bot.get_guild(guild.id)
    assert cached is not None and cached.name == "test-guild"
    assert cached.owner_id == guild.owner_id
    assert {c.name for c in cached.text_channels} == {"general", "random", "bot-log"}
    thread = cached.get_thread(guild.thread_id or 0)
    assert thread is not None and thread.parent_id == guild.channels["general"]
    alice = cached.get_member(int(world.alice["id"]))
    assert alice is not None and alice.guild_permissions.manage_guild
    bob = cached.get_member(int(world.bob["id"]))
    assert bob is not None and not bob.guild_permissions.manage_guild
    assert cached.me.guild_permissions.send_messages
    identify = standin.identify_payloads[-1]
    assert identify["intents"] & discord.Intents(message_content=True, members=True).value


async def test_ping_pong_reply(world: World) -> None:
    standin, channel_id = world.standin, world.guild.channels["general"]
    ping = await standin.send_message(channel_id, world.alice, "ping")
    pong = await standin.wait_for_bot_message(channel_id, lambda m: m["content"] == "pong")
    assert pong["message_reference"]["message_id"] == ping["id"]
    assert pong["referenced_message"]["id"] == ping["id"]
    assert pong["type"] == 19
    post = await standin.wait_for_request(lambda r: r.method == "POST" and r.path.endswith("/messages"))
    assert post.json["allowed_mentions"]["replied_user"] is False
    assert pong["mentions"] == []  # mention_author=False is honoured
    seen = world.cog.seen[-1]
    assert seen.content == "ping" and seen.author.id == int(world.alice["id"])
    assert isinstance(seen.author, discord.Member)


async def test_thread_dm_history_and_edits(world: World) -> None:
    standin, guild, bot = world.standin, world.guild, world.bot
    await standin.send_message(guild.thread_id or 0, world.bob, "ping")
    pong = await standin.wait_for_bot_message(guild.thread_id or 0)
    assert pong["content"] == "pong"
    assert isinstance(world.cog.seen[-1].channel, discord.Thread)

    dm = await standin.send_dm(world.bob, "ping")
    await standin.wait_for_bot_message(int(dm["channel_id"]))
    assert isinstance(world.cog.seen[-1].channel, discord.DMChannel)
    assert world.cog.seen[-1].guild is None

    channel = bot.get_channel(guild.channels["random"])
    assert isinstance(channel, discord.TextChannel)
    first = await standin.send_message(channel.id, world.alice, "one")
    await standin.send_message(channel.id, world.alice, "two", reply_to=int(first["id"]), mention_bot=True)
    history = [m.content async for m in channel.history(limit=10)]
    assert history == [f"<@{standin.bot_id}> two", "one"]
    oldest = [m.content async for m in channel.history(limit=10, oldest_first=True)]
    assert oldest == ["one", f"<@{standin.bot_id}> two"]
    assert world.cog.seen[-1].reference is not None
    assert bot.user in world.cog.seen[-1].mentions

    edited: asyncio.Future[discord.Message] = asyncio.get_running_loop().create_future()
    deleted: asyncio.Future[discord.RawMessageDeleteEvent] = asyncio.get_running_loop().create_future()

    async def on_message_edit(before: discord.Message, after: discord.Message) -> None:
        if not edited.done():
            edited.set_result(after)

    async def on_raw_message_delete(payload: discord.RawMessageDeleteEvent) -> None:
        if not deleted.done():
            deleted.set_result(payload)

    bot.add_listener(on_message_edit)
    bot.add_listener(on_raw_message_delete)
    await standin.edit_message(channel.id, int(first["id"]), "one (edited)")
    assert (await asyncio.wait_for(edited, 5)).content == "one (edited)"
    await standin.delete_message(channel.id, int(first["id"]))
    assert (await asyncio.wait_for(deleted, 5)).message_id == int(first["id"])

    with pytest.raises(discord.NotFound) as missing:
        await channel.fetch_message(int(first["id"]))
    assert missing.value.code == 10008

    sent = await channel.send("from the bot")
    await sent.edit(content="edited by the bot")
    assert standin.bot_messages(channel.id)[-1]["content"] == "edited by the bot"
    await sent.delete()
    assert all(m["id"] != str(sent.id) for m in standin.bot_messages(channel.id))


async def test_commands_synced_and_hello_button(world: World) -> None:
    standin, guild = world.standin, world.guild
    sync = await standin.wait_for_request(lambda r: r.method == "PUT" and r.path.endswith("/commands"))
    assert sync.path == f"/applications/{standin.application_id}/commands"
    assert {c["name"] for c in standin.synced_commands[None]} == {"hello", "fruit", "Quote this message"}

    inter = await standin.invoke_command(world.alice, "hello", guild_id=guild.id)
    callback = await inter.wait_response()
    assert callback["type"] == 4
    assert callback["data"]["flags"] & 64
    original = inter.responses[0]["message"]
    assert original["flags"] & 64
    assert standin.bot_messages(guild.channels["general"]) == []  # ephemeral: not in the channel

    click = await standin.click_button(world.alice, original, "confirm")
    update = await click.wait_response()
    assert update["type"] == 7
    assert update["data"]["content"] == "confirmed"
    current = standin.get_message(int(original["id"]))
    assert current is not None and current["content"] == "confirmed"
    assert current["components"][0]["components"][0]["disabled"] is True
    with pytest.raises(ValueError, match="disabled"):
        await standin.click_button(world.alice, current, "confirm")


async def test_defer_followup_and_user_option(world: World) -> None:
    standin, guild = world.standin, world.guild
    channel_id = guild.channels["random"]
    inter = await standin.invoke_command(
        world.alice, "fruit", channel_id=channel_id, options={"name": "cherry", "who": world.bob}
    )
    assert (await inter.wait_response())["type"] == 5
    followup = await inter.wait_for(lambda r: r["kind"] == "followup")
    assert followup["message"]["content"] == "bob gets cherry"
    # The first followup after a thinking defer replaces the loading message.
    assert followup["message"]["id"] == str(inter.original_message_id)
    assert not followup["message"]["flags"] & 128
    [posted] = standin.bot_messages(channel_id)
    assert posted["content"] == "bob gets cherry"


async def test_autocomplete(world: World) -> None:
    inter = await world.standin.autocomplete(
        world.bob, "fruit", focused_option="name", value="ap", guild_id=world.guild.id
    )
    body = await inter.wait_response()
    assert body["type"] == 8
    assert [c["value"] for c in body["data"]["choices"]] == ["apple", "apricot"]


async def test_unknown_route_and_failure_injection(world: World) -> None:
    standin, bot = world.standin, world.bot
    with pytest.raises(discord.NotFound):
        await bot.http.request(discord.http.Route("GET", "/stickers/{sticker_id}", sticker_id=1))
    assert ("GET", "/stickers/1") in standin.unknown_routes

    channel = bot.get_channel(world.guild.channels["bot-log"])
    assert isinstance(channel, discord.TextChannel)
    standin.fail_route("POST", r"/channels/\d+/messages$", status=403)
    with pytest.raises(discord.Forbidden) as forbidden:
        await channel.send("nope")
    assert forbidden.value.code == 50013
    await channel.send("now it works")
    assert standin.bot_messages(channel.id)[-1]["content"] == "now it works"

    with pytest.raises(discord.HTTPException) as too_long:
        await channel.send("x" * 2001)
    assert too_long.value.code == 50035


async def test_resume_after_reconnect(world: World) -> None:
    standin, bot = world.standin, world.bot
    resumed = asyncio.Event()

    async def on_resumed() -> None:
        resumed.set()

    bot.add_listener(on_resumed)
    await standin.reconnect_bots()
    await asyncio.wait_for(resumed.wait(), 10)
    resumed.clear()
    await standin.disconnect_bots(code=4000)  # a dropped socket: the client resumes too
    await asyncio.wait_for(resumed.wait(), 10)
    assert len(standin.identify_payloads) == 1
    await standin.send_message(world.guild.channels["general"], world.alice, "ping")
    await standin.wait_for_bot_message(world.guild.channels["general"], lambda m: m["content"] == "pong")


async def test_privileged_intents_refused() -> None:
    async with DiscordStandIn(refuse_privileged_intents=True) as standin:
        standin.add_guild("g")
        bot = commands.Bot(command_prefix="!", intents=bot_intents())
        with pytest.raises(discord.PrivilegedIntentsRequired):
            async with run_bot(bot, standin, ready_timeout=10):
                pass
        assert bot.is_closed()
    assert discord.http.Route.BASE == "https://discord.com/api/v10"
    assert yarl.URL("wss://gateway.discord.gg/") == discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY


async def test_more_interaction_responses(world: World) -> None:
    """Edits of the original response, ephemeral followups, deletes and a modal, through the wire."""
    standin, bot = world.standin, world.bot
    submitted: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    class Note(discord.ui.Modal, title="Note"):
        text: discord.ui.TextInput[Note] = discord.ui.TextInput(label="Text", custom_id="text")

        async def on_submit(self, interaction: discord.Interaction) -> None:
            submitted.set_result(self.text.value)
            await interaction.response.send_message("noted", ephemeral=True)

    @bot.tree.command(name="steps", description="Several responses.")
    async def steps(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("step 1")
        await interaction.edit_original_response(content="step 2")
        extra = await interaction.followup.send("secret", ephemeral=True, wait=True)
        await extra.edit(content="secret 2")
        await interaction.delete_original_response()

    @bot.tree.command(name="note", description="Open a modal.")
    async def note(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(Note())

    inter = await standin.invoke_command(world.alice, "steps", guild_id=world.guild.id)
    await inter.wait_for(lambda r: r["kind"] == "delete_original")
    kinds = [r["kind"] for r in inter.responses]
    assert kinds == ["callback", "edit_original", "followup", "edit_message", "delete_original"]
    assert inter.responses[1]["message"]["content"] == "step 2"
    assert inter.responses[2]["message"]["flags"] & 64
    assert inter.responses[3]["message"]["content"] == "secret 2"
    assert standin.bot_messages(world.guild.channels["general"]) == []

    opened = await standin.invoke_command(world.bob, "note")  # in the DM with the bot
    assert (await opened.wait_response())["type"] == 9
    submit = await standin.submit_modal(world.bob, opened, {"text": "remember me"})
    assert (await submit.wait_response())["data"]["content"] == "noted"
    assert await asyncio.wait_for(submitted, 5) == "remember me"


async def test_late_guild_and_member_and_rate_limit(world: World) -> None:
    standin, bot = world.standin, world.bot
    joined: asyncio.Future[discord.Member] = asyncio.get_running_loop().create_future()

    async def on_member_join(member: discord.Member) -> None:
        if not joined.done():
            joined.set_result(member)

    bot.add_listener(on_member_join)
    carol = standin.add_user("carol", guilds=[world.guild.id])
    assert (await asyncio.wait_for(joined, 5)).id == int(carol["id"])

    later = standin.add_guild("later-guild")
    await bot.wait_for("guild_join", check=lambda g: g.id == later.id, timeout=5)
    assert bot.get_channel(later.channels["general"]) is not None

    channel = bot.get_channel(world.guild.channels["general"])
    assert isinstance(channel, discord.TextChannel)
    standin.fail_route("POST", r"/channels/\d+/messages$", status=429)
    await channel.send("after a 429")  # discord.py sleeps retry_after and retries
    statuses = [r.status for r in standin.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert statuses[-2:] == [429, 200]


async def test_content_hidden_without_message_content_intent() -> None:
    async with DiscordStandIn() as standin:
        guild = standin.add_guild("g")
        alice = standin.add_user("alice")
        seen: list[discord.Message] = []
        intents = discord.Intents.default()  # no message_content
        bot = commands.Bot(command_prefix="!", intents=intents)

        @bot.listen()
        async def on_message(message: discord.Message) -> None:
            seen.append(message)

        async with run_bot(bot, standin):
            channel_id = guild.channels["general"]
            await standin.send_message(channel_id, alice, "secret")
            await standin.send_message(channel_id, alice, "hey you", mention_bot=True)
            await standin.send_dm(alice, "in private")
            await standin._changes.wait_until(lambda: len(seen) >= 3 or None, 5)
        assert [m.content for m in seen] == ["", f"<@{standin.bot_id}> hey you", "in private"]


async def test_message_command_on_a_message(world: World) -> None:
    standin = world.standin
    synced = {(c["name"], c["type"]) for c in standin.synced_commands[None]}
    assert ("Quote this message", 3) in synced  # a message command keeps its capitals and spaces
    said = await standin.send_message(world.guild.channels["random"], world.bob, "the tea is ready")
    inter = await standin.invoke_message_command(world.alice, "Quote this message", said)
    assert inter.payload["data"]["target_id"] == said["id"]
    body = await inter.wait_response()
    assert body["data"]["content"] == f"bob in guild #{world.guild.channels['random']}: the tea is ready"
    assert body["data"]["flags"] & 64
    dm = await standin.send_dm(world.bob, "a private note")
    answered = await (
        await standin.invoke_message_command(world.bob, "Quote this message", dm)
    ).wait_response()
    assert answered["data"]["content"] == f"bob in dm #{dm['channel_id']}: a private note"
    with pytest.raises(KeyError):
        await standin.invoke_message_command(world.bob, "Quote this message", 12345)


async def test_a_joined_guild_names_its_system_channel_and_its_overwrites(world: World) -> None:
    standin, bot = world.standin, world.bot
    muted = overwrite(standin.bot_id, member=True, deny=SEND_MESSAGES)
    later = standin.add_guild("later-guild", system_channel="random", overwrites={"random": [muted]})
    guild = await bot.wait_for("guild_join", check=lambda g: g.id == later.id, timeout=5)
    assert guild.system_channel is not None and guild.system_channel.id == later.channels["random"]
    assert not guild.system_channel.permissions_for(guild.me).send_messages
    assert guild.get_channel(later.channels["general"]).permissions_for(guild.me).send_messages
    plain = standin.add_guild("plain-guild")
    assert (
        await bot.wait_for("guild_join", check=lambda g: g.id == plain.id, timeout=5)
    ).system_channel is None


async def test_message_command_names_are_checked_as_discord_does() -> None:
    async with DiscordStandIn() as standin:
        bot = commands.Bot(command_prefix="!", intents=bot_intents())
        async with run_bot(bot, standin):
            upsert = bot.http.bulk_upsert_global_commands
            with pytest.raises(discord.HTTPException) as refused:  # 33 characters: Discord allows 32
                await upsert(
                    standin.application_id, [{"name": "Forget what you learned from this", "type": 3}]
                )
            assert refused.value.status == 400
            await upsert(standin.application_id, [{"name": "Forget what you learned from it", "type": 3}])
        assert [c["name"] for c in standin.synced_commands[None]] == ["Forget what you learned from it"]
