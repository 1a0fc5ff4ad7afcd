"""lockbench's adapter protocol for a Python lock library (docs/adapters.md), stdlib only.

The protocol: lockbench starts the adapter with its settings in LOCKBENCH_* variables; the
adapter's first stdout line is {"ready": true, "library": ..., "algorithm": ..., "fencing": ...}
(or {"ready": false, "error": ...} and exit 1); then it reads one JSON request a line on stdin
(acquire, release, extend), one at a time, and answers each with one line {"ok": ..., ...};
{"event": "lost", "detail": ...} may come at any time, unasked. It exits when stdin closes.
stdout carries only those lines; logs and tracebacks go to stderr.

This module does all of that: `env` (the settings, parsed), `ready`, `not_ready`, `missing`,
`serve` (the request loop: a handler's return value is its answer; one that raises answers
{"ok": false, "error": "<Type>: <message>"}, as does an unknown op or a line that is not JSON,
and the loop goes on; stdin closed: on_close(), then exit 0), `lost`/`event`/`say` (one lock
around every stdout write: a thread's event never interleaves with an answer). On import it
sends print() and other stray stdout writes to stderr, and logs exceptions of other threads
(a library's timer or heartbeat) to stderr, never ending the adapter. An exception before
the ready line becomes the not-ready line. An adapter finds this file through LOCKBENCH_KIT
(the folder lockbench gives every adapter), else by its own path:

    import os, sys
    sys.path.insert(0, os.environ.get("LOCKBENCH_KIT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kit"))
    from lockbench_adapter import env, missing, ready, serve
    try:
        import mylock
    except ImportError:
        missing("mylock", "apt-get install python3-mylock")
    client = mylock.Client(*env.nodes[0], timeout=env.command_timeout_ms / 1000)
    ready(f"mylock {mylock.__version__}", "SET NX PX with a random token, Lua release")
    serve(acquire=lambda req: {"ok": True, "token": client.lock(req["key"], req["ttl_ms"])},
          release=lambda req: {"ok": client.unlock()})
"""
import json
import os
import runpy
import sys
import threading
import traceback

__all__ = ["env", "ready", "not_ready", "missing", "serve", "say", "lost", "event", "describe"]

_out = sys.stdout  # the protocol's stream
sys.stdout = sys.stderr  # print() and a library's stray output: logs, never protocol
_out_lock = threading.Lock()
_ready_said = False


def say(obj):
    """Writes one protocol line, whole, from any thread."""
    line = json.dumps(obj) + "\n"
    with _out_lock:
        _out.write(line)
        _out.flush()


def describe(e):
    """An exception as an answer's error text: "<Type>: <message>"."""
    return f"{type(e).__name__}: {e}"


def _exit(status):
    for stream in (_out, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)  # a library's threads must not keep the adapter alive


def not_ready(error):
    """The first line says why the adapter cannot run; exit 1."""
    say({"ready": False, "error": error})
    _exit(1)


def missing(what, how):
    """A library that is not installed: "<what> is missing: <how>" (how installs it)."""
    not_ready(f"{what} is missing: {how}")


def ready(library, algorithm, fencing=False, **extra):
    """The ready line: library "NAME VERSION" (read from the package), algorithm in one line.

    During a reset it is the reset's answer instead."""
    global _ready_said
    described = {"library": library, "algorithm": algorithm, "fencing": fencing, **extra}
    if _resetting is not None:
        _resetting["described"] = described
        return
    say({"ready": True, **described})
    _ready_said = True


def event(kind, **fields):
    """An unsolicited line, {"event": kind, ...}, at any time, from any thread."""
    say({"event": kind, **fields})


def lost(detail):
    """The library says the lock is lost."""
    event("lost", detail=detail)


_SETTINGS = ["LOCKBENCH_" + n for n in ("NODES", "KEY", "CLIENT", "TTL_MS", "PARAMS", "COMMAND_TIMEOUT_MS", "OP_TIMEOUT_MS",
                                         "CONNECT_TIMEOUT_MS", "SENTINELS", "MASTER_NAME", "ADDRESS_MAP", "USER",
                                         "PASSWORD", "DATABASE")]
_resetting = None  # during a reset: what the adapter's file, run again, said and served


def serve(on_close=None, kept=False, **handlers):
    """Answers requests in order, one at a time, until stdin closes; then on_close(), exit 0.

    handlers: op name -> function(request dict) -> answer dict.

    kept=True says the adapter may be kept across repetitions (lockbench's matrix keeps it
    rather than start a Python for every client of every run): on_close() drops everything
    its library holds (connections, threads, state), and running the adapter's file again
    builds everything anew. Then {"op": "reset"} at a run's end has on_close() drop it all,
    the adapter waiting and holding nothing; {"op": "reset", "env": {LOCKBENCH_*: ...}} readies
    it for another run: `env` takes the new settings and the adapter's file runs again (the
    modules it imports stay loaded: that is the start-up saved), its ready() and serve() making
    the reset's answer {"ok": true, "library": ..., ...} and the handlers from then on. Without
    kept (or on_close), a reset answers {"ok": false, ...}, and lockbench starts a new adapter
    for each run.
    """
    if _resetting is not None:  # the file run again by a reset: its handlers, taken there
        _resetting["served"] = {"on_close": on_close, "kept": kept, "handlers": handlers, "closed": False}
        return
    current = {"on_close": on_close, "kept": kept, "handlers": handlers, "closed": False}
    for line in sys.stdin:
        answer = _reset(current, line)
        if answer is None:
            answer = _answer(current["handlers"], line)
        elif "_served" in answer:
            current = answer.pop("_served")
        try:
            say(answer)
        except (TypeError, ValueError) as e:  # an answer JSON cannot carry
            say({"ok": False, "error": describe(e)})
    if current["on_close"] is not None and not current["closed"]:
        try:
            current["on_close"]()
        except Exception:  # noqa: BLE001: the answers are all given; the exit stays clean
            traceback.print_exc(file=sys.stderr)
    _exit(0)


