#!/usr/bin/python3
"""lockbench adapter for OpenStack tooz's Redis driver (Debian: python3-tooz 3.1.0).

Speaks lockbench's adapter protocol (README: External locks), as adapters/redis_py_lock.py
does. tooz's Redis lock is redis-py's redis.lock.Lock underneath: SET NX PX with a random
token, a Lua compare-and-delete release. tooz names the key "%s_%s_lock" % (namespace, K) with
its namespace as bytes, so on Python 3 the key is literally `b'_tooz'_<K>_lock`.
Its lock timeout is the driver's `lock_timeout`, an int of whole SECONDS, and so is its
socket timeout (`socket_timeout`, read with int()): a run's ttl_ms that is not a whole number
of seconds is refused in the ready line rather than rounded, and the per-command timeout is
LOCKBENCH_COMMAND_TIMEOUT_MS rounded UP to whole seconds (tooz cannot say 200 ms).

One attempt per acquire: acquire(blocking=False) makes redis-py's Lock try its SET once.
Renewal: tooz renews held locks in `heartbeat()` (redis-py's reacquire: the TTL back to the
whole lock_timeout). By default (the library's own default, start_heart=False) nothing calls
it: nothing runs in the background. With params `"heartbeat": true` the coordinator is
started with start_heart=True: tooz's Heart thread then calls heartbeat() every half of
min(lock_timeout, membership_timeout) for as long as the adapter lives. A renewal that finds
the lock gone is only logged by tooz (a warning, "Unable to heartbeat lock"): the adapter
turns that log record into a {"event": "lost"} line. tooz keeps the lost lock in its list of
held ones, so the warning, and the event, repeat every beat until the release. Release answers removed_on: tooz's
release returns False when the key was no longer ours.
"""
import json
import logging
import math
import os
import sys
import threading

# futurist (under tooz) looks for eventlet, whose import takes seconds on a loaded machine
# and which this adapter never uses: mark it absent so that the ready line comes in time.
sys.modules.setdefault("eventlet", None)
# tooz's driver imports distutils; setuptools' shim (put in place at start-up by a .pth
# file) would answer with setuptools and pkg_resources, a third of the start-up's CPU: the
# standard library's own distutils is enough.
try:
    import _distutils_hack
    _distutils_hack.remove_shim()
except (ImportError, AttributeError):
    pass
try:
    import importlib.metadata
    import redis.sentinel
    import tooz
    from tooz import coordination
except ImportError:  # the first line says why, and what installs it
    print(json.dumps({"ready": False, "error": "tooz is missing: apt-get install python3-tooz"}), flush=True)
    sys.exit(1)

out_lock = threading.Lock()  # the Heart thread may announce a loss while the main thread answers


def say(obj):
    with out_lock:
        print(json.dumps(obj), flush=True)


params = json.loads(os.environ.get("LOCKBENCH_PARAMS") or "{}")
ttl_ms = int(os.environ["LOCKBENCH_TTL_MS"])
if ttl_ms % 1000:
    say({"ready": False, "error": f"tooz's lock_timeout is whole seconds: ttl_ms {ttl_ms} is not"})
    sys.exit(1)
socket_timeout_s = math.ceil(int(os.environ["LOCKBENCH_COMMAND_TIMEOUT_MS"]) / 1000)


class OwnPathSentinel(redis.sentinel.Sentinel):
    """tooz asks redis.sentinel.Sentinel for the master: reach it by this client's own path."""

    def discover_master(self, name):
        addr = "%s:%s" % super().discover_master(name)
        host, port = json.loads(os.environ["LOCKBENCH_ADDRESS_MAP"]).get(addr, addr).split(":")
        return host, int(port)


def backend_url():
    query = f"lock_timeout={ttl_ms // 1000}&socket_timeout={socket_timeout_s}"
    sentinels = os.environ.get("LOCKBENCH_SENTINELS")
    if not sentinels:
        return f"redis://{os.environ['LOCKBENCH_NODES'].split(',')[0]}?{query}"
    # tooz's own sentinel option: the first Sentinel in the URL, the others as fallbacks.
    redis.sentinel.Sentinel = OwnPathSentinel  # the module attribute tooz's driver calls
    first, *rest = sentinels.split(",")
    fallbacks = "".join(f"&sentinel_fallback={s}" for s in rest)
    return f"redis://{first}?sentinel={os.environ['LOCKBENCH_MASTER_NAME']}{fallbacks}&{query}"


class LostLock(logging.Handler):
    """tooz's heartbeat reports a lock it could not renew only as a log warning."""

    def emit(self, record):
        if record.getMessage().startswith("Unable to heartbeat lock"):
            say({"event": "lost", "detail": "tooz heartbeat: " + str(record.exc_info and record.exc_info[1])})


logging.getLogger("tooz.drivers.redis").addHandler(LostLock())
member = "lockbench-client-%s" % os.environ.get("LOCKBENCH_CLIENT", "?")
coordinator = coordination.get_coordinator(backend_url(), member.encode())
try:
    coordinator.start(start_heart=bool(params.get("heartbeat", False)))
except tooz.ToozError as e:  # start() asks the server for INFO: ready means connected
    say({"ready": False, "error": f"cannot reach Redis: {e}"})
    sys.exit(1)
lock = None


def acquire(req):
    global lock
    lock = coordinator.get_lock(req["key"])
    if not lock.acquire(blocking=False):
        return {"ok": False, "error": "held"}
    return {"ok": True, "token": lock._lock.local.token.decode(), "nodes": [0]}


def release(req):
    if not lock.release():  # tooz logs the LockNotOwnedError and answers False
        return {"ok": False, "error": "not owned: the key was no longer ours"}
    return {"ok": True, "removed_on": [0]}


def extend(req):
    # heartbeat() puts the TTL back to the whole lock_timeout: only a replace by that much.
    if not req.get("replace") or req["ttl_ms"] != ttl_ms:
        return {"ok": False, "error": f"tooz only renews to its lock_timeout ({ttl_ms} ms from now)"}
    return {"ok": bool(lock.heartbeat())}


version = importlib.metadata.version("tooz")
say({"ready": True, "library": f"tooz {version}", "fencing": False,
     "algorithm": "redis-py's Lock: SET NX PX (whole seconds) with a random token, Lua compare-and-delete "
                  "release; heartbeat() renews to lock_timeout" + (", every half TTL" if params.get("heartbeat") else
                                                                    " (not called: no heart)")})
for line in sys.stdin:
    req = json.loads(line)
    try:
        answer = {"acquire": acquire, "release": release, "extend": extend}[req["op"]](req)
    except (tooz.ToozError, redis.exceptions.RedisError, OSError) as e:
        answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    say(answer)
coordinator.stop()
