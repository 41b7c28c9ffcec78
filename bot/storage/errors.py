"""The errors every storage backend raises, so callers report a failure whichever database is in use."""


class DatabaseError(Exception):
    """The database cannot be used; the message says what to do about it."""


class EmbeddingMismatchError(DatabaseError):
    """The database holds vectors of another model or dimension than the one configured."""


class MigrationRefused(DatabaseError):
    """A copy between databases that must not start: the message says why and what to do instead."""
