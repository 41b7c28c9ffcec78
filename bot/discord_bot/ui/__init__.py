"""Discord widgets of the commands: views whose buttons answer only their owner, pagers, correction
forms, confirmations, and the texts they show (each listed fact or episode, the admin's reports). Cogs
build them; they import no cog, so a cog never needs another cog's module."""
