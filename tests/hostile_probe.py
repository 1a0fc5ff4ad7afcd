#!/usr/bin/python3
"""Issue 47's promise, tried as a user or an attacker would: bad options, bad scenario files,
damaged results trees and misbehaving adapters. For each input the promise is:

  - a refusal exits 2 with exactly one line on stderr (nothing on stdout), that line escaped
    (no control or bidi character), bounded (under 1,000 characters), naming the option or the
    file and field (the piece each case gives);
  - it leaves nothing behind: no --out folder, no lock file, and no process it started;
  - a misbehaving adapter never becomes a verdict: the run exits 1 or 2 and says which adapter.

  tests/hostile_probe.py BUILD/lockbench      # prints each case that does not meet it; exit 1 if any

Each case runs in a fresh folder (under a minute in all on this project's machines).
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata

LB = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/lockbench")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "LOCKBENCH_PROBE_MARK"

VALID = {"name": "probe", "seed": 3,
         "workload": {"clients": 2, "duration_ms": 200, "work_ms": {"uniform": [0.5, 2]}, "retry_ms": {"uniform": [1, 3]}},
         "runs": [{"algorithm": "token-lua"}]}


def with_(path, value, base=None):
    """VALID (or base) with the field at `path` (a list of keys) set to value; None as a value deletes."""
    doc = json.loads(json.dumps(base or VALID))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def marked_processes(mark):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"{MARK}={mark}".encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def bad_chars(text):
    return [c for c in text if (unicodedata.category(c) in ("Cc", "Cf") and c != "\n")]


class Probe:
    def __init__(self):
        self.tried = 0
        self.unmet = []

    def case(self, label, args, *, files=None, piece="", exit_codes=(2,), one_line=True, out_absent=True,
             setup=None, check=None, timeout=60):
        self.tried += 1
        work = tempfile.mkdtemp(prefix="lbprobe-")
        try:
            for name, content in (files or {}).items():
                path = os.path.join(work, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                mode = "wb" if isinstance(content, bytes) else "w"
                with open(path, mode) as f:
                    f.write(content if isinstance(content, (str, bytes)) else json.dumps(content))
            if setup:
                setup(work)
            argv = [LB] + [a.replace("{w}", work) for a in args]
            env = dict(os.environ, **{MARK: work, "TMPDIR": work})  # adapters' leftovers stay in work
            started = time.monotonic()
            try:
                p = subprocess.run(argv, cwd=SRC, env=env, capture_output=True, timeout=timeout)
                code, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
            except subprocess.TimeoutExpired:
                code, out, err = "hung", "", ""
            took = time.monotonic() - started
            why = []
            if code not in exit_codes:
                why.append(f"exit {code}, expected {'/'.join(map(str, exit_codes))}")
            lines = err.splitlines()
            if one_line and code == 2:
                if len(lines) != 1:
                    why.append(f"{len(lines)} lines on stderr")
                if out.strip():
                    why.append("something on stdout")
            if piece and piece not in err:
                why.append(f"stderr does not name {piece!r}")
            if bad_chars(err):
                why.append("a control or bidi character on stderr")
            if any(len(line) >= 1000 for line in lines):
                why.append("a line of 1,000 characters or more")
            if out_absent and code == 2 and os.path.exists(os.path.join(work, "out")):
                why.append("--out was written")
            if check and (problem := check(work)):
                why.append(problem)
            if os.path.exists(os.path.join(SRC, ".lockbench.lock")):
                why.append("a lock file left in the source folder")
            deadline = time.monotonic() + 5
            left = marked_processes(work)
            while left and time.monotonic() < deadline:
                time.sleep(0.05)
                left = marked_processes(work)
            if left:
                why.append(f"{len(left)} process(es) left running")
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            if why:
                self.unmet.append((label, "; ".join(why), (lines[-1] if lines else "")[:300], took))
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main():
    pr = Probe()
    scen = ["run", "{w}/s.json", "--backend", "sim", "--out", "{w}/out"]

    # ---- options ----------------------------------------------------------------------------
    for args, piece in [
        (["frobnicate"], "frobnicate"), (["--frobnicate"], "--frobnicate"),
        (["run", "--frobnicate", "x"], "--frobnicate"), (["matrix", "--repeat", "-1"], "--repeat"),
        (["matrix", "--repeat", "0"], "--repeat"), (["matrix", "--repeat", "2147483647"], "--repeat"),
        (["matrix", "--repeat", "abc"], "--repeat"), (["matrix", "--repeat", "1e400"], "--repeat"),
        (["matrix", "--jobs", "0"], "--jobs"), (["matrix", "--jobs", "17"], "--jobs"), (["matrix", "--jobs", "x"], "--jobs"),
        (["matrix", "--time-budget-s", "nan"], "--time-budget-s"), (["matrix", "--time-budget-s", "inf"], "--time-budget-s"),
        (["matrix", "--time-budget-s", "-5"], "--time-budget-s"), (["matrix", "--time-budget-s", "1e400"], "--time-budget-s"),
        (["matrix", "--shard", "1/0"], "--shard"), (["matrix", "--shard", "3/2"], "--shard"), (["matrix", "--shard", "a/b"], "--shard"),
        (["matrix", "--backend", "quantum"], "--backend"), (["matrix", "--lock", "no-such-lock"], "no-such-lock"),
        (["run", "{w}/s.json", "--seed", "18446744073709551616"], "--seed"), (["run", "{w}/s.json", "--seed", "-1"], "--seed"),
        (["run", "{w}/s.json", "--seed", "1e400"], "--seed"), (["run", "{w}/s.json", "--out", ""], "--out"),
        (["verdict", "no-such-lock"], "no-such-lock"), (["verdict", "locks/token-lua.json", "--repeat", "2147483647"], "--repeat"),
        (["verdict", "locks/token-lua.json", "--out", ""], "--out"), (["report", "{w}/nothing"], "nothing"),
        (["check", "{w}/nothing"], "nothing"), (["adapter-check", "no-such-lock"], "no-such-lock"),
        (["list", "--lock", "no-such-lock"], "no-such-lock"), (["explore", "{w}/s.json", "--schedules", "-3"], "--schedules"),
        (["sweep", "{w}/s.json"], "--param"), (["help", "no-such-page"], "no-such-page"),
    ]:
        pr.case("option " + " ".join(args), args, files={"s.json": VALID}, piece=piece)
    pr.case("--out through a shell's eyes", ["verdict", "locks/token-lua.json", "--out", "{w}/d;touch {w}/X", "--repeat", "0"],
            piece="--repeat")
    pr.case("--out with a newline", ["run", "{w}/s.json", "--backend", "sim", "--out", "{w}/a\nb/out"], exit_codes=(0,),
            files={"s.json": VALID}, out_absent=False)
    pr.case("--out under a file", ["run", "{w}/s.json", "--backend", "sim", "--out", "{w}/f/out"],
            files={"s.json": VALID, "f": "x"}, piece="{}".format(""))
    pr.case("a 100 KB path", ["run", "/" + "a" * 100000 + ".json"], piece="")
    pr.case("a bidi character in a file name", ["run", "{w}/\u202eevil.json"], piece="\\u202e")

    # ---- scenario files ---------------------------------------------------------------------
    bad_values = {"-1": -1, "2^64": 18446744073709551616, "1e400": "1e400", "a string": "x", "null": None,
                  "an array": [], "an object": {}, "true": True}
    fields = [["seed"], ["workload", "clients"], ["workload", "duration_ms"], ["workload", "until_sections"],
              ["workload", "sections_per_client"], ["workload", "start_stagger_ms"], ["client", "command_timeout_ms"],
              ["base_port"], ["ttl_ms"]]
    for field in fields:
        for label, value in bad_values.items():
            base = VALID if field[0] != "client" else with_(["client"], {"command_timeout_ms": 10})
            doc = with_(field, value, base)
            text = json.dumps(doc).replace('"1e400"', "1e400") if value == "1e400" else json.dumps(doc)
            if field == ["seed"] and label in ("true",):
                continue
            pr.case(f"{'.'.join(field)} = {label}", scen, files={"s.json": text}, piece=field[-1])
    for label, doc, piece in [
        ("an unknown field", with_(["frobnicate"], 1), "frobnicate"),
        ("an unknown workload field", with_(["workload", "frobnicate"], 1), "frobnicate"),
        ("runs: []", with_(["runs"], []), "runs"),
        ("runs: a string", with_(["runs"], "x"), "runs"),
        ("an unknown algorithm", with_(["runs"], [{"algorithm": "quantum"}]), "quantum"),
        ("an unknown parameter", with_(["runs"], [{"algorithm": "token-lua", "params": {"frob": 1}}]), "frob"),
        ("node_timeout_ms 0", with_(["runs"], [{"algorithm": "redlock", "params": {"node_timeout_ms": 0}}]), "node_timeout_ms"),
        ("ttl_ms 0", with_(["runs"], [{"algorithm": "token-lua", "params": {"ttl_ms": 0}}]), "ttl_ms"),
        ("two runs of one name", with_(["runs"], [{"algorithm": "token-lua"}, {"algorithm": "token-lua"}]), "name"),
        ("a name with a newline", with_(["name"], "a\nb"), "name"),
        ("a name with a bidi character", with_(["name"], "a\u202eb"), "name"),
        ("a name of 100 KB", with_(["name"], "n" * 100000), "name"),
        ("a fault of no kind", with_(["faults"], [{"fault": "meteor", "at_ms": 10}]), "meteor"),
        ("a pause with no duration", with_(["faults"], [{"fault": "pause", "at_ms": 10, "client": 0}]), "duration_ms"),
        ("a pause past the run", with_(["faults"], [{"fault": "pause", "at_ms": 150, "client": 0, "duration_ms": 5000}]), "duration_ms"),
        ("a fault on client 9", with_(["faults"], [{"fault": "pause", "at_ms": 10, "client": 9, "duration_ms": 5}]), "client"),
        ("an unknown point", with_(["faults"], [{"fault": "pause", "point": "nowhere", "client": 0, "duration_ms": 5}]), "nowhere"),
        ("explore.fixed naming no fault", with_(["explore"], {"fixed": ["faults.3.at_ms"]}), "explore.fixed"),
        ("explore.fixed not a path", with_(["explore"], {"fixed": ["rm -rf /"]}), "explore.fixed"),
        ("a distribution drawing infinity", with_(["workload", "work_ms"], {"exponential": 1e308}), "work_ms"),
        ("a uniform upside down", with_(["workload", "work_ms"], {"uniform": [5, 1]}), "work_ms"),
        ("an expectation in no language", with_(["runs"], [{"algorithm": "token-lua", "expect": {"sections_completed": "about 3"}}]), "sections_completed"),
        ("an expectation of no metric", with_(["runs"], [{"algorithm": "token-lua", "expect": {"happiness": ">= 1"}}]), "happiness"),
        ("an external run with no command", with_(["runs"], [{"algorithm": "external", "name": "x"}]), "command"),
        ("an external run with an empty command", with_(["runs"], [{"algorithm": "external", "name": "x", "command": []}]), "command"),
        ("a service of no kind", with_(["runs"], [{"algorithm": "token-lua", "service": "mongodb"}]), "mongodb"),
        ("a resource check of no kind", with_(["runs"], [{"algorithm": "token-lua", "resource_check": "psychic"}]), "psychic"),
        ("a renewal with no period", with_(["runs"], [{"algorithm": "token-lua", "renew": {"ttl_ms": 100}}]), "renew"),
    ]:
        pr.case(label, scen, files={"s.json": doc}, piece=piece)
    for label, content, piece in [
        ("not JSON", "{not json", "s.json"), ("empty", "", "s.json"), ("binary", b"\x00\xff\xfe" * 100, "s.json"),
        ("a key twice", '{"name": "a", "name": "b", "runs": [{"algorithm": "token-lua"}]}', "name"),
        ("nested 100 deep", "[" * 100 + "]" * 100, "s.json"), ("2 MB", '{"name": "' + "x" * 2_000_000 + '"}', "s.json"),
        ("a JSON array", "[1, 2]", "s.json"), ("a number", "42", "s.json"),
    ]:
        pr.case("a file " + label, scen, files={"s.json": content}, piece=piece)
    pr.case("a folder as the file", ["run", "{w}/d", "--backend", "sim", "--out", "{w}/out"], setup=lambda w: os.mkdir(w + "/d"),
            piece="d")
    pr.case("a FIFO as the file", ["run", "{w}/fifo", "--backend", "sim", "--out", "{w}/out"],
            setup=lambda w: os.mkfifo(w + "/fifo"), piece="fifo", timeout=20)
    pr.case("/dev/zero as the file", ["run", "/dev/zero", "--backend", "sim", "--out", "{w}/out"], piece="/dev/zero", timeout=20)
    pr.case("a symlink loop", ["run", "{w}/loop", "--backend", "sim", "--out", "{w}/out"],
            setup=lambda w: os.symlink(w + "/loop", w + "/loop"), piece="loop")
    pr.case("a file we may not read", ["run", "{w}/s.json", "--backend", "sim", "--out", "{w}/out"],
            files={"s.json": VALID}, setup=lambda w: os.chmod(w + "/s.json", 0), piece="s.json" if os.getuid() != 0 else "",
            exit_codes=(2,) if os.getuid() != 0 else (0,), out_absent=os.getuid() != 0)

    # ---- lock files -------------------------------------------------------------------------
    lock_valid = {"description": "probe", "algorithm": "token-lua"}
    for label, doc, piece in [
        ("an unknown field", dict(lock_valid, frobnicate=1), "frobnicate"),
        ("an unknown algorithm", dict(lock_valid, algorithm="quantum"), "quantum"),
        ("expected naming no case", dict(lock_valid, expected={"no-such-case": "safe"}), "no-such-case"),
        ("expected a verdict of no kind", dict(lock_valid, expected={"baseline": "fine"}), "fine"),
        ("an external lock with no command", {"description": "x", "algorithm": "external"}, "command"),
        ("nodes 0", dict(lock_valid, nodes=0), "nodes"),
    ]:
        pr.case("a lock file with " + label, ["verdict", "{w}/l.json", "--out", "{w}/out"], files={"l.json": doc}, piece=piece)

    # ---- results trees ----------------------------------------------------------------------
    tree = tempfile.mkdtemp(prefix="lbprobe-tree-")
    subprocess.run([LB, "matrix", os.path.join(SRC, "scenarios", "baseline.json"), "--backend", "sim", "--lock", "token-lua",
                    "--out", tree + "/t"], cwd=SRC, capture_output=True, check=True)
    rep = os.path.join("cells", "baseline", "token-lua", "rep-0")
    run_name = os.listdir(os.path.join(tree, "t", rep, "runs"))[0]

    def damaged(how):
        def setup(work):
            shutil.copytree(tree + "/t", work + "/t")
            how(os.path.join(work, "t", rep), os.path.join(work, "t", rep, "runs", run_name))
        return setup

    def fifo_at(path):
        os.remove(path)
        os.mkfifo(path)

    for label, how, piece in [
        ("summary.json cut short", lambda t, r: open(t + "/summary.json", "w").write('{"runs": ['), "summary.json"),
        ("summary.json a FIFO", lambda t, r: fifo_at(t + "/summary.json"), "summary.json"),
        ("a history a FIFO", lambda t, r: fifo_at(r + "/history/client-0.jsonl"), "client-0.jsonl"),
        ("a history line not JSON", lambda t, r: open(r + "/history/client-0.jsonl", "a").write("garbage\n"), "client-0.jsonl"),
        ("the store log gone", lambda t, r: os.remove(r + "/store.jsonl"), "store.jsonl"),
        ("the run folder gone", lambda t, r: shutil.rmtree(r), "run"),
        ("run.json not JSON", lambda t, r: open(r + "/run.json", "w").write("{"), "run.json"),
    ]:
        pr.case(f"check of a repetition with {label}", ["check", "{w}/t/" + rep], setup=damaged(how), piece=piece,
                out_absent=False, timeout=30)
        pr.case(f"report of a tree with {label}", ["report", "{w}/t"], setup=damaged(how), piece=piece,
                out_absent=False, timeout=30)
    shutil.rmtree(tree, ignore_errors=True)

    # ---- adapters ---------------------------------------------------------------------------
    bad = os.path.join(SRC, "tests", "data", "bad_adapter.py")

    def adapter(command, extra=None):
        run = {"algorithm": "external", "name": "hostile", "command": command}
        run.update(extra or {})
        return with_(["runs"], [run], with_(["client"], {"command_timeout_ms": 50}))

    for mode in ("crash", "garbage", "hang", "noready", "twice", "early", "stream"):
        pr.case(f"an adapter that does '{mode}'", ["run", "{w}/s.json", "--out", "{w}/out"],
                files={"s.json": adapter(["/usr/bin/python3", bad, mode])}, exit_codes=(1, 2), one_line=False,
                out_absent=False, piece="hostile", timeout=90)

    def under_20_mb(work):  # each file an adapter writes is capped at 16 MiB
        big = [f for d, _, fs in os.walk(work + "/out") for f in fs if os.path.getsize(os.path.join(d, f)) > 17 << 20]
        return "" if not big else f"{len(big)} file(s) over 16 MiB under --out"

    pr.case("an adapter that floods its stderr with 40 MiB", ["run", "{w}/s.json", "--out", "{w}/out"],
            files={"s.json": adapter(["/usr/bin/python3", bad, "flood"])}, exit_codes=(0, 1), one_line=False,
            out_absent=False, check=under_20_mb, timeout=90)
    for label, command, extra in [
        ("a command that is not there", ["/nonexistent/adapter"], None),
        ("a command that is a folder", ["/tmp"], None),
        ("a cwd that is not there", ["/bin/true"], {"cwd": "/nonexistent/folder"}),
        ("an adapter that says not ready", ["/bin/sh", "-c", "echo '{\"ready\": false, \"error\": \"no\"}'"], None),
        ("an adapter that exits at once", ["/bin/false"], None),
        ("an adapter that leaves a daemon", ["/bin/sh", "-c", "setsid sleep 1000 & exec /usr/bin/python3 " + bad + " crash"], None),
        ("an adapter that prints an escape sequence", ["/bin/sh", "-c", "printf '\\033[2J\\342\\200\\256evil\\n'"], None),
    ]:
        pr.case(label, ["run", "{w}/s.json", "--out", "{w}/out"], files={"s.json": adapter(command, extra)},
                exit_codes=(1, 2), one_line=False, out_absent=False, piece="hostile", timeout=90)

    print(f"hostile probe: {pr.tried} inputs tried, {pr.tried - len(pr.unmet)} met the promise")
    for label, why, last, took in pr.unmet:
        print(f"  NOT MET: {label}: {why} (last line: {last!r}, {took:.1f} s)")
    return 1 if pr.unmet else 0


if __name__ == "__main__":
    sys.exit(main())
