"""Capturing every eligible message, and replying with the memories of everyone in the conversation."""

from __future__ import annotations

import contextlib
import functools
import logging
import math

import discord
from discord.ext import commands

from bot.app import key_variable, provider_name
from bot.chat.prompts import FORGET_TOOL, REMEMBER_TOOL
from bot.chat.reply import CHARS_PER_TOKEN, Replier, ReplyRequest, Used
from bot.discord_bot import remember_request
from bot.discord_bot.attachments import AttachmentReader, attachment_limits
from bot.discord_bot.audience import decides_here
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.conversation import recall_query, said_turns
from bot.discord_bot.discord_text import STREAMING_MARKER, speaker_name, streaming_parts
from bot.discord_bot.streaming import Streamed, past_rate_limits
from bot.discord_bot.ui import forgetting
from bot.discord_bot.ui.used_memories import used_view
from bot.memory.model_ports import (
    ChatTurn,
    ModelError,
    ModelKeyRejected,
    ModelRefusal,
    ToolCall,
    TurnPart,
    usage_scope,
)
from bot.memory.models import BufferedMessage, guild_scope, iso
from bot.memory.recall import Participant
from bot.memory.remembering import asks_to_remember
from bot.memory.text import looks_blank, strip_background_blocks, strip_mentions, worth_reading

log = logging.getLogger(__name__)

FAILED_REPLY = "Sorry, I couldn't come up with an answer just now. Please try again in a moment."
MISCONFIGURED_REPLY = "Sorry, I can't answer: I'm not set up correctly. The server's admins have been told."
KEY_REJECTED_LOG = (
    "{provider} rejected the API key: every reply and everything to learn fails until {variable} is "
    "fixed and the bot restarted (`python -m bot check --online` tests it)."
)
REFUSED_REPLY = "Sorry, I can't help with that one."
UNKNOWN_PARENT = -1
NO_TEXT_REPLY = "I can read words, images and text files, but not that one. Could you tell me in words?"
CAPTURED_TYPES = (discord.MessageType.default, discord.MessageType.reply)
COOLDOWN_REPLY = "You're asking faster than I can answer; please slow down and try again in {seconds} s."
COOLDOWN_NOTICE_SECONDS = 10.0  # the notice then deletes itself: it is for one person, not the channel


def scope_of(message: discord.Message) -> str:
    return guild_scope(message.guild.id if message.guild else None)


