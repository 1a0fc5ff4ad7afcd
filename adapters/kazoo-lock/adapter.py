#!/usr/bin/python3
"""lockbench adapter for kazoo's Lock recipe on ZooKeeper (Debian: python3-kazoo, 2.8.0; or, run
with adapters/pypi/venv/bin/python as locks/zookeeper-kazoo-2.11.json does, PyPI's 2.11.0).

Speaks lockbench's adapter protocol (docs/adapters.md), as adapters/redis_py_lock.py
does. The recipe: each contender creates an ephemeral sequential znode under the lock's
path; the lowest holds the lock; the others would watch their predecessor (lockbench makes
one attempt per acquire, so they give up instead). The session is the lease: when it expires
(its client silent past the session timeout) ZooKeeper deletes the znode and the next
contender holds the lock.

One ZooKeeper client for the adapter's life, its session timeout the run's ttl_ms, over every
server in LOCKBENCH_NODES (kazoo fails over among them). kazoo opens a new session by itself
once the old one has expired (its state goes LOST, then CONNECTED); every acquire makes a new
Lock, so nothing of a lost session's lock is kept.
"""
import concurrent.futures
import os
import sys
import time

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, ready, serve

try:
    import kazoo.version
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.recipe.lock import Lock
    from kazoo.retry import KazooRetry
except ImportError:  # the first line says why, and what installs it
    missing("kazoo", "apt-get install python3-kazoo")

session_s = (env.ttl_ms or 500) / 1000  # the session is the lease
op_timeout_s = (env.op_timeout_ms or 2000) / 1000
budget_s = 0.8 * op_timeout_s  # every answer well within lockbench's op timeout
client = KazooClient(
    hosts=",".join("%s:%d" % node for node in env.nodes), timeout=session_s,
    # Reconnection never gives up (lockbench retries acquires for the whole run, and a client
    # whose connection thread has stopped stays dead), but tries again at least every 200 ms,
    # so that it reaches the new leader soon after an election ends.
    connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2),
    # A command retried across a lost connection ends within the budget.
    command_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2, deadline=budget_s))
# Not start(): it gives up (and stops the client) when the ensemble is not reachable in time.
# The event is set while the client is connected. Before its first connection the client's
# state is CLOSED and a request fails at once (ConnectionClosedError), so each acquire waits
# for a connection first, within its budget.
connected = client.start_async()
lock = None
# Contenders of ours that no answer owns any more, as (lock path, the Lock's znode prefix): a
# clean-up that failed, or an acquire that succeeded after its answer was given up on. An
# ephemeral znode of a live session would hold (or queue for) the lock forever: deleted
# before the next acquire.
orphans = set()


class OneAttemptLock(Lock):
    """kazoo's Lock, which forgets a contender znode it failed to delete: this one remembers."""

    def _best_effort_cleanup(self):
        try:
            node = self.node or self._find_node()
            if node:
                self._delete_node(node)
        except KazooException:
            orphans.add((self.path, self.prefix))


# One attempt, the recipe's own retry (of a lost connection) bounded, as it is unbounded
# otherwise. kazoo 2.8.0 bounds it by acquire's timeout. 2.11.0 refuses a timeout with
# blocking=False: it hands the timeout to a threading lock of its own, whose acquire raises
# ValueError ("can't specify a timeout for a non-blocking call") though its documentation still
# allows both; there the retry is bounded by its number of tries (about the same time).
timeout_refused = False


def one_attempt(candidate):
    global timeout_refused
    if not timeout_refused:
        try:
            return candidate.acquire(blocking=False, timeout=budget_s)
        except ValueError:
            timeout_refused = True
            print("lockbench adapter: kazoo %s refuses acquire(blocking=False, timeout=...); "
                  "bounding its retry by tries" % kazoo.version.__version__, file=sys.stderr)
    candidate._retry = KazooRetry(max_tries=int(budget_s / 0.2) + 1, delay=0.05, max_delay=0.2,
                                  sleep_func=client.handler.sleep_func)
    return candidate.acquire(blocking=False)


