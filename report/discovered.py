"""What `lockbench explore` discovered: its explore.json's failure classes as a verdict matrix.

One row per failure class (the fault kinds of a shrunk schedule, their points and the order
they landed in), one column per run searched. A cell names the violation, how many of the
run's violating schedules fell in that class and how soon the run's search first found it, and
links to the class's witness (a scenario that runs live as it is, simulated beside it). An empty
cell: that run's search found no schedule of that class; the last row says how many schedules
each run tried, so that "none found" reads as the evidence it is.
"""

import html
import json
import os

from .common import TWO_HOLDERS, Fail, plural, slug

WORDS = {"mutual_exclusion_violations": TWO_HOLDERS, "stale_writes_accepted": "stale write accepted",
         "lost_updates": "lost update"}
CSS = {"mutual_exclusion_violations": "o-violation", "stale_writes_accepted": "o-unsafe", "lost_updates": "o-unsafe"}


def load(d):
    """The folder's explore.json, or None when it is not the output of `lockbench explore`."""
    path = os.path.join(d, "explore.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            e = json.load(f)
    except (OSError, ValueError) as err:
        raise Fail(path, f"unreadable: {err}")
    if not isinstance(e, dict) or not isinstance(e.get("runs"), dict):
        raise Fail(path, "not an explore.json (no \"runs\" object)")
    if "classes" not in e:
        raise Fail(path, "written before failure classes (issue 18); run `lockbench explore` again to regenerate it")
    return e


def class_rows(e):
    """[(class, {run: entry})] in the order the classes were first found."""
    rows = {}
    for c in e["classes"]:
        rows.setdefault(c["class"], {})[c["run"]] = c
    return list(rows.items())


def cell_text(c):
    return f"{WORDS.get(c['violation'], c['violation'])}: {plural(c['schedules'], 'schedule')}, first after {c['first_found_s']:.1f} s"


def html_cell(c):
    if not c:
        return "<td></td>"
    anchor = slug(c.get("tree") or os.path.splitext(c["witness"])[0])
    return (f'<td class="{CSS.get(c["violation"], "o-violation")}"><a href="#{anchor}" title="{html.escape(c["witness"])}">'
            f"{html.escape(cell_text(c))}</a></td>")


def tried_row(e, runs):
    return [f"{plural(e['runs'][r]['schedules'], 'schedule')}, {plural(e['runs'][r]['violating'], 'violating')}" for r in runs]


def write_discovered(e, page):
    runs = list(e["runs"])
    rows = class_rows(e)
    what = f"budget {e['budget']} faults, from the whole fault vocabulary" if e.get("budget") else "around the scenario's faults"
    page.heading(2, "Discovered failure classes", "discovered")
    page.para(f"`lockbench explore` of {e.get('scenario', '?')} (seed {e.get('seed')}, {what}): "
              f"{plural(len(rows), 'failure class', 'failure classes')} over {plural(len(runs), 'run')}. "
              "Rows: a shrunk schedule's faults, in the order they landed; columns: the runs searched. A cell: the "
              "violation, how many violating schedules fell in the class, when the run's search first found it; "
              "it links to the class's witness below.")
    h = ['<table class="libraries"><tr><th>failure class</th>' + "".join(f"<th>{html.escape(r)}</th>" for r in runs) + "</tr>"]
    md = ["| failure class | " + " | ".join(runs) + " |", "|" + "---|" * (len(runs) + 1)]
    for klass, cells in rows:
        h.append(f'<tr><td class="rowhead">{html.escape(klass)}</td>' + "".join(html_cell(cells.get(r)) for r in runs) + "</tr>")
        md.append("| " + " | ".join([klass.replace("|", "\\|")] + [cell_text(cells[r]) if r in cells else " " for r in runs]) + " |")
    tried = tried_row(e, runs)
    h.append('<tr><td class="rowhead">searched</td>' + "".join(f"<td>{html.escape(t)}</td>" for t in tried) + "</tr></table>")
    md.append("| searched | " + " | ".join(tried) + " |")
    page.raw_html("".join(h), "\n".join(md) + "\n")