class Chat(commands.Cog):
    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot
        self._parents: dict[int, int | None] = {}  # threads the bot had not cached: their parent channel
        self._private_threads: set[int] = set()  # ... and which of them are private
        settings = bot.settings
        # One reader for every reply: what it prepared for an attachment is kept for the next replies.
        self._attachments = AttachmentReader(attachment_limits(settings))
        self.replier = Replier(
            bot.memory,
            bot.models.chat,
            turn_max_chars=settings.chat_turn_max_chars,
            prompt_max_chars=settings.chat_prompt_max_chars,
            reply_max_chars=settings.chat_max_output_tokens * CHARS_PER_TOKEN,
        )
        # Every reply costs a model call: a few per person per window, then one short notice per window.
        self._replies: commands.CooldownMapping[discord.Message] | None = None
        self._notices: commands.CooldownMapping[discord.Message] | None = None
        if settings.chat_cooldown_replies and settings.chat_cooldown_seconds:
            per, user = settings.chat_cooldown_seconds, commands.BucketType.user
            self._replies = commands.CooldownMapping.from_cooldown(settings.chat_cooldown_replies, per, user)
            self._notices = commands.CooldownMapping.from_cooldown(1, per, user)

    # ---- capture -----------------------------------------------------------------------------------------

    def capture(
        self, message: discord.Message, *, own_text: str | None = None, reply_to: int | None = None
    ) -> bool:
        """Hand a message to memory: people's messages as speakers, the bot's own replies as context.

        The bot's replies are captured by `show()` as it sends them (`own_text`), not from the gateway echo,
        so its admin-log posts and other messages never enter the buffer; `reply_to` is the message they
        answer, so that deleting it drops them too. Returns whether it was captured.
        """
        own = own_text is not None
        if not own and (message.author.bot or message.webhook_id or message.type not in CAPTURED_TYPES):
            return False
        content = own_text if own_text is not None else message.clean_content
        raw = content if own else message.content
        if not worth_reading(raw) or self.bot.memory.no_memory(raw):
            return False
        parent = self.parent_channel_id(message.channel)
        if parent == UNKNOWN_PARENT:
            # A thread whose parent could not be learned: remember it only where no channel is ignored.
            guild = self.bot.memory.guild(str(message.guild.id)) if message.guild else None
            if guild is not None and guild.ignored_channel_ids:
                return False
            parent = None
        return self.bot.memory.capture(
            BufferedMessage(
                message_id=str(message.id),
                scope=scope_of(message),
                channel_id=str(message.channel.id),
                author_id=str(message.author.id),
                author_name=speaker_name(message.author),
                content=content,
                created_at=iso(message.created_at),
                is_bot=own,
                reply_to=None if reply_to is None else str(reply_to),
                private_thread=self.is_private_thread(message.channel),
                decides=not own and decides_here(message, self.moderator_role(message)),
            ),
            guild_id=str(message.guild.id) if message.guild else None,
            parent_channel_id=None if parent is None else str(parent),
        )

    def moderator_role(self, message: discord.Message) -> str | None:
        """The role an admin named whose members' rules and decisions speak as the server, if any."""
        return self.bot.memory.guild(str(message.guild.id)).moderator_role_id if message.guild else None

    def is_private_thread(self, channel: discord.abc.Messageable) -> bool:
        """Whether `channel` is a private thread, whose words serve its members only."""
        kind = getattr(channel, "type", None)
        return (
            kind is discord.ChannelType.private_thread or getattr(channel, "id", 0) in self._private_threads
        )

    def parent_channel_id(self, channel: discord.abc.Messageable) -> int | None:
        """A thread's parent channel: from the cache, or as learned by `learn_parent`."""
        parent = getattr(channel, "parent_id", None)
        return parent if parent is not None else self._parents.get(getattr(channel, "id", 0))

    async def learn_parent(self, message: discord.Message) -> None:
        """A thread the bot has not cached arrives as a partial channel without its parent: look it up once.

        Without it, a thread of an ignored channel would be remembered.
        """
        channel = message.channel
        if message.guild is None or not isinstance(channel, discord.PartialMessageable):
            return
        if channel.id in self._parents:
            return
        try:
            fetched = await self.bot.fetch_channel(channel.id)
        except discord.HTTPException as exc:
            log.info("could not look up channel %s: %s", channel.id, exc)
            self._parents[channel.id] = UNKNOWN_PARENT
            return
        self._parents[channel.id] = getattr(fetched, "parent_id", None)
        if getattr(fetched, "type", None) is discord.ChannelType.private_thread:
            self._private_threads.add(channel.id)

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if self.bot.shutting_down:  # memory is closing; a reply now could not remember or be remembered
            return
        await self.learn_parent(message)
        captured = self.capture(message)
        if await self.should_reply(message) and await self.within_cooldown(message):
            with usage_scope(scope_of(message)):  # counted in the server's own /memory-admin stats
                await self.reply(message, remember=captured)

    async def within_cooldown(self, message: discord.Message) -> bool:
        """Whether this person may get another reply now; if not, a short notice (at most one per window)
        that deletes itself after a few seconds, so the channel is not left with it."""
        if self._replies is None or self._notices is None:
            return True
        bucket = self._replies.get_bucket(message)
        retry_after = bucket.update_rate_limit() if bucket is not None else None
        if not retry_after:
            return True
        notice = self._notices.get_bucket(message)
        if notice is not None and not notice.update_rate_limit():
            with contextlib.suppress(discord.HTTPException):
                await message.reply(
                    COOLDOWN_REPLY.format(seconds=math.ceil(retry_after)),
                    mention_author=False,
                    delete_after=COOLDOWN_NOTICE_SECONDS,
                )
        return False

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if "content" not in payload.data:
            return
        cached = payload.cached_message
        if (
            cached is not None and cached.content == payload.message.content
        ) or payload.message.edited_at is None:
            return  # a pin, an embed resolved or suppressed: the words did not change
        if self.bot.memory.no_memory(payload.message.content):  # "<@bot> !nomem" added by the edit
            await self.forget_deleted([payload.message_id])
        elif not self.bot.shutting_down:
            relearn = await self.bot.memory.message_edited(
                str(payload.message_id), payload.message.clean_content
            )
            if relearn:  # its old words went as by a deletion: its new text is learned as a new message
                self.capture(payload.message)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.forget_deleted([payload.message_id])

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self.forget_deleted(sorted(payload.message_ids))

    async def forget_deleted(self, message_ids: list[int]) -> None:
        """Take deleted messages out of memory, during shutdown too while the database is still open."""
        for message_id in message_ids:
            try:
                await self.bot.memory.message_deleted(str(message_id))
            except Exception:
                log.error(
                    "message %s was deleted but what was learned from it could not be forgotten",
                    message_id,
                    exc_info=True,
                )

    # ---- when to reply -------------------------------------------------------------------------------------

    async def should_reply(self, message: discord.Message) -> bool:
        me = self.bot.user
        if me is None or message.author.bot or message.webhook_id or message.type not in CAPTURED_TYPES:
            return False
        if message.guild is None or me in message.mentions:
            return True
        own_role = message.guild.self_role  # the bot's managed role, which Discord's picker also offers
        if own_role is not None and own_role in message.role_mentions:
            return True
        if self.auto_replies(message):
            return worth_reading(message.content)  # an image alone in a busy channel needs no answer
        parent = await self.parent_of(message)
        return parent is not None and parent.author.id == me.id

    def auto_replies(self, message: discord.Message) -> bool:
        """Whether every message in this channel (or its thread's parent) is answered: an admin's choice
        (/memory-admin autoreply), else AUTO_REPLY_CHANNEL_IDS, the starting set."""
        if message.guild is None:
            return False
        parent = self.parent_channel_id(message.channel)
        channels = [str(message.channel.id), *([] if parent in (None, UNKNOWN_PARENT) else [str(parent)])]
        starting = {str(c) for c in self.bot.settings.auto_reply_channel_ids}
        return self.bot.memory.guild(str(message.guild.id)).replies_in(channels, starting)

    async def parent_of(self, message: discord.Message) -> discord.Message | None:
        """The message this one replies to, from the payload, the cache, or the API."""
        ref = message.reference
        if ref is None or ref.message_id is None:
            return None
        if isinstance(ref.resolved, discord.Message):
            return ref.resolved
        if ref.cached_message is not None:
            return ref.cached_message
        try:
            return await message.channel.fetch_message(ref.message_id)
        except discord.HTTPException:
            return None

    # ---- the conversation ------------------------------------------------------------------------------------

    async def conversation(self, message: discord.Message) -> list[discord.Message]:
        """The reply chain up to CHAT_HISTORY_LIMIT, or else the channel's recent history, oldest first."""
        limit = self.bot.settings.chat_history_limit
        if message.reference is not None:
            chain = [message]
            while len(chain) < limit and (parent := await self.parent_of(chain[-1])) is not None:
                chain.append(parent)
            return [m for m in chain[::-1] if m.type in CAPTURED_TYPES or m is message]
        try:
            history = [m async for m in message.channel.history(limit=max(0, limit - 1), before=message)]
        except discord.HTTPException as exc:
            log.info("could not read history of channel %s: %s", message.channel.id, exc)
            history = []
        # Pins, joins, boosts and thread notices are not talk: their authors are not in the conversation.
        return [*(m for m in history[::-1] if m.type in CAPTURED_TYPES), message]

    async def attachments(
        self, message: discord.Message, messages: list[discord.Message]
    ) -> dict[int, list[TurnPart]]:
        """The parts of people's attachments in the conversation, by message id: the message being
        answered comes first for the caps, then the newest."""
        me = self.bot.user
        ordered = [message, *(m for m in reversed(messages) if m.id != message.id)]
        wanted = [
            (m.id, m.attachments)
            for m in ordered
            if m.attachments and not (me is not None and m.author.id == me.id)
        ]
        if not wanted:
            return {}
        try:
            return await self._attachments.read(wanted)
        except Exception:  # a bug or an odd file must not cost the reply: it goes on without attachments
            log.exception("could not read the attachments of a reply in channel %s", message.channel.id)
            return {}

    def participants(self, messages: list[discord.Message], trigger: discord.Message) -> list[Participant]:
        """Whose memories the reply may use: never more than the author could see with /facts.

        In DMs (one scope shared by every DM) only the author's own. In a server, the people who spoke in
        the conversation; people only mentioned are added when the author may see others' facts (Manage
        Server, or the server allows it), so a mention cannot pull someone's memories into a reply.
        """
        if trigger.guild is None:
            users: list[discord.abc.User] = [trigger.author]
        else:
            users = [trigger.author, *(m.author for m in messages)]
            if self.may_see_others(trigger):
                users += trigger.mentions
        people: dict[int, Participant] = {}
        for user in users:
            if not user.bot:
                people.setdefault(user.id, Participant(str(user.id), speaker_name(user)))
        return list(people.values())

    def may_see_others(self, trigger: discord.Message) -> bool:
        if trigger.guild is None:
            return False
        if self.bot.memory.guild(str(trigger.guild.id)).members_see_others:
            return True
        permissions = getattr(trigger.author, "guild_permissions", None)
        return permissions is not None and permissions.manage_guild

    def me(self, message: discord.Message) -> discord.abc.User | None:
        """The bot as it shows in the message's place (its member in a server)."""
        return message.guild.me if message.guild is not None else self.bot.user

    def memory_on(self, message: discord.Message) -> bool:
        return message.guild is None or self.bot.memory.guild(str(message.guild.id)).memory_enabled

    def persona(self, message: discord.Message) -> str:
        """The persona in force where `message` was said: the channel's, the server's, else BOT_PERSONA."""
        if message.guild is None:
            return self.bot.settings.bot_persona
        parent = self.parent_channel_id(message.channel)
        chosen = self.bot.memory.guild(str(message.guild.id)).persona_for(
            str(message.channel.id), None if parent is None else str(parent)
        )
        return chosen or self.bot.settings.bot_persona

    def request(self, message: discord.Message, messages: list[discord.Message]) -> ReplyRequest:
        """The reply's request: this place's persona and switch, the people present, what recall looks
        for, the audience from current permissions, and the turns with their attachments."""
        query, earlier = recall_query(message, messages, me=self.me(message))
        return ReplyRequest(
            scope=scope_of(message),
            people=self.participants(messages, message),
            persona=self.persona(message),
            memory_on=self.memory_on(message),
            query=query,
            earlier=earlier,
            audience=functools.partial(self.bot.audience.for_message, message),
            said=functools.partial(self.said, message, messages),
            channels=tuple(str(c.id) for c in message.channel_mentions),
        )

    async def said(self, message: discord.Message, messages: list[discord.Message]) -> list[ChatTurn]:
        """The conversation's turns, with what people attached (read while recall runs)."""
        attached = await self.attachments(message, messages)
        return said_turns(
            messages, me=self.bot.user, turn_limit=self.bot.settings.chat_turn_max_chars, attached=attached
        )

    # ---- replying ----------------------------------------------------------------------------------------------

    async def reply(self, message: discord.Message, *, remember: bool = True) -> None:
        """Answer `message`; the bot's own reply is kept as extraction context only if `remember`.

        A reply to a message that was not captured (opted out, no-memory marker, ignored channel) is not
        captured either, since it may repeat what that message said.
        """
        if self.only_media(message):
            with contextlib.suppress(discord.HTTPException):
                await message.reply(NO_TEXT_REPLY, mention_author=False)
            return
        sent: list[discord.Message] = []
        try:
            async with message.channel.typing():
                messages = await self.conversation(message)
                # A reply may repeat anything said in the conversation: if some of it was kept out of
                # memory (opted out, !nomem), the reply is kept out too.
                remember = remember and not any(self.kept_out(m) for m in messages)
                shown = Streamed(self, message, sent, remember=remember)
                async with shown.saying_when_slow():
                    answer = await self.replier.reply(self.request(message, messages), shown)
            if answer.calls:  # the bot answers an explicit request in its own words, not the model's
                await self.use_tools(message, sent, answer.calls)
                return
            if looks_blank(answer.text):  # blank-looking (whitespace, zero-width characters): not a reply
                raise ModelError(f"{provider_name(self.bot.settings)} returned an empty answer")
            await shown.finish(view=self.used_sign(message, answer.used))
        except ModelRefusal as exc:
            log.info("the chat model refused to answer in channel %s: %s", message.channel.id, exc)
            await self.replace_with(message, sent, REFUSED_REPLY)
        except ModelKeyRejected as exc:  # no point in "try again": say it once to admins, plainly to people
            log.error("chat reply failed in channel %s: %s", message.channel.id, exc)
            if message.guild is not None:
                self.bot.admin_log.post_once(message.guild.id, "model-key", self.key_rejected_line())
            await self.replace_with(message, sent, MISCONFIGURED_REPLY)
        except (ModelError, TimeoutError) as exc:
            log.warning("chat reply failed in channel %s: %s", message.channel.id, exc)
            if message.guild is not None:
                self.bot.admin_log.post(
                    message.guild.id, f"Chat reply failed in <#{message.channel.id}>: {exc}"
                )
            await self.replace_with(message, sent, FAILED_REPLY)
        except discord.HTTPException as exc:  # missing permissions, the trigger deleted meanwhile, ...
            log.warning("could not send a reply in channel %s: %s", message.channel.id, exc)
            await self.unmark(sent)
            if message.guild is not None:
                self.bot.admin_log.post(
                    message.guild.id,
                    f"Could not send a reply in <#{message.channel.id}>: {exc.status} {exc.text or ''}".rstrip(),
                )

    def used_sign(self, message: discord.Message, used: Used) -> discord.ui.View | None:
        """The quiet sign on a reply that used memory, noting for its asker which memories it used."""
        if not used:
            return None
        self.bot.reply_memories.keep(
            message.id, message.author.id, scope_of(message), used.fact_ids, used.episode_ids
        )
        return used_view(message.id)

    def key_rejected_line(self) -> str:
        settings = self.bot.settings
        return KEY_REJECTED_LOG.format(provider=provider_name(settings), variable=key_variable(settings))

    async def use_tools(
        self, message: discord.Message, sent: list[discord.Message], calls: list[ToolCall]
    ) -> None:
        """Do what the author explicitly asked (remember, or offer to forget) and say so.

        Only the author's own facts are touched. The confirmation replaces whatever the model wrote, so a
        reply never claims more than the bot did; it is not kept as extraction context.
        """
        lines: list[str] = []
        view: discord.ui.View | None = None
        for call in calls[:2]:
            what = str(call.args.get("what") or "").strip()
            if call.name == REMEMBER_TOOL.name:  # from the author's own words: the model only points
                own = strip_mentions(message.content)
                lines.append(
                    await remember_request.remember(
                        self.bot.memory,
                        user=message.author,
                        guild_id=message.guild.id if message.guild else None,
                        channel=message.channel,
                        text=own,
                        source_id=message.id,
                        pointer=what,
                        asked=asks_to_remember(own),
                    )
                )
            elif call.name == FORGET_TOOL.name and view is None:
                text, view = await forgetting.forget_request(
                    self.bot.memory,
                    user=message.author,
                    guild_id=message.guild.id if message.guild else None,
                    text=what or message.clean_content,
                )
                lines.append(text)
            elif call.name not in (REMEMBER_TOOL.name, FORGET_TOOL.name):  # the bot never offered it
                log.warning(
                    "the chat model called a tool the bot never offered (%r) in channel %s; answered with "
                    "an apology",
                    call.name[:60],
                    message.channel.id,
                )
        reply = await self.swap(message, sent, "\n".join(lines) or FAILED_REPLY, view=view)
        if isinstance(view, forgetting.ForgetRequest):
            view.message = reply

    def kept_out(self, message: discord.Message) -> bool:
        """Whether a person's message in the conversation is one memory must not learn from."""
        if message.author.bot:
            return False
        return self.bot.memory.is_opted_out(
            scope_of(message), str(message.author.id)
        ) or self.bot.memory.no_memory(message.content)

    @staticmethod
    def only_media(message: discord.Message) -> bool:
        """A sticker (or nothing at all) with no words beside the mentions and no attachment to read;
        "@Bot" with a photo is answered, the photo being what it says."""
        words = strip_background_blocks(strip_mentions(message.content)).strip()
        return not words and not message.attachments and bool(message.stickers or not message.content.strip())

    async def show(
        self,
        trigger: discord.Message,
        sent: list[discord.Message],
        text: str,
        *,
        remember: bool,
        final: bool,
        view: discord.ui.View | None = None,
    ) -> None:
        """Make the sent messages show `text`: edit the ones that changed, send the parts that are new;
        the last part carries `view` (the sign that memory was used), in the same edit or send.

        Until the `final` call the last part carries the streaming marker, so nobody takes a reply still
        being written for a finished one; memory keeps the words without it.
        """
        shown, said = streaming_parts(text, final=final)
        last = len(shown) - 1
        for index, (part, words) in enumerate(zip(shown, said, strict=True)):
            carry = view if index == last else None
            if index < len(sent):
                if sent[index].content != part or carry is not None:
                    edit = functools.partial(
                        sent[index].edit,
                        content=part,
                        view=carry if carry is not None else discord.utils.MISSING,
                    )
                    sent[index] = await past_rate_limits(edit)
                    if remember:
                        self.bot.memory.reply_edited(str(sent[index].id), words)
                continue
            if index == 0:
                sent.append(
                    await past_rate_limits(
                        functools.partial(trigger.reply, part, mention_author=False, view=carry)
                    )
                )
            else:
                sent.append(await past_rate_limits(functools.partial(trigger.channel.send, part, view=carry)))
            if remember:
                self.capture(sent[-1], own_text=words, reply_to=trigger.id)

    @staticmethod
    async def unmark(sent: list[discord.Message]) -> None:
        """A reply whose edits failed must not say it is still being written: each part still showing the
        streaming marker is edited once more without it, and deleted when even that fails."""
        for part in sent:
            if not part.content.endswith(STREAMING_MARKER):
                continue
            try:
                await past_rate_limits(
                    functools.partial(part.edit, content=part.content.removesuffix(STREAMING_MARKER)), 10.0
                )
            except discord.HTTPException:
                try:
                    await part.delete()
                except discord.HTTPException as exc:
                    log.warning("a partial reply still shows the writing marker: %s", exc)

    @staticmethod
    async def swap(
        trigger: discord.Message,
        sent: list[discord.Message],
        text: str,
        *,
        view: discord.ui.View | None = None,
    ) -> discord.Message:
        """Make the reply to `trigger` this one message: the first sent part edited (the rest deleted),
        or a new reply when nothing was sent yet."""
        if not sent:
            return await trigger.reply(text, mention_author=False, view=view or discord.utils.MISSING)
        await sent[0].edit(content=text, view=view)
        for extra in sent[1:]:
            await extra.delete()
        return sent[0]

    async def replace_with(self, trigger: discord.Message, sent: list[discord.Message], text: str) -> None:
        """Swap a half-finished reply for a short message, so nobody reads a truncated answer."""
        try:
            await self.swap(trigger, sent, text)
        except discord.HTTPException as exc:
            log.warning("could not send the failure notice: %s", exc)


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(Chat(bot))