def acquire(req):
    global lock
    if not connected.wait(budget_s):
        return {"ok": False, "error": "not connected to ZooKeeper (%s)" % client.state}
    sweep_orphans()
    path = "/lockbench/" + req["key"].replace("/", "_")
    # A contender that finds others queued already would wait on its predecessor's watch; one
    # attempt gives up instead, so it looks first, with a read the server it is connected to
    # answers alone. Without the look every failed attempt was two writes (the contender's
    # create and delete), each through the leader and a quorum: seven clients polling at
    # millisecond intervals kept a three-JVM ensemble busy enough, on a loaded machine, to
    # slow the holder's own release. A stale read only costs one more attempt or one
    # attempt's wait: the create and the children after it decide, as before.
    try:
        if client.get_children(path):
            return {"ok": False, "error": "held"}
    except NoNodeError:
        pass  # no lock taken on this key yet
    candidate = OneAttemptLock(client, path, identifier=f"client {env.client}")
    try:
        if not one_attempt(candidate):
            if client.state != KazooState.CONNECTED:
                return {"ok": False, "error": "not connected to ZooKeeper (%s)" % client.state}
            return {"ok": False, "error": "held"}
        stat = client.exists(candidate.path + "/" + candidate.node)
    except Exception:
        orphans.add((candidate.path, candidate.prefix))
        raise
    if stat is None:
        return {"ok": False, "error": "lost: its znode was gone right after the acquire (session expired)"}
    lock = candidate
    # The fence is the znode's czxid, the zxid of the transaction that created it, rather than
    # its sequence number: both follow the lock's order, but the sequence number is the parent
    # znode's child counter (it restarts if the parent is ever recreated, and means nothing
    # across two lock paths), while a zxid is unique across the ensemble's whole history and
    # grows across leader changes (the leader's epoch is its upper 32 bits).
    return {"ok": True, "token": candidate.node, "fence": stat.czxid, "nodes": [0]}


def release(req):
    global lock
    held, lock = lock, None
    if held is None:
        return {"ok": False, "error": "not held"}
    # What Lock.release() does, except that it swallows NoNodeError: the checker must know
    # whether this release removed the lock (removed_on) or the session's expiry had already.
    # (A delete that landed just as the connection dropped is retried, finds no node, and is
    # reported as lost: under-reported, never a removal that did not happen.)
    try:
        client.retry(client.delete, held.path + "/" + held.node)
    except NoNodeError:
        return {"ok": False, "error": "lost: its znode was gone already (the session expired)"}
    except Exception:
        orphans.add((held.path, held.prefix))
        raise
    return {"ok": True, "removed_on": [0]}


def extend(req):
    return {"ok": False, "error": "nothing to extend: kazoo's heartbeats keep the session (the lease) alive"}


def sweep_orphans():
    for path, prefix in list(orphans):
        try:
            for child in client.get_children(path):
                if child.startswith(prefix):
                    client.delete(path + "/" + child)
        except NoNodeError:
            pass
        except KazooException:
            continue  # still unreachable: next time
        orphans.discard((path, prefix))


# Every answer within the budget: kazoo's synchronous calls wait for a reconnection without
# a bound, so each request runs on a worker thread. One given up on keeps running there; it
# is collected before the next request, and a late acquire's znode is deleted.
worker = concurrent.futures.ThreadPoolExecutor(max_workers=1)
late = None


def collect_late(deadline):
    global late, lock
    if late is None:
        return True
    try:
        answer = late.result(timeout=max(0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:
        return False
    except Exception:
        answer = {}
    if answer.get("ok") and answer.get("token"):  # an acquire that nobody was told of
        orphans.add((lock.path, lock.prefix))
        lock = None
    late = None
    return True


def answer(handler, req):
    global late
    deadline = time.monotonic() + budget_s
    if not collect_late(deadline):
        return {"ok": False, "error": "ZooKeeper has not answered an earlier request yet"}
    future = worker.submit(handler, req)
    try:
        return future.result(timeout=max(0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:
        late = future
        return {"ok": False, "error": "no answer from ZooKeeper within %d ms" % (budget_s * 1000)}


ready(f"kazoo {kazoo.version.__version__}",
      "ZooKeeper lock recipe: ephemeral sequential znode, watch the predecessor; held while the session lives",
      fencing=True)


def close():
    """The session closed (its znodes go at once rather than when it would expire), the client's
    threads ended, and the worker let go without joining it (it may still wait on a request
    given up on): when stdin closes, and at a kept adapter's reset (the kit runs this file again)."""
    client.stop()
    client.close()
    worker.shutdown(wait=False)


serve(acquire=lambda req: answer(acquire, req), release=lambda req: answer(release, req),
      extend=lambda req: answer(extend, req), on_close=close, kept=True)
