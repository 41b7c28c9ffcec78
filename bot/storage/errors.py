"""The errors every storage backend raises, so callers report a failure whichever database is in use.

    DatabaseError               the database cannot be used (cannot be opened, damaged, locked, a schema
    |                           newer than the bot, the store closed); the message says what to do,
    |                           never a password. A backend's driver errors in a query pass as they are,
    |                           and `Backend.errors` names them for the front-ends' one-line reports
    +-- EmbeddingMismatchError  the vectors are another embedding model's or size: `python -m bot
    |                           reembed`, or the model they were made with
    +-- MigrationRefused        `python -m bot migrate` must not start (the target holds other memory
                                or another model's vectors, a re-embedding is unfinished): a refusal
                                before any row is copied, not a failure part way

The model side's errors are the engine's model ports' (`bot/memory/model_ports.py`, ModelError and its kinds).
"""


class DatabaseError(Exception):
    """The database cannot be used; the message says what to do about it."""


class EmbeddingMismatchError(DatabaseError):
    """The database holds vectors of another model or dimension than the one configured."""


class MigrationRefused(DatabaseError):
    """A copy between databases that must not start: the message says why and what to do instead."""
