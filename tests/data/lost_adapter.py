#!/usr/bin/python3
"""An adapter whose library loses every lock it takes, as redis-semaphore's onLockLost would
say: it grants each acquire, and answers each extend by first announcing, unsolicited,
{"event": "lost", ...}, then failing the extend. Every request it reads is appended to
$TMPDIR/lost-adapter.requests, so a test can see what lockbench sent.

With the argument "late", it loses nothing while held: it announces a released lease lost
only when the next acquire comes, before answering it (late, as a library's lost-lock
callback may be), answers each extend with an answer that has an "event" field of
its own after an unsolicited event of another kind (a line longer than the history's excerpt
of it), and writes its blocked signal mask
(SigBlk of /proc/self/status) to $TMPDIR/lost-adapter.sigblk.
"""
import json
import os
import sys

tmp = os.environ.get("TMPDIR", "/tmp")
log = open(os.path.join(tmp, "lost-adapter.requests"), "a")
late = sys.argv[1:] == ["late"]
if late:
    with open("/proc/self/status") as status, open(os.path.join(tmp, "lost-adapter.sigblk"), "a") as out:
        out.write("".join(l for l in status if l.startswith("SigBlk:")))
print(json.dumps({"ready": True, "library": "lost 1"}), flush=True)
taken = 0
for line in sys.stdin:
    log.write(line)
    log.flush()
    req = json.loads(line)
    if req["op"] == "acquire":
        if late and taken:
            print(json.dumps({"event": "lost", "reason": f"t{taken} released"}), flush=True)
        taken += 1
        print(json.dumps({"ok": True, "token": f"t{taken}"}), flush=True)
    elif req["op"] == "extend" and late:
        # Longer than the excerpt the history keeps of a line: an event of another kind still.
        print(json.dumps({"event": "reconnected", "reason": "the library says hello " + "at length " * 40}), flush=True)
        print(json.dumps({"ok": True, "event": "extended"}), flush=True)
    elif req["op"] == "extend":
        print(json.dumps({"event": "lost", "reason": "onLockLost"}), flush=True)  # while extend waits
        print(json.dumps({"ok": False, "error": "lock lost"}), flush=True)
    else:
        print(json.dumps({"ok": True}), flush=True)
