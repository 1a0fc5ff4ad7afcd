#!/usr/bin/python3
"""An adapter that breaks lockbench's protocol on purpose, as argv[1] says:

  crash    ready, then exits (status 3) at the first acquire
  garbage  ready, then answers the first acquire with a line that is not JSON
  hang     ready, then never answers
  noready  its first line is not {"ready": true}
  twice    ready, then answers every request twice (a grant each time)
  early    ready, then three {"ok": true} lines before any request
  stream   ready, then answers the first acquire with 20 MiB and no newline
  flood    writes 40 MiB to stderr (going on when a write is refused), then answers as it should

Each writes its pid to $TMPDIR/bad-adapter.<pid> first, so a test can check that none is
left running afterwards.
"""
import json
import os
import sys
import time

mode = sys.argv[1]
with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bad-adapter.{os.getpid()}"), "w") as f:
    f.write(str(os.getpid()))
if mode == "noready":
    print("Starting up, please wait...", flush=True)
    time.sleep(60)
ready = json.dumps({"ready": True, "library": "bad " + mode}) + "\n"
# Each answer below is one write(2) of whole lines: with PYTHONUNBUFFERED (CI sets it) a print
# is two writes (text, then its newline), and lockbench could read a double answer's second
# line only after the client had acted on the first, which makes a test of framing a race.
if mode == "early":  # the ready line and three answers nobody asked for, at once
    ready += (json.dumps({"ok": True}) + "\n") * 3
sys.stdout.write(ready)
sys.stdout.flush()
if mode == "flood":
    chunk = "x" * (1 << 20) + "\n"
    for _ in range(40):
        try:
            sys.stderr.write(chunk)
            sys.stderr.flush()
        except OSError:  # past the file size limit lockbench set: the write is refused
            pass
taken = 0
for line in sys.stdin:
    if mode == "twice":
        taken += 1
        answer = json.dumps({"ok": True, "token": f"t{taken}"})
        sys.stdout.write(answer + "\n" + answer + "\n")
        sys.stdout.flush()
        continue
    if mode in ("early", "flood"):
        taken += 1
        print(json.dumps({"ok": True, "token": f"t{taken}"}), flush=True)
        continue
    if mode == "stream":
        sys.stdout.write("x" * (20 << 20))
        sys.stdout.flush()
        time.sleep(60)
    if mode == "crash":
        sys.stdout.write("about to crash")  # no newline: half a line, then gone
        sys.stdout.flush()
        sys.exit(3)
    if mode == "garbage":
        print("hello, I am not JSON", flush=True)
    if mode == "hang":
        time.sleep(60)
