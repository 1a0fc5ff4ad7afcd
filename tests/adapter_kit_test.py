#!/usr/bin/python3
"""The Python adapter kit (adapters/kit/lockbench_adapter.py) with a fake library, no Redis.

A kit-based adapter whose handlers raise, whose thread and timer raise, and whose library
announces a lost lock from another thread while a request is being served: fed requests on
stdin, it must print the ready line first, answer every request (an error answer, never a
crash), keep every line whole, and exit 0 when stdin closes. The adapter waits for its own
threads with events and joins, so nothing depends on timing. Run by ctest.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters", "kit")

FAKE = r'''
import os, sys, threading
sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or "/nonexistent")
from lockbench_adapter import env, lost, ready, serve

class FakeLibrary:
    """A lock library in miniature: a lock, a heartbeat thread that finds it lost."""
    def __init__(self):
        self.holder = None

    def lock(self, key):
        if self.holder is not None:
            return False
        self.holder = key
        return True

lib = FakeLibrary()
print("a library's chatter on stdout")  # must end up on stderr

def acquire(req):
    if not lib.lock(req["key"]):
        return {"ok": False, "error": "held"}
    return {"ok": True, "token": "t-" + req["key"], "nodes": [0]}

def boom(req):
    raise ValueError("the library failed")

def thread_raises(req):
    t = threading.Thread(target=lambda: 1 / 0, name="heartbeat")
    t.start()
    t.join()
    return {"ok": True}

def timer_raises(req):
    t = threading.Timer(0, lambda: [][1])
    t.start()
    t.join()
    return {"ok": True}

def lost_while_serving(req):
    # The library's thread announces the loss while this request is being served: its lines
    # come before the answer.
    t = threading.Thread(target=lambda: [lost("while serving %d" % i) for i in range(3)])
    t.start()
    t.join()
    return {"ok": True}

heartbeat = None

def start_heartbeat(req):
    # From now on the library's thread announces the loss over and over, with long details,
    # while the main thread answers the next requests: no line may interleave with another.
    global heartbeat
    heartbeat = threading.Thread(target=lambda: [lost("beat %d: " % i + "x" * req["size"]) for i in range(req["n"])])
    heartbeat.start()
    return {"ok": True}

def join_heartbeat(req):
    heartbeat.join()
    return {"ok": True, "joined": True}

def not_an_answer(req):
    return "yes"

def show_env(req):
    return {"ok": True, "nodes": env.nodes, "key": env.key, "client": env.client, "ttl_ms": env.ttl_ms,
            "params": env.params, "command_timeout_ms": env.command_timeout_ms,
            "op_timeout_ms": env.op_timeout_ms, "connect_timeout_ms": env.connect_timeout_ms,
            "sentinels": env.sentinels, "master_name": env.master_name,
            "own_path": env.own_path("10.0.0.1", 6379), "unmapped": env.own_path("10.0.0.9", "7000")}

ready("fake-lock 1.0", "a dict in memory", fencing=True)
serve(acquire=acquire, boom=boom, thread_raises=thread_raises, timer_raises=timer_raises,
      lost_while_serving=lost_while_serving, start_heartbeat=start_heartbeat,
      join_heartbeat=join_heartbeat, not_an_answer=not_an_answer, show_env=show_env,
      on_close=lambda: sys.stderr.write("closed cleanly\n"), kept=True)
'''

BASE_ENV = {"LOCKBENCH_NODES": "127.0.0.1:7001,127.0.0.1:7002", "LOCKBENCH_KEY": "lock", "LOCKBENCH_CLIENT": "3",
            "LOCKBENCH_TTL_MS": "500", "LOCKBENCH_PARAMS": '{"fence": true, "variant": "x"}',
            "LOCKBENCH_COMMAND_TIMEOUT_MS": "200", "LOCKBENCH_OP_TIMEOUT_MS": "2000",
            "LOCKBENCH_CONNECT_TIMEOUT_MS": "1000", "LOCKBENCH_SENTINELS": "127.0.0.1:8001",
            "LOCKBENCH_MASTER_NAME": "lockbench", "LOCKBENCH_ADDRESS_MAP": '{"10.0.0.1:6379": "127.0.0.1:9001"}'}


class AdapterKit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.adapter = os.path.join(self.dir.name, "fake_adapter.py")
        with open(self.adapter, "w") as f:
            f.write(FAKE)

    def tearDown(self):
        self.dir.cleanup()

    def run_adapter(self, requests, source=None, **env):
        path = self.adapter
        if source is not None:
            path = os.path.join(self.dir.name, "other_adapter.py")
            with open(path, "w") as f:
                f.write(source)
        environ = {k: v for k, v in os.environ.items() if not k.startswith("LOCKBENCH_")}
        environ.update(BASE_ENV, LOCKBENCH_KIT=KIT, PYTHONDONTWRITEBYTECODE="1", **env)
        text = "".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in requests)
        p = subprocess.run([sys.executable, path], input=text, capture_output=True, text=True, env=environ,
                           timeout=20)
        lines = [json.loads(line) for line in p.stdout.splitlines()]  # every line whole JSON
        return p, lines

    def test_requests_errors_and_events(self):
        p, lines = self.run_adapter([
            {"op": "acquire", "key": "k", "ttl_ms": 500, "wait_ms": 0},
            {"op": "acquire", "key": "k", "ttl_ms": 500, "wait_ms": 0},
            {"op": "boom"},
            {"op": "thread_raises"},
            {"op": "timer_raises"},
            {"op": "lost_while_serving"},
            {"op": "not_an_answer"},
            {"op": "extend", "key": "k", "ttl_ms": 500, "replace": True},
            "this is not JSON\n",
            "[1, 2]\n",
            {"op": "acquire", "key": "k", "ttl_ms": 500, "wait_ms": 0},
        ])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(lines[0], {"ready": True, "library": "fake-lock 1.0", "algorithm": "a dict in memory",
                                    "fencing": True})
        self.assertEqual(lines[1:], [
            {"ok": True, "token": "t-k", "nodes": [0]},
            {"ok": False, "error": "held"},
            {"ok": False, "error": "ValueError: the library failed"},
            {"ok": True},
            {"ok": True},
            {"event": "lost", "detail": "while serving 0"},
            {"event": "lost", "detail": "while serving 1"},
            {"event": "lost", "detail": "while serving 2"},
            {"ok": True},
            {"ok": False, "error": "not_an_answer answered 'yes', not {\"ok\": true|false, ...}"},
            {"ok": False, "error": "extend is not supported"},
            {"ok": False, "error": "not JSON: this is not JSON"},
            {"ok": False, "error": "not a request (no op): [1, 2]"},
            {"ok": False, "error": "held"},
        ])
        # The threads' exceptions were logged, and the adapter went on; stray output is a log.
        self.assertIn("ZeroDivisionError", p.stderr)
        self.assertIn("IndexError", p.stderr)
        self.assertIn("a library's chatter on stdout", p.stderr)
        self.assertIn("closed cleanly", p.stderr)

    def test_events_from_a_thread_never_interleave_with_answers(self):
        n, size, asked = 300, 3000, 300
        requests = [{"op": "start_heartbeat", "n": n, "size": size}]
        requests += [{"op": "acquire", "key": "k%d" % i, "ttl_ms": 500, "wait_ms": 0} for i in range(asked)]
        requests += [{"op": "join_heartbeat"}]
        p, lines = self.run_adapter(requests)  # json.loads of every line: each one whole
        self.assertEqual(p.returncode, 0, p.stderr)
        events = [line for line in lines[1:] if "event" in line]
        answers = [line for line in lines[1:] if "event" not in line]
        self.assertEqual(events, [{"event": "lost", "detail": "beat %d: " % i + "x" * size} for i in range(n)])
        self.assertEqual(answers[0], {"ok": True})
        self.assertEqual(answers[1:-1], [{"ok": True, "token": "t-k0", "nodes": [0]}] +
                         [{"ok": False, "error": "held"}] * (asked - 1))
        self.assertEqual(answers[-1], {"ok": True, "joined": True})

    def test_reset_runs_the_file_again_with_the_new_settings(self):
        # A reset ends the library's state (on_close), gives `env` the new settings, and runs the
        # adapter's file again: its fresh state answers, the old lock is forgotten; a setting
        # the new run lacks (Sentinel's) is gone.
        new_env = {k: v for k, v in BASE_ENV.items() if k not in ("LOCKBENCH_SENTINELS", "LOCKBENCH_ADDRESS_MAP")}
        new_env.update(LOCKBENCH_KEY="other", LOCKBENCH_CLIENT="5", LOCKBENCH_NODES="127.0.0.1:7101")
        # A reset without env (a run's end) only closes; the reset that follows does not close again.
        p, lines = self.run_adapter([
            {"op": "acquire", "key": "k", "ttl_ms": 500, "wait_ms": 0},
            {"op": "reset"},
            {"op": "reset", "env": new_env},
            {"op": "show_env"},
            {"op": "acquire", "key": "k", "ttl_ms": 500, "wait_ms": 0},
        ])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(lines[1], {"ok": True, "token": "t-k", "nodes": [0]})
        self.assertEqual(lines[2], {"ok": True})
        self.assertEqual(lines[3], {"ok": True, "library": "fake-lock 1.0", "algorithm": "a dict in memory",
                                    "fencing": True})
        self.assertEqual((lines[4]["key"], lines[4]["client"], lines[4]["nodes"], lines[4]["sentinels"]),
                         ("other", 5, [["127.0.0.1", 7101]], []))
        self.assertEqual(lines[5], {"ok": True, "token": "t-k", "nodes": [0]}, "the lock of the run before was kept")
        self.assertEqual(p.stderr.count("closed cleanly"), 2, p.stderr)  # at the run's end, then at stdin's

    def test_an_adapter_not_kept_refuses_a_reset(self):
        self.assertIn("kept=True)", FAKE)
        source = FAKE.replace("kept=True)", "kept=False)")
        p, lines = self.run_adapter([{"op": "reset", "env": BASE_ENV},
                                     {"op": "acquire", "key": "k", "ttl_ms": 1, "wait_ms": 0}], source=source)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(lines[1]["ok"])
        self.assertIn("reset is not supported", lines[1]["error"])
        self.assertEqual(lines[2], {"ok": True, "token": "t-k", "nodes": [0]})

    def test_environment(self):
        p, lines = self.run_adapter([{"op": "show_env"}])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(lines[1], {
            "ok": True, "nodes": [["127.0.0.1", 7001], ["127.0.0.1", 7002]], "key": "lock", "client": 3,
            "ttl_ms": 500, "params": {"fence": True, "variant": "x"}, "command_timeout_ms": 200,
            "op_timeout_ms": 2000, "connect_timeout_ms": 1000, "sentinels": [["127.0.0.1", 8001]],
            "master_name": "lockbench", "own_path": ["127.0.0.1", 9001], "unmapped": ["10.0.0.9", 7000]})

    def test_absent_settings(self):
        p, lines = self.run_adapter([{"op": "show_env"}], LOCKBENCH_PARAMS="", LOCKBENCH_SENTINELS="",
                                    LOCKBENCH_ADDRESS_MAP="", LOCKBENCH_OP_TIMEOUT_MS="")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(lines[1]["params"], {})
        self.assertEqual(lines[1]["sentinels"], [])
        self.assertIsNone(lines[1]["op_timeout_ms"])

    def test_exit_on_eof_with_nothing_asked(self):
        p, lines = self.run_adapter([])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0]["ready"])

    def test_malformed_params_are_a_not_ready_line(self):
        p, lines = self.run_adapter([{"op": "acquire"}], LOCKBENCH_PARAMS="{not json")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(lines), 1)
        self.assertFalse(lines[0]["ready"])
        self.assertTrue(lines[0]["error"].startswith("lockbench's environment: JSONDecodeError: "), lines[0])

    def test_missing_library(self):
        source = ('import os, sys\nsys.path.insert(0, os.environ["LOCKBENCH_KIT"])\n'
                  'from lockbench_adapter import missing\n'
                  'try:\n    import no_such_lock_library\nexcept ImportError:\n'
                  '    missing("no-such-lock", "apt-get install python3-no-such-lock")\n'
                  'raise SystemExit("not reached")\n')
        p, lines = self.run_adapter([], source=source)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(lines, [{"ready": False,
                                  "error": "no-such-lock is missing: apt-get install python3-no-such-lock"}])

    def test_an_exception_before_ready_is_the_not_ready_line(self):
        source = ('import os, sys\nsys.path.insert(0, os.environ["LOCKBENCH_KIT"])\n'
                  'from lockbench_adapter import ready\n'
                  'raise ConnectionRefusedError("no server")\n')
        p, lines = self.run_adapter([], source=source)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(lines, [{"ready": False, "error": "ConnectionRefusedError: no server"}])
        self.assertIn("Traceback", p.stderr)


if __name__ == "__main__":
    unittest.main()
