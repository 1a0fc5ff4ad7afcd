"""lockbench adapter for aioredlock's Redlock (PyPI, adapters/pypi/requirements.txt: aioredlock
0.7.3 over aioredis 1.3.1, which it pins below 2.0), on every node lockbench gives (five).

Its lock, as its README shows it: `await Aioredlock(nodes).lock(key)` with no lock_timeout, so
its watchdog keeps it: the lock's lease is internal_lock_timeout (here the run's TTL), and a task
re-SETs it every 0.6 of that (a Lua script: SET PX when the key is absent or holds this lock's
uuid) until unlock; a renewal that fails unlocks the lock on its way out (valid turns false, and
the unlock cancels the watchdog's own task before its delete is sent: the key lapses at its TTL). An acquire SETs
on every node at once (a Lua SET-if-absent-or-mine with PX), waits for every node's answer, and
is granted on a majority within lease - elapsed - drift; else it unsets where it set. Release:
a Lua compare-and-delete on every node. `Lock.valid` is set when granted and cleared only by
unlock or a failed renewal: it does not turn false when the key expires (aioredlock #46).

One attempt per acquire (retry_count 1: its least). aioredis 1.3.1 has no command timeout, and
the library waits for every node: each request is given the op timeout (asyncio.wait_for, as an
application bounds an awaited call), past which it is cancelled (aioredlock then unsets where it
set, in the background) and answered "timeout". The event loop runs on a thread of its own, so
that the watchdog runs between requests. Runs with adapters/pypi/venv/bin/python.
"""
import asyncio
import importlib.metadata
import logging
import os
import sys
import threading

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, ready, serve

try:
    from aioredlock import Aioredlock, LockError, LockAcquiringError
except ImportError:
    missing("aioredlock", "scripts/setup (adapters/pypi/build.sh makes the venv it runs in)")

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # its failed renewals, at its own levels
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()
op_timeout_s = env.op_timeout_ms / 1000
manager = None
lock = None


def run(coro):
    """Runs `coro` on the loop's thread, given the op timeout; raises its error or TimeoutError."""
    return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, op_timeout_s), loop).result()


async def make_manager():
    # made on the loop's thread: aioredlock's asyncio.Lock objects belong to the loop they are made in
    return Aioredlock([{"host": h, "port": p, "timeout": env.connect_timeout_ms / 1000} for h, p in env.nodes],
                      retry_count=1, internal_lock_timeout=env.ttl_ms / 1000)


def acquire(req):
    global lock
    try:
        lock = run(manager.lock(req["key"]))
    except LockAcquiringError as e:  # a node refused: another's lock is there
        return {"ok": False, "error": f"held: {e}"}
    except LockError as e:  # no majority for other reasons (a node's connection failed, the time ran out)
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    except (asyncio.TimeoutError, TimeoutError):
        return {"ok": False, "error": "timeout: no answer within the op timeout (cancelled; it unsets where it set)"}
    return {"ok": True, "token": lock.id}


def release(req):
    try:
        run(manager.unlock(lock))  # LockError when a node refused (another's) or failed
    except (asyncio.TimeoutError, TimeoutError):
        return {"ok": False, "error": "timeout: no answer within the op timeout"}
    return {"ok": True}


manager = asyncio.run_coroutine_threadsafe(make_manager(), loop).result()
try:  # warm: the scripts loaded and the connections made before the first acquire
    warm = run(manager.lock(f"{env.key}:lockbench-warm:{os.getpid()}", lock_timeout=1))
    run(manager.unlock(warm))
except Exception as e:  # the requests will meet it
    print(f"lockbench adapter: warming up: {e!r}", file=sys.stderr)
ready(f"aioredlock {importlib.metadata.version('aioredlock')} (aioredis {importlib.metadata.version('aioredis')})",
      "Redlock: a Lua SET-if-absent-or-mine PX on every node at once, a majority within the lease, a watchdog re-SETting it every 0.6 of the lease, Lua compare-and-delete release")
serve(acquire=acquire, release=release)
