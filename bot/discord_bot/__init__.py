"""The Discord front-end: the bot on Discord's gateway (`python -m bot run`), beside the terminal, the
CLI and MCP, on the same engine. The audience rule and the admin log (audience.py, adminlog.py) are its
own, and lent to the MCP front-end when it serves a server: one rule of who may read what, not a copy."""