def _reset(current, line):
    """The answer to a reset request, or None if the line is not one."""
    global _resetting
    try:
        req = json.loads(line)
    except ValueError:
        return None
    if not isinstance(req, dict) or req.get("op") != "reset":
        return None
    if not current["kept"] or current["on_close"] is None:
        return {"ok": False, "error": "reset is not supported: the adapter does not serve(kept=True, on_close=...)"}
    try:
        if not current["closed"]:
            current["on_close"]()
            current["closed"] = True
        if "env" not in req:  # the run's end: nothing held until the next
            return {"ok": True}
        if not isinstance(req["env"], dict):
            return {"ok": False, "error": "reset: env is not an object"}
        for name in _SETTINGS:  # the last run's, which this one may not have (a Sentinel's)
            os.environ.pop(name, None)
        os.environ.update({k: str(v) for k, v in req["env"].items()})
        env.__init__(os.environ)  # the same object every run of the file imported
        _resetting = {}
        runpy.run_path(sys.argv[0], run_name="__main__")
        said = _resetting
    except Exception as e:  # noqa: BLE001: the reset failed; lockbench starts a new adapter
        return {"ok": False, "error": "reset: " + describe(e)}
    finally:
        _resetting = None
    if "described" not in said or "served" not in said:
        return {"ok": False, "error": "reset: the adapter did not say ready and serve"}
    return {"ok": True, **said["described"], "_served": said["served"]}


def _answer(handlers, line):
    try:
        req = json.loads(line)
    except ValueError:
        return {"ok": False, "error": "not JSON: " + line.strip()[:200]}
    if not isinstance(req, dict) or not isinstance(req.get("op"), str):
        return {"ok": False, "error": "not a request (no op): " + line.strip()[:200]}
    handler = handlers.get(req["op"])
    if handler is None:
        return {"ok": False, "error": f"{req['op']} is not supported"}
    try:
        answer = handler(req)
    except Exception as e:  # noqa: BLE001: a request that fails fails alone
        return {"ok": False, "error": describe(e)}
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        return {"ok": False, "error": f"{req['op']} answered {answer!r}, not {{\"ok\": true|false, ...}}"}
    return answer


def _thread_failed(args):
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread else "?"
    sys.stderr.write(f"lockbench adapter: exception in thread {name} (the adapter goes on):\n")
    traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback, file=sys.stderr)


def _main_failed(exc_type, exc_value, exc_traceback):
    traceback.print_exception(exc_type, exc_value, exc_traceback, file=sys.stderr)
    if not _ready_said and not issubclass(exc_type, KeyboardInterrupt):
        say({"ready": False, "error": describe(exc_value)})
    _exit(1)


threading.excepthook = _thread_failed
sys.excepthook = _main_failed


class Env:
    """The settings lockbench gives every adapter. An absent number is None."""

    def __init__(self, environ):
        def number(name):
            text = environ.get(name)
            return int(text) if text else None

        def addresses(name):
            return [_address(a) for a in environ.get(name, "").split(",") if a]

        self.nodes = addresses("LOCKBENCH_NODES")  # [(host, port)], node 0 first
        self.key = environ.get("LOCKBENCH_KEY")
        self.client = number("LOCKBENCH_CLIENT")  # -1: the start-up check
        self.ttl_ms = number("LOCKBENCH_TTL_MS")
        self.params = json.loads(environ.get("LOCKBENCH_PARAMS") or "{}")
        if not isinstance(self.params, dict):
            raise ValueError(f"LOCKBENCH_PARAMS is not an object: {self.params!r}")
        self.command_timeout_ms = number("LOCKBENCH_COMMAND_TIMEOUT_MS")
        self.op_timeout_ms = number("LOCKBENCH_OP_TIMEOUT_MS")
        self.connect_timeout_ms = number("LOCKBENCH_CONNECT_TIMEOUT_MS")
        # Under Sentinel: where to ask for the master, and this client's own path to each
        # address the Sentinels may name ("host:port" -> (host, port)).
        self.sentinels = addresses("LOCKBENCH_SENTINELS")
        self.master_name = environ.get("LOCKBENCH_MASTER_NAME")
        self.address_map = {k: _address(v) for k, v in json.loads(environ.get("LOCKBENCH_ADDRESS_MAP") or "{}").items()}
        # A service that takes a login (PostgreSQL): its user, password and database.
        self.user = environ.get("LOCKBENCH_USER")
        self.password = environ.get("LOCKBENCH_PASSWORD")
        self.database = environ.get("LOCKBENCH_DATABASE")

    def own_path(self, host, port):
        """This client's own path to an address a Sentinel named."""
        return self.address_map.get(f"{host}:{port}", (host, int(port)))


def _address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


try:
    env = Env(os.environ)
except ValueError as e:  # a malformed setting: nothing can run
    not_ready(f"lockbench's environment: {describe(e)}")
