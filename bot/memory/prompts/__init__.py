"""The engine's prompts, one module per task, each task's instruction beside the JSON shape the model
answers in: extraction (and the rewrite of selected lines), selection, consolidation, remembering; the
community's half of a chunk's reading in community; how every answer is read, leniently, in reading.

Kept apart from the pipeline so that wording can be tuned without touching control flow, and so that
the test stand-ins can recognise which task a request is for (the `*_TASK` markers an instruction starts
with). The chat's prompts are the chat's (`bot/chat/prompts.py`).
"""
