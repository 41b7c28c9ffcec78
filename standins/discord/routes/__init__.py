"""The Discord stand-in's REST API: `base` records and dispatches every request, the other modules
answer them by area (`application`: users, commands, guilds; `messages`; `interactions`)."""
