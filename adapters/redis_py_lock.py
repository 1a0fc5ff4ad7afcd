#!/usr/bin/python3
"""lockbench adapter for redis-py's redis.lock.Lock (Debian: python3-redis).

Speaks lockbench's adapter protocol (README: External locks): reads one JSON request a line
on stdin, answers one JSON line on stdout. Copy it for another library: only the three
functions in the middle know about redis-py.
"""
import json
import os
import sys

try:
    import redis
except ImportError:  # the first line says why, and what installs it
    print(json.dumps({"ready": False, "error": "redis-py is missing: apt-get install python3-redis"}), flush=True)
    sys.exit(1)

host, port = os.environ["LOCKBENCH_NODES"].split(",")[0].split(":")
timeout_s = int(os.environ["LOCKBENCH_COMMAND_TIMEOUT_MS"]) / 1000  # per command, as lockbench's own
client = redis.Redis(host=host, port=int(port), socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
if os.environ.get("LOCKBENCH_SENTINELS"):  # a master behind Sentinel: ask it, reach it by our own path
    from redis.sentinel import Sentinel

    class OwnPathSentinel(Sentinel):
        def discover_master(self, name):
            addr = "%s:%s" % super().discover_master(name)
            h, p = json.loads(os.environ["LOCKBENCH_ADDRESS_MAP"]).get(addr, addr).split(":")
            return h, int(p)

    client = OwnPathSentinel([tuple(a.split(":")) for a in os.environ["LOCKBENCH_SENTINELS"].split(",")],
                             socket_timeout=timeout_s).master_for(
        os.environ["LOCKBENCH_MASTER_NAME"], socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
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


print(json.dumps({"ready": True, "library": f"redis-py {redis.__version__}",
                  "algorithm": "SET NX PX with a random token, Lua compare-and-delete release, Lua extend",
                  "fencing": False}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    try:
        answer = {"acquire": acquire, "release": release, "extend": extend}[req["op"]](req)
    except (redis.exceptions.RedisError, OSError) as e:
        answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    print(json.dumps(answer), flush=True)
