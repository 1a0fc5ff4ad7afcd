#!/usr/bin/python3
"""An adapter that says what it is in its ready line, writes the run's parameters as it got
them (LOCKBENCH_PARAMS) and a warning on stderr, as a library's own warnings would be, and
grants every acquire. For the test that lockbench records and keeps all three."""
import json
import os
import sys

print(f"params {os.environ['LOCKBENCH_PARAMS']} client {os.environ['LOCKBENCH_CLIENT']}", file=sys.stderr, flush=True)
print("warning: a library's own warning", file=sys.stderr, flush=True)
print(json.dumps({"ready": True, "library": "params 1.2.3", "algorithm": "grants everything", "fencing": False,
                  "extra": "not recorded"}), flush=True)
taken = 0
for line in sys.stdin:
    req = json.loads(line)
    taken += 1
    print(json.dumps({"ok": True, "token": f"t{taken}"} if req["op"] == "acquire" else {"ok": True}), flush=True)
