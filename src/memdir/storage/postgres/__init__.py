"""The PostgreSQL backend (issue 15): memory folders, their index and their history in
one database, for agents on several hosts. Needs ``pip install 'memdir[postgres]'``.

- ``db``: connections, migrations, the folder lock (an advisory lock in the write's
  transaction); ``schema``: the tables.
- ``files``: ``PgFiles``, the ``Files`` of the seam.
- ``index``: ``PgIndex``, the index's rows, keyword (BM25) and vector primitives.
- ``history``: ``PgHistory``, the activity history.
"""
