#!/usr/bin/python3
"""lockbench adapter for PostgreSQL's advisory locks, through psycopg2 (Debian: python3-psycopg2).

Speaks lockbench's adapter protocol (docs/adapters.md). As teams use them:

- "level": "session" (the default): `SELECT pg_try_advisory_lock(k)` on one connection kept for
  the adapter's life; the lock lives as long as that server-side session, with no lease: a
  holder that is paused keeps it, and a holder cut off from the server believes it holds it
  until the server ends the session. Release: `pg_advisory_unlock(k)`, which answers false
  (and warns) when this session does not hold it.
- "level": "xact": `BEGIN; SELECT pg_try_advisory_xact_lock(k)`, the transaction left open
  while the lock is held (the protected write is elsewhere, so it cannot share the
  transaction); release is COMMIT, which is the only way to let go of it.

k is `hashtextextended(key, 0)`, the server's own hash of lockbench's key. The fencing token is
`nextval('lockbench_fence')`, taken in the same session (and transaction) right after the lock
is granted: sequences are never rolled back, so every grant gets a larger one.

Behind PgBouncer (the lock file's "pgbouncer") nothing changes here: that is the point. In
transaction pooling every statement outside a transaction may run on another server
connection, so the session lock is taken on one and released on another.

Every call runs on a non-blocking connection with a deadline (the op budget): a link cut by
lockbench holds replies and never closes the socket, so a blocking call would never return.
Past the deadline the connection is closed and the answer is an error; the next request
opens a new connection, a new server session.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, not_ready, ready, serve

try:
    import psycopg2
    import psycopg2.extensions
except ImportError:  # the first line says why, and what installs it
    missing("psycopg2", "apt-get install python3-psycopg2")

level = env.params.get("level", "session")
if level not in ("session", "xact"):
    not_ready(f"params.level: expected \"session\" or \"xact\", got {level!r}")
budget_s = 0.8 * (env.op_timeout_ms or 2000) / 1000  # every answer well within lockbench's op timeout
host, port = env.nodes[0]
dsn = dict(host=host, port=port, user=env.user, password=env.password, dbname=env.database,
           connect_timeout=max(1, round((env.connect_timeout_ms or 1000) / 1000)),
           application_name=f"lockbench-{env.client}")


def wait(conn, deadline):
    """psycopg2's poll loop for a non-blocking connection, until the deadline."""
    while True:
        state = conn.poll()
        if state == psycopg2.extensions.POLL_OK:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer from the server within {budget_s:.2f} s")
        fd = conn.fileno()
        if state == psycopg2.extensions.POLL_READ:
            select.select([fd], [], [], left)
        else:
            select.select([], [fd], [], left)


class Session:
    """One server session; gone (closed) after any failure, so that the next call starts afresh."""

    def __init__(self):
        self.conn = None

    def query(self, sql, *args):
        deadline = time.monotonic() + budget_s
        try:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg2.connect(**dsn, async_=1)
                wait(self.conn, deadline)
            cur = self.conn.cursor()
            cur.execute(sql, args)
            wait(self.conn, deadline)
            return cur.fetchone() if cur.description else None
        except Exception:
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


session = Session()
key_sql = "hashtextextended(%s, 0)"
try:
    # The first client to get here creates the sequence; one that races it sees it exist, or
    # (IF NOT EXISTS checks before it creates) fails on the catalog's unique index or with
    # "relation already exists" (1 of 10 held-replies runs of pg-advisory-xact, at 8 side by side).
    session.query("CREATE SEQUENCE IF NOT EXISTS lockbench_fence")
except (psycopg2.errors.UniqueViolation, psycopg2.errors.DuplicateTable):
    pass
except Exception as e:  # the server is not reachable: say so in the ready line's place
    not_ready(f"PostgreSQL at {host}:{port}: {type(e).__name__}: {e}")
server_version = session.query("SHOW server_version")[0]
holding = None  # xact: the connection whose open transaction holds the lock


def acquire(req):
    global holding
    key = req["key"]
    if level == "session":
        if not session.query(f"SELECT pg_try_advisory_lock({key_sql})", key)[0]:
            return {"ok": False, "error": "held"}
    else:
        session.query("BEGIN")
        if not session.query(f"SELECT pg_try_advisory_xact_lock({key_sql})", key)[0]:
            session.query("ROLLBACK")
            return {"ok": False, "error": "held"}
        holding = session.conn
    fence = session.query("SELECT nextval('lockbench_fence')")[0]
    return {"ok": True, "token": str(fence), "fence": fence}


def release(req):
    global holding
    if level == "session":
        released = session.query(f"SELECT pg_advisory_unlock({key_sql})", req["key"])[0]
        return {"ok": True, "removed_on": [0]} if released else {"ok": False, "error": "not held by this session"}
    held_on, holding = holding, None
    if held_on is None or held_on is not session.conn:
        return {"ok": False, "error": "the transaction that held it is gone (its connection failed)"}
    session.query("COMMIT")
    return {"ok": True, "removed_on": [0]}


def extend(req):
    return {"ok": False, "error": "an advisory lock has no lease to extend: it lasts as long as its "
                                  + ("session" if level == "session" else "transaction")}


algorithm = ("pg_try_advisory_lock on a session kept open; pg_advisory_unlock" if level == "session"
             else "BEGIN; pg_try_advisory_xact_lock, the transaction open while held; COMMIT")
ready(f"psycopg2 {psycopg2.__version__.split()[0]} (PostgreSQL {server_version})", algorithm, fencing=True)
serve(acquire=acquire, release=release, extend=extend, on_close=session.close)
