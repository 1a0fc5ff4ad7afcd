#!/usr/bin/python3
"""lockbench adapter for MariaDB's named locks, through PyMySQL (Debian: python3-pymysql).

Speaks lockbench's adapter protocol (docs/adapters.md). As teams use them: `SELECT
GET_LOCK(name, 0)` on one connection kept for the adapter's life, `SELECT RELEASE_LOCK(name)`.
The lock belongs to the connection that took it, with no lease: a holder that is paused keeps
it for as long as the server keeps the connection, which it drops after `wait_timeout` seconds
idle (8 hours by default), and a server that restarts has forgotten every named lock. Either
way the holder is told nothing; it learns it at its next statement, its release. RELEASE_LOCK
answers 1 (released), 0 (another connection holds it) or NULL (nobody does).

The name is lockbench's key, or its SHA-1 when longer than MariaDB's 64 characters. The fencing
token is a counter row of an InnoDB table, incremented on the same connection right after the
lock is granted (`INSERT ... ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)`, committed, and
so on disk, before the answer). Not a SEQUENCE: MariaDB 10.11 writes a sequence's state to its
log about once a second, not when NEXTVAL hands out a value, so a server killed within that
second starts the sequence again below the tokens it had handed out (and one created within it
has no row at all, error 1032), which a store that checks tokens would take for the newest.

Every request has one deadline (the op budget), shared by its connect and its round trips:
each socket read and write is given the time left when its statement begins (PyMySQL's timeouts,
set before each query), since a link cut by lockbench holds replies and never closes the
socket. Past it the connection is closed and the answer is an error; the next request opens a
new connection, which holds none of the old one's locks.
"""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, not_ready, ready, serve

try:
    import pymysql
except ImportError:  # the first line says why, and what installs it
    missing("pymysql", "apt-get install python3-pymysql")

budget_s = 0.8 * (env.op_timeout_ms or 2000) / 1000  # every answer well within lockbench's op timeout
host, port = env.nodes[0]
options = dict(host=host, port=port, user=env.user, password=env.password, database=env.database, autocommit=True,
               program_name=f"lockbench-{env.client}")


class Connection:
    """One server connection; gone (closed) after any failure, so that the next call starts afresh."""

    def __init__(self):
        self.conn = None

    def query(self, deadline, sql, *args):
        """The first row of one statement, and the cursor's lastrowid, within the request's deadline."""
        try:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from the server within {budget_s:.2f} s")
            if self.conn is None:
                self.conn = pymysql.connect(**options, connect_timeout=left, read_timeout=left, write_timeout=left)
            else:  # what PyMySQL gives each socket read and write (Connection._read_bytes, _write_bytes)
                self.conn._read_timeout = self.conn._write_timeout = left
            with self.conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchone(), cur.lastrowid
        except Exception:
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass  # a connection the server dropped cannot say goodbye
            self.conn = None


def lock_name(key):
    return key if len(key) <= 64 else hashlib.sha1(key.encode()).hexdigest()


def deadline():
    return time.monotonic() + budget_s


connection = Connection()
try:
    # IF NOT EXISTS: every client runs it; the table's metadata lock orders them.
    connection.query(deadline(), "CREATE TABLE IF NOT EXISTS lockbench_fence (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB")
    server_version = connection.query(deadline(), "SELECT VERSION()")[0][0]
except Exception as e:  # the server is not reachable: say so in the ready line's place
    not_ready(f"MariaDB at {host}:{port}: {type(e).__name__}: {e}")


def acquire(req):
    by = deadline()
    got = connection.query(by, "SELECT GET_LOCK(%s, 0)", lock_name(req["key"]))[0][0]
    if got != 1:
        return {"ok": False, "error": "held" if got == 0 else "GET_LOCK answered NULL"}
    # LAST_INSERT_ID(expr) sets the value the statement reports as its last insert id.
    _, fence = connection.query(by, "INSERT INTO lockbench_fence VALUES (1, LAST_INSERT_ID(1)) "
                                    "ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)")
    return {"ok": True, "token": str(fence), "fence": fence}


def release(req):
    released = connection.query(deadline(), "SELECT RELEASE_LOCK(%s)", lock_name(req["key"]))[0][0]
    if released == 1:
        return {"ok": True, "removed_on": [0]}
    return {"ok": False, "error": "held by another connection" if released == 0 else "not held by this connection"}


def extend(req):
    return {"ok": False, "error": "a named lock has no lease to extend: it lasts as long as its connection"}


ready(f"PyMySQL {pymysql.__version__} (MariaDB {server_version})", "GET_LOCK(name, 0) on a connection kept open; RELEASE_LOCK",
      fencing=True)
serve(acquire=acquire, release=release, extend=extend, on_close=connection.close)
