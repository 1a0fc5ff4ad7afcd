#!/usr/bin/python3
"""lockbench adapter for OpenStack tooz's Redis driver (Debian: python3-tooz 3.1.0).

Speaks lockbench's adapter protocol (docs/adapters.md), as adapters/redis_py_lock.py
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
import importlib.metadata
import logging
import math
import os
import sys

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, lost, missing, not_ready, ready, serve

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
    import redis.sentinel
    import tooz
    from tooz import coordination
except ImportError:  # the first line says why, and what installs it
    missing("tooz", "apt-get install python3-tooz")

ttl_ms = env.ttl_ms
if ttl_ms % 1000:
    not_ready(f"tooz's lock_timeout is whole seconds: ttl_ms {ttl_ms} is not")
socket_timeout_s = math.ceil(env.command_timeout_ms / 1000)


class OwnPathSentinel(redis.sentinel.Sentinel):
    """tooz asks redis.sentinel.Sentinel for the master: reach it by this client's own path."""

    def discover_master(self, name):
        return env.own_path(*super().discover_master(name))


def backend_url():
    query = f"lock_timeout={ttl_ms // 1000}&socket_timeout={socket_timeout_s}"
    if not env.sentinels:
        return "redis://%s:%d?%s" % (*env.nodes[0], query)
    # tooz's own sentinel option: the first Sentinel in the URL, the others as fallbacks.
    redis.sentinel.Sentinel = OwnPathSentinel  # the module attribute tooz's driver calls
    first, *rest = ["%s:%d" % s for s in env.sentinels]
    fallbacks = "".join(f"&sentinel_fallback={s}" for s in rest)
    return f"redis://{first}?sentinel={env.master_name}{fallbacks}&{query}"


class LostLock(logging.Handler):
    """tooz's heartbeat reports a lock it could not renew only as a log warning."""

    def emit(self, record):
        if record.getMessage().startswith("Unable to heartbeat lock"):
            lost("tooz heartbeat: " + str(record.exc_info and record.exc_info[1]))


lost_lock = LostLock()
logging.getLogger("tooz.drivers.redis").addHandler(lost_lock)
coordinator = coordination.get_coordinator(backend_url(), f"lockbench-client-{env.client}".encode())
try:
    coordinator.start(start_heart=bool(env.params.get("heartbeat", False)))
except tooz.ToozError as e:  # start() asks the server for INFO: ready means connected
    not_ready(f"cannot reach Redis: {e}")
lock = None


def acquire(req):
    global lock
    lock = coordinator.get_lock(req["key"])
    if not lock.acquire(blocking=False):
        return {"ok": False, "error": "held"}
    # the key is tooz's own ("b'_tooz'_<K>_lock"): named for lockbench's probes
    return {"ok": True, "token": lock._lock.local.token.decode(), "nodes": [0], "key": lock._lock.name}


def release(req):
    if not lock.release():  # tooz logs the LockNotOwnedError and answers False
        return {"ok": False, "error": "not owned: the key was no longer ours"}
    return {"ok": True, "removed_on": [0]}


def extend(req):
    # heartbeat() puts the TTL back to the whole lock_timeout: only a replace by that much.
    if not req.get("replace") or req["ttl_ms"] != ttl_ms:
        return {"ok": False, "error": f"tooz only renews to its lock_timeout ({ttl_ms} ms from now)"}
    return {"ok": bool(lock.heartbeat())}


ready(f"tooz {importlib.metadata.version('tooz')}",
      "redis-py's Lock: SET NX PX (whole seconds) with a random token, Lua compare-and-delete release; "
      "heartbeat() renews to lock_timeout" + (", every half TTL" if env.params.get("heartbeat") else " (not called: no heart)"))


def close():
    """The coordinator stopped (its heartbeat with it) and this run's handler taken off tooz's
    logger (a kept adapter runs this file again, which adds its own): when stdin closes, and at
    a kept adapter's reset."""
    coordinator.stop()
    logging.getLogger("tooz.drivers.redis").removeHandler(lost_lock)


serve(acquire=acquire, release=release, extend=extend, on_close=close, kept=True)
