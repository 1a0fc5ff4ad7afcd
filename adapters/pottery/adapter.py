"""lockbench adapter for pottery's Redlock (PyPI, adapters/pypi/requirements.txt), over redis-py
from the same venv, on every node lockbench gives (five for a Redlock).

Its Redlock: SET redlock:<key> <uuid4> NX PX on every master at once (a thread each); granted
on a majority within auto_release_time - drift - elapsed, else it releases where it set and
fails; release a Lua compare-and-delete on every master (ok on a majority); extend a Lua
compare-and-PEXPIRE to a whole auto_release_time again (set to the request's TTL first), at
most num_extensions (3) times a lock. locked() says how long it still
holds the lock, by asking the masters again (an extra round trip, so the validity answered is
its majority's TTL read after the grant, counted from the acquire's start; none when that read
fails). One attempt per acquire: acquire(blocking=False). Its key is its own prefix before
lockbench's (redlock:<key>), which the answer names ("key") for lockbench's probe. Runs with
adapters/pypi/venv/bin/python.
"""
import importlib.metadata
import os
import sys
import time

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, ready, serve

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from pottery import Redlock
    from pottery.exceptions import PrimitiveError
except ImportError:
    missing("pottery", "scripts/setup (adapters/pypi/build.sh makes the venv it runs in)")

timeout_s = env.command_timeout_ms / 1000
# One attempt per command (lockbench retries): redis-py 6 and later retry three times with
# seconds of backoff unless told.
masters = {redis.Redis(host=h, port=p, socket_timeout=timeout_s, socket_connect_timeout=env.connect_timeout_ms / 1000,
                       retry=Retry(NoBackoff(), 0))
           for h, p in env.nodes}
lock = None


def acquire(req):
    global lock
    start = time.monotonic()
    candidate = Redlock(key=req["key"], masters=masters, auto_release_time=req["ttl_ms"] / 1000)
    if not candidate.acquire(blocking=False):
        return {"ok": False, "error": "held"}
    lock = candidate
    # pottery keeps its value private; it is what it SET, under its own key
    answer = {"ok": True, "token": lock._uuid, "key": lock.key}
    left_s = lock.locked()  # 0 when its majority's read-back failed: then no validity is said
    if left_s:
        answer["validity_ms"] = (time.monotonic() - start + left_s) * 1000
    return answer


def release(req):
    lock.release()  # raises ReleaseUnlockedLock when no majority held it
    return {"ok": True}


def extend(req):
    if not req.get("replace"):
        return {"ok": False, "error": "pottery's extend sets a whole auto_release_time again: it cannot add to the time left"}
    lock.auto_release_time = req["ttl_ms"] / 1000  # the TTL extend() sets, from now
    try:
        lock.extend()
    except PrimitiveError as e:  # TooManyExtensions, ExtendUnlockedLock
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return {"ok": True}


warm = Redlock(key=f"{env.key}:lockbench-warm:{os.getpid()}", masters=masters, auto_release_time=1)
if warm.acquire(blocking=False):
    warm.release()
ready(f"pottery {importlib.metadata.version('pottery')} (redis-py {redis.__version__})",
      "Redlock: SET NX PX a uuid on every master at once, a majority within the validity, Lua compare-and-delete release, Lua extend")
serve(acquire=acquire, release=release, extend=extend)
