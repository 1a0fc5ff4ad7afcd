#!/usr/bin/python3
"""lockbench adapter for the lock etcd itself offers: the v3 Lock RPC (the one Jepsen's etcd
3.4.3 analysis tested), through etcd's JSON gateway, with Python's standard library only.

Speaks lockbench's adapter protocol (docs/adapters.md), as adapters/redis_py_lock.py
does. Debian's python3-etcd3 is not used: it talks to one endpoint, never keeps a lease alive
and leaks a lease per failed attempt. Here:

  acquire ── lease/grant (TTL s) ── lock/lock (bounded wait) ── kv/range: create_revision
                 │                     │ timed out: lease/revoke (its waiter key goes too)
                 └ keepalive thread ── lease/keepalive every TTL/3, from the grant until
                                       release or a failed acquire (a waiter's lease lives
                                       while it waits, as etcd's own Session keeps it)
  release ── kv/deleterange (deleted 1: removed_on [0]; 0: "lost") ── stop keepalive ── lease/revoke

Every request goes to the current member and moves on to the next one when it cannot
connect or times out (or the member says it has no leader), so a paused or killed member
costs a command timeout, not the answer; client i starts at member i (mod their number), so
that a paused member delays only some clients. Every answer comes within LOCKBENCH_OP_TIMEOUT_MS:
an acquire or release shares a budget of 3/4 of it among its requests.

Parameters (the run's params): ttl_ms, rounded up to whole seconds (etcd's lease TTL is whole
seconds, and etcd grants no less than its minimum, 1 s with lockbench's timings);
lock_wait_ms, how long the Lock RPC may wait for a holder to let go before the answer is
"held" (default: LOCKBENCH_COMMAND_TIMEOUT_MS; lockbench itself passes only ttl_ms and
fence for now). When stdin closes while it holds the lock, it revokes the lease.
"""
import base64
import http.client
import json
import math
import os
import sys
import threading
import time

sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
from lockbench_adapter import env, not_ready, ready, serve

NODES = env.nodes
COMMAND_S = env.command_timeout_ms / 1000
BUDGET_S = env.op_timeout_ms / 1000 * 0.75
LOCK_WAIT_S = env.params.get("lock_wait_ms", COMMAND_S * 1000) / 1000
# gRPC codes etcd answers with when this member cannot serve now: another member may.
UNAVAILABLE, DEADLINE_EXCEEDED = 14, 4


class Unreachable(Exception):
    """No member answered in time."""


class EtcdError(Exception):
    """A member answered with an error (a lease not found, ...): args (message, gRPC code)."""

    def __str__(self):
        return str(self.args[0])


def post_once(node, path, body, timeout_s):
    conn = http.client.HTTPConnection(*node, timeout=timeout_s)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = json.loads(resp.read() or b"{}")
    finally:
        conn.close()
    if resp.status != 200 or "error" in answer:
        # A unary call's error is {"error": "...", "message": "...", "code": 5}; a stream's
        # (keepalive) is {"error": {"message": ..., "code": ...}}.
        err = answer["error"] if isinstance(answer.get("error"), dict) else answer
        raise EtcdError(err.get("message") or f"HTTP {resp.status}", err.get("code"))
    return answer


class Endpoints:
    """Failover across every member: its own cursor, so the keepalive thread has its own."""

    def __init__(self, first):
        self.current = first % len(NODES)

    def post(self, path, body, deadline, timeout_s=COMMAND_S, retry_timeouts=True):
        last = "out of time"
        for _ in NODES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            node = NODES[self.current]
            try:
                return post_once(node, path, body, min(timeout_s, left))
            except ConnectionRefusedError as e:  # nothing was sent: any member may take it
                last = f"{node[0]}:{node[1]}: {e}"
            except (OSError, http.client.HTTPException) as e:
                if not retry_timeouts:
                    raise
                last = f"{node[0]}:{node[1]}: {type(e).__name__}: {e}"
            except EtcdError as e:
                if e.args[1] not in (UNAVAILABLE, DEADLINE_EXCEEDED):
                    raise
                last = f"{node[0]}:{node[1]}: {e.args[0]}"
            self.current = (self.current + 1) % len(NODES)
        raise Unreachable(last)


def b64(text):
    return base64.b64encode(text.encode()).decode()


class KeepAlive(threading.Thread):
    """Keeps a lease alive every TTL/3, from its grant until release (or a failed acquire). A beat that reaches no member
    is tried again at the next beat (the lease may outlive a short election); a member's answer
    without a TTL means the lease is gone, and the thread ends: the key went with it, which
    release then reports (removed_on []). The protocol cannot tell lockbench any sooner."""

    def __init__(self, lease_id, ttl_s, first):
        super().__init__(daemon=True)
        self.lease_id, self.beat_s, self.endpoints = lease_id, ttl_s / 3, Endpoints(first)
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.beat_s):
            try:
                answer = self.endpoints.post("/v3/lease/keepalive", {"ID": self.lease_id},
                                             time.monotonic() + self.beat_s, min(COMMAND_S, self.beat_s))
            except Exception:  # noqa: BLE001: any failed beat (even a garbled answer) is tried again
                continue
            if int(answer.get("result", {}).get("TTL", 0)) <= 0:
                return


