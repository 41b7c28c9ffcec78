"""The message commands' names (a message's menu, Apps): registered by cogs/message_menu.py, named in
/help and the welcome by cogs/help.py, which may not import each other."""

REMEMBER_THIS = "Remember this"
FORGET_TAUGHT = "Forget what you learned from it"  # Discord allows 32 characters in a command's name
