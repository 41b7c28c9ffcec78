"""The SQL both backends run: the store's logic written once, over a backend's `Database`.

Both backends keep the same tables under the same names and speak the SQL they share (`?` marks a
parameter, `ON CONFLICT`, `RETURNING`). What differs is each backend's own: its connection, its
migrations, how a vector is written and compared, and its text index (`database.Backend hooks`).

database (the `Database` a backend hands over, `Connected`: the hooks) <- rows <- meta, search,
buffer, people <- facts <- store (`SqlStore`: the writes that span tables).
"""
