"""Local stand-ins for the services the bot talks to, for the tests and the benchmarks alike.

`standins.discord` speaks Discord's gateway and REST API to the real discord.py client, `standins.gemini`
speaks Gemini's REST API to the real google-genai client, `standins.openai` the OpenAI-compatible API to
the real `openai` client, and `standins.brain` is a rule-based model that answers the bot's memory tasks
through either (`standins.local` is the server the two model stand-ins share).

Not shipped in the wheel (pyproject's `packages.find` takes `bot` only): installing the bot should not
put test servers on a host, nor claim a top-level `standins` module there. In a checkout it is imported
from the repository root, which `python -m pytest` and `python -m bench.<name>` put on `sys.path`, the
same way `tests` and `bench` are.
"""