endpoints = Endpoints(max(0, env.client or 0))
held = None  # (lock key, lease id, KeepAlive) while held


def revoke(lease_id, deadline, ttl_s=1):
    """A lease that no member revokes in time (an election: no member can serve) would hold
    its key, and with it perhaps the lock, for a whole TTL, which a new leader starts afresh;
    so a background thread keeps trying on every member until the lease is gone or two TTLs
    have passed (measured in consensus-leader-crash-busy: without it, a waiter cut short by
    the election kept the lock from everyone for its 4 s TTL after the new leader was up)."""
    try:
        endpoints.post("/v3/lease/revoke", {"ID": lease_id}, deadline)
    except EtcdError:
        pass  # not found: already gone
    except Unreachable:
        threading.Thread(target=revoke_later, args=(lease_id, time.monotonic() + 2 * ttl_s), daemon=True).start()


def revoke_later(lease_id, until):
    retry = Endpoints(endpoints.current + 1)
    while time.monotonic() < until:
        try:
            retry.post("/v3/lease/revoke", {"ID": lease_id}, min(until, time.monotonic() + 1))
            return
        except EtcdError:
            return
        except Unreachable:
            time.sleep(0.05)


def lock_or_held(name, lease_id, ttl_s, deadline, keepalive):
    """The Lock RPC with a bounded wait: the key, or None when it waited in vain on a member
    that still answers (another client holds the lock). Raises Unreachable otherwise. A wait
    in vain stops the lease's keepalive before revoking it: a beat after a failed revoke would
    keep the refused waiter's key for another TTL."""
    at = endpoints.current
    try:
        answer = endpoints.post("/v3/lock/lock", {"name": b64(name), "lease": lease_id}, deadline,
                                max(0.001, min(LOCK_WAIT_S, deadline - time.monotonic())), retry_timeouts=False)
        return base64.b64decode(answer["key"]).decode()
    except (OSError, http.client.HTTPException) as e:
        keepalive.stopped.set()
        revoke(lease_id, deadline, ttl_s)  # its waiter key goes with its lease
        if endpoints.current != at:
            raise Unreachable(f"{NODES[at][0]}:{NODES[at][1]}: Lock: {type(e).__name__}: {e}")
        return None


def acquire(req):
    global held
    deadline = time.monotonic() + BUDGET_S
    ttl_s = max(1, math.ceil(req["ttl_ms"] / 1000))
    lease = endpoints.post("/v3/lease/grant", {"TTL": ttl_s}, deadline)
    lease_id, granted_s = lease["ID"], int(lease["TTL"])
    # Kept alive while it waits too: a waiter whose lease ran out inside a long Lock call was
    # granted the lock with a dead lease, its key already gone, and overlapped the next holder.
    keepalive = KeepAlive(lease_id, granted_s, endpoints.current)
    keepalive.start()
    try:
        key = lock_or_held(req["key"], lease_id, granted_s, deadline, keepalive)
        if key is None:
            return {"ok": False, "error": "held"}
        kvs = endpoints.post("/v3/kv/range", {"key": b64(key)}, deadline).get("kvs", [])
        fence = int(kvs[0]["create_revision"]) if kvs else None
    except Exception:  # a malformed answer too: nothing of this lease outlives the attempt
        keepalive.stopped.set()
        revoke(lease_id, deadline, granted_s)
        raise
    if fence is None:  # the lease ran out between the Lock and the range
        keepalive.stopped.set()
        revoke(lease_id, deadline, granted_s)
        return {"ok": False, "error": "lock lost before its fence was read"}
    held = (key, lease_id, keepalive)
    # No validity_ms: the keepalive thread renews the lease for as long as it reaches a member.
    return {"ok": True, "token": key, "fence": fence, "nodes": [0]}


def release(req):
    global held
    if held is None:
        return {"ok": False, "error": "not held"}
    (key, lease_id, keepalive), held = held, None
    deadline = time.monotonic() + BUDGET_S
    try:  # Unlock is a plain delete of the key on the server: deleterange says whether it was there
        deleted = int(endpoints.post("/v3/kv/deleterange", {"key": b64(key)}, deadline).get("deleted", 0))
    finally:
        keepalive.stopped.set()
        revoke(lease_id, deadline, round(keepalive.beat_s * 3))
    if deleted != 1:  # its lease ran out (the holder was paused or cut off): the key went with it
        return {"ok": False, "error": "lost: the lock key was gone (its lease had expired)"}
    return {"ok": True, "removed_on": [0]}


def server_version():
    for node in NODES:
        try:
            conn = http.client.HTTPConnection(*node, timeout=COMMAND_S * 5)
            conn.request("GET", "/version")
            return json.loads(conn.getresponse().read())["etcdserver"]
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            continue
    return None


def on_close():
    if held is not None:  # stdin closed while holding: let the lock go now rather than in a TTL
        revoke(held[1], time.monotonic() + BUDGET_S)


version = server_version()
if version is None:
    not_ready("no etcd member answered GET /version at " + ",".join("%s:%d" % node for node in NODES))
ready(f"etcd v3 lock API (JSON gateway) {version}",
      "etcd's Lock RPC: a key under the lease, granted in revision order; held while the lease is kept alive",
      fencing=True)
serve(acquire=acquire, release=release, on_close=on_close)  # no extend: etcd's lease is kept alive
