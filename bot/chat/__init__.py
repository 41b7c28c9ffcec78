"""The chat: one reply with memory, the same for every front-end that replies (Discord, the terminal).

prompts (the system instruction: persona, memory guide, recalled block; the tools offered) <-
tool_rounds (a streamed reply during which the model consults the bot's tools) <- reply (the use case:
recall within its deadline, the prompt fitted, the reply streamed into the front-end's sink). It speaks
to the engine's ports and memory only: no discord, no model SDK, no settings, no storage
(tests/unit/test_layering.py): a front-end hands it the chat model that app.py opened.
"""
