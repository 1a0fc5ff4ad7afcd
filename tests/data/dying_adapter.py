#!/usr/bin/python3
"""An adapter whose process dies on the first extend, before answering it: the renewal
task meets a dead adapter while the worker is still in its critical section.
"""
import json
import sys

print(json.dumps({"ready": True, "library": "dying 1"}), flush=True)
taken = 0
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        taken += 1
        print(json.dumps({"ok": True, "token": f"t{taken}"}), flush=True)
    elif req["op"] == "extend":
        sys.exit(3)
    else:
        print(json.dumps({"ok": True}), flush=True)
