#!/usr/bin/python3
"""lockbench adapter for redis-py's redis.lock.Lock (Debian: python3-redis; locks/redis-py-8.json
runs it with PyPI's redis-py 8, adapters/pypi/venv/bin/python).

Speaks lockbench's adapter protocol (docs/adapters.md) through the Python kit,
adapters/kit/lockbench_adapter.py: it reads the environment, says ready, answers each request
with what a handler returns (an exception: {"ok": false, "error": ...}). Copy it for another
library: only the three functions in the middle know about redis-py.
"""
import os
import sys

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit"))
from lockbench_adapter import env, missing, ready, serve

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # the first line says why, and what installs it
    missing("redis-py", "apt-get install python3-redis")

host, port = env.nodes[0]
timeout_s = env.command_timeout_ms / 1000  # per command, as lockbench's own
once = Retry(NoBackoff(), 0)  # one attempt per command (redis-py 6 and later retry 3 times unless told)
client = redis.Redis(host=host, port=port, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=once)
if env.sentinels:  # a master behind Sentinel: ask it, reach it by our own path
    from redis.sentinel import Sentinel

    class OwnPathSentinel(Sentinel):
        def discover_master(self, name):
            return env.own_path(*super().discover_master(name))

    client = OwnPathSentinel(env.sentinels, socket_timeout=timeout_s, retry=once).master_for(
        env.master_name, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=once)
# Connected before the ready line, as an application's pool is: redis-py 5 and later open a
# connection with CLIENT SETINFO, whose round trip would otherwise come before the first acquire's SET.
client.ping()
lock = None


def acquire(req):
    global lock
    lock = client.lock(req["key"], timeout=req["ttl_ms"] / 1000, thread_local=False)
    if not lock.acquire(blocking=req["wait_ms"] > 0, blocking_timeout=req["wait_ms"] / 1000 or None):
        return {"ok": False, "error": "held"}
    return {"ok": True, "token": lock.local.token.decode(), "nodes": [0]}


def release(req):
    lock.release()  # raises LockNotOwnedError when the key is no longer ours
    return {"ok": True, "removed_on": [0]}


def extend(req):
    return {"ok": bool(lock.extend(req["ttl_ms"] / 1000, replace_ttl=req.get("replace", False)))}


ready(f"redis-py {redis.__version__}",
      "SET NX PX with a random token, Lua compare-and-delete release, Lua extend")
# A reset (lockbench keeps the adapter for another repetition) first closes this run's connections.
serve(acquire=acquire, release=release, extend=extend, on_close=client.close, kept=True)
