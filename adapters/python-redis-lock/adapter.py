"""lockbench adapter for python-redis-lock (PyPI, adapters/pypi/requirements.txt), over redis-py
from the same venv, on one node.

Its Lock: SET lock:<name> <random id> NX EX <whole seconds>; release by a Lua compare-and-delete
that also pushes to a signal list (waiters BLPOP it); extend by a Lua compare-and-EXPIRE to a
whole expiry again (replace only). "auto_renewal": true (the lock file's params) starts its
renewer thread on every acquire, which extends the lock every two thirds of its expiry until
release. A new Lock for every acquire (one instance refuses a second acquire). One attempt per
acquire: acquire(blocking=False). Its key is its own prefix before lockbench's, which an
acquire's answer names ("key") for the TTL probe (probe_key_ttl). Runs with
adapters/pypi/venv/bin/python.
"""
import importlib.metadata
import os
import sys

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, missing, not_ready, ready, serve

try:
    import redis
    import redis_lock
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:
    missing("python-redis-lock", "scripts/setup (adapters/pypi/build.sh makes the venv it runs in)")

if env.ttl_ms is not None and env.ttl_ms % 1000:
    not_ready(f"python-redis-lock's expire is whole seconds: ttl_ms {env.ttl_ms} is not")
host, port = env.nodes[0]
timeout_s = env.command_timeout_ms / 1000
# One attempt per command (lockbench retries): redis-py 6 and later retry three times with
# seconds of backoff unless told.
client = redis.Redis(host=host, port=port, socket_timeout=timeout_s, socket_connect_timeout=env.connect_timeout_ms / 1000,
                     retry=Retry(NoBackoff(), 0))
auto_renewal = bool(env.params.get("auto_renewal"))
lock = None


def acquire(req):
    global lock
    candidate = redis_lock.Lock(client, req["key"], expire=req["ttl_ms"] // 1000, auto_renewal=auto_renewal)
    if not candidate.acquire(blocking=False):
        return {"ok": False, "error": "held"}
    lock = candidate
    # The key it stored ("lock:" before the name), which the TTL probe reads.
    return {"ok": True, "token": lock.id, "nodes": [0], "key": lock._name}


def release(req):
    lock.release()  # raises NotAcquired when the key is no longer ours
    return {"ok": True, "removed_on": [0]}


def extend(req):
    if not req.get("replace"):
        return {"ok": False, "error": "python-redis-lock's extend sets a whole expiry again: it cannot add to the time left"}
    lock.extend(expire=req["ttl_ms"] // 1000)  # raises NotAcquired when the key is no longer ours
    return {"ok": True}


# A lock of its own key taken and released first: the connection and the scripts' loading are
# the first acquire's slowest part, not a repetition's.
warm = redis_lock.Lock(client, f"{env.key}:lockbench-warm:{os.getpid()}", expire=1)
if warm.acquire(blocking=False):
    warm.release()
ready(f"python-redis-lock {importlib.metadata.version('python-redis-lock')} (redis-py {redis.__version__})",
      "SET NX EX whole seconds with a random id, Lua compare-and-delete release with a signal list"
      + (", its renewer thread extending every 2/3 of the expiry" if auto_renewal else ""))
serve(acquire=acquire, release=release, extend=extend)
