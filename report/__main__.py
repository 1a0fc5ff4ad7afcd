"""`/usr/bin/python3 report DIR`: the report's entry point (see __init__.py)."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
if __package__ in (None, ""):
    # Run as a folder (python3 report): make `report` importable as a package.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import report  # noqa: E402
from report.common import PROG, Fail  # noqa: E402
from report.page import render  # noqa: E402


def main(argv):
    args = argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(report.__doc__.strip())
        return 0
    if len(args) != 1:
        print(f"{PROG}: usage: report DIR (a results tree of `lockbench matrix`/`sweep`, or a folder of them)",
              file=sys.stderr)
        return 2
    d = args[0]
    try:
        out = render(d)
    except Fail as e:
        print(f"{PROG}: {e.where}: {e.what}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: {d}: interrupted; the previous report is untouched", file=sys.stderr)
        return 130
    except OSError as e:
        where = e.filename or d
        print(f"{PROG}: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback: name the tree and what went wrong
        print(f"{PROG}: {d}: unexpected {type(e).__name__}: {e} (please report: this is a bug in the report)",
              file=sys.stderr)
        return 2
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
