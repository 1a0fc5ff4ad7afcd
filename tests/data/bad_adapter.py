#!/usr/bin/python3
"""An adapter that breaks lockbench's protocol on purpose, as argv[1] says:

  crash    ready, then exits (status 3) at the first acquire
  garbage  ready, then answers the first acquire with a line that is not JSON
  hang     ready, then never answers
  noready  its first line is not {"ready": true}

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
print(json.dumps({"ready": True, "library": "bad " + mode}), flush=True)
for line in sys.stdin:
    if mode == "crash":
        sys.stdout.write("about to crash")  # no newline: half a line, then gone
        sys.stdout.flush()
        sys.exit(3)
    if mode == "garbage":
        print("hello, I am not JSON", flush=True)
    if mode == "hang":
        time.sleep(60)
