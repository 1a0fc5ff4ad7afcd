"""7. The verdict page: one lock's verdict on one page, from the verdict.json that `lockbench
verdict LOCK --out DIR` writes beside the results tree it ran (sim/harness/verdict.h).

Top to bottom: the lock (its file, description, library, what it offers) and, first if any,
where the run differs from the lock file's record; its row (a verdict per failure class) beside
the reference locks' recorded rows, every "—" explained; then each class that applies: its
verdict, its cases (what the case does, the literature's prediction, the lock's record) and,
for an unsafe verdict, the witness on a timeline, the command that replays it live and what
would have prevented it; then the cases of no class, the same way; then the cases that do not
apply, each with its reason. Everything comes from verdict.json and the tree's own runs: the
verdicts are the checker's, never derived here."""

import datetime
import html
import json
import os

from .common import OUTCOME, RANK, TWO_HOLDERS, UNSAFE, VERDICT_WORDS, Fail, css_of, load_json, plural, progress, slug, variant_label, worst
from .libraries import CLASS_WORD, CLASSES, Notes, cell_text, generic, note_anchor, notes_parts
from .rundata import RepData
from .timeline import draw_timeline

VERDICT_FILE = "verdict.json"
VERDICT_FORMAT = "lockbench-verdict"
VERDICT_VERSION = 2
VERDICT_VERSIONS = (1, 2)  # 1: before the live search (no "discovered"); read alike
NOT_APPLICABLE = "not applicable"
UNSAFE_WORDS = (TWO_HOLDERS, UNSAFE)


def load_verdict(d):
    """DIR/verdict.json when DIR holds one (then DIR is a verdict tree), else None."""
    path = os.path.join(d, VERDICT_FILE)
    if not os.path.isfile(path):
        return None
    v = load_json(path)
    if not isinstance(v, dict) or v.get("format") != VERDICT_FORMAT:
        raise Fail(path, f'expected {{"format": "{VERDICT_FORMAT}", "version": {VERDICT_VERSION}, ...}}, what '
                         "`lockbench verdict LOCK --out DIR` writes")
    if v.get("version") not in VERDICT_VERSIONS:
        raise Fail(path, f"version {v.get('version')!r} is not supported, expected {VERDICT_VERSION} (a newer lockbench "
                         "wrote it: use the report of that version)")
    for key, kind in (("lock", str), ("cases", list), ("classes", list)):
        if not isinstance(v.get(key), kind):
            raise Fail(path, f'has no "{key}" {"string" if kind is str else "list"}')
    for i, c in enumerate(v["cases"]):
        if not isinstance(c, dict) or not isinstance(c.get("case"), str):
            raise Fail(path, f'cases[{i}] has no "case" string')
        if c.get("verdict") not in VERDICT_WORDS:
            raise Fail(path, f"cases[{i}] ({c['case']}): verdict {c.get('verdict')!r} is not one of the checker's words ("
                             + ", ".join(VERDICT_WORDS) + ")")
    return v


# --------------------------------------------------------------------------------------------
# words


def case_name(c):
    return variant_label(c["case"], c.get("variant"))


def counts_text(counts):
    return cell_text({w: n for w, n in (counts or {}).items() if isinstance(n, int)})


def words_of(text):
    """The verdict words a recorded text names ("2 holders / safe"), for its colour."""
    return [w.strip() for w in str(text).split(" / ") if w.strip() in RANK]


def recorded_class(text):
    ws = words_of(text)
    return css_of(worst(ws)) if ws else "o-none"


FACTS = (
    # lock nodes: a Redis lock's (a consensus service runs its own ensemble, whatever "nodes" says)
    ("service", lambda v, f: f"locks on {v}" + (f" ({plural(f['nodes'], 'node')})" if isinstance(f.get("nodes"), int)
                                                 and v == "redis" else "")),
    ("sentinel", lambda v, f: "finds its master through Sentinel" if v else None),
    ("fencing", lambda v, f: "hands out a fencing token" if v else "hands out no fencing token"),
    ("fence", lambda v, f: None if not v else "the store checks its random token by check-and-set"
     if f.get("resource_check") == "token" else "the store checks its token"),
    ("expiry", lambda v, f: {"server": "the server's clock decides when a lock expires",
                             "client": "the clients' clocks decide when a lock expires"}.get(v, f"expiry: {v}")),
    ("release", lambda v, f: {"token": "releases by compare-and-delete on its token (only its own lock)",
                              "plain": "releases by a plain DEL (whatever lock is there)",
                              "client-clock": "releases by a plain DEL, sent only while its own clock says the lock is live"
                              }.get(v, f"release: {v}")),
    ("renews", lambda v, f: "renews its lease on its own while its process runs" if v else "does not renew its lease on its own"),
    ("extend", lambda v, f: ("a worker may extend it (" + ", ".join(map(str, v)) + ")") if v else None),
    ("checks_elapsed", lambda v, f: "refuses a lock whose TTL ran out during its acquire" if v else
     "does not time its acquire"),
    ("validity", lambda v, f: "says how long a lock it hands out is valid" if v else None),
    ("replicated", lambda v, f: "waits for a replica to acknowledge a grant (WAIT)" if v else None),
    ("check_lease_before_write", lambda v, f: "its holder checks its lease just before it writes" if v else None),
    ("params", lambda v, f: ("parameters: " + ", ".join(f"{k}={json.dumps(v[k])}" for k in sorted(v)))
     if isinstance(v, dict) and v else None),
)
NOT_FACTS = ("lock", "algorithm", "nodes", "resource_check")  # resource_check: said with "fence"


def facts_lines(facts):
    """What the lock file says the lock is and offers, in words."""
    if not isinstance(facts, dict):
        return []
    out = []
    for key, say in FACTS:
        if key in facts:
            s = say(facts[key], facts)
            if s:
                out.append(s)
    known = {k for k, _ in FACTS} | set(NOT_FACTS)
    out += [f"{k}: {facts[k]}" for k in sorted(facts) if k not in known]
    return out


# --------------------------------------------------------------------------------------------
# the table: this lock's row beside the reference rows


def class_entries(v):
    return {e.get("class"): e for e in v["classes"] if isinstance(e, dict)}


def table(v, page):
    """The lock's row and the reference rows, one column per class; numbered notes for every "—"."""
    notes = Notes()
    prefix = "verdict"
    mine = class_entries(v)
    head = ["lock"] + [w for _, w in CLASSES]
    h = ['<table class="libraries"><colgroup><col style="width:14%">' + "<col>" * len(CLASSES) + "</colgroup><tr>"
         + "".join(f"<th>{html.escape(x)}</th>" for x in head) + "</tr>"]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def dash(lines, lock):
        n = notes.number(generic(x, lock) for x in lines)
        return (f'<td class="o-none" title="{html.escape(chr(10).join(lines))}">—<sup class="note-ref">'
                f'<a href="#{note_anchor(prefix, n)}">{n}</a></sup></td>', f"— [{n}]")

    tds, mds = [], []
    for k, _ in CLASSES:
        e = mine.get(k)
        if e is None or e.get("verdict") == NOT_APPLICABLE or not e.get("counts"):
            why = [str(x) for x in (e or {}).get("why") or []] or ["verdict.json names no case of this class and no reason"]
            a, b = dash(why, v["lock"])
        else:
            text = counts_text(e.get("counts"))
            rec = e.get("recorded")
            rec_text = f"recorded: {' / '.join(map(str, rec))}" if rec else ""
            a = (f'<td class="{css_of(e.get("verdict"))}"><a href="#class-{slug(k)}">{html.escape(text)}</a>'
                 + (f'<br><span class="small">{html.escape(rec_text)}</span>' if rec_text else "") + "</td>")
            b = text + (f" ({rec_text})" if rec_text else "")
        tds.append(a)
        mds.append(b)
    h.append(f'<tr><td class="rowhead">{html.escape(v["lock"])} (this run)</td>' + "".join(tds) + "</tr>")
    md.append("| " + " | ".join([f"**{v['lock']}** (this run)"] + mds) + " |")
    refs = [r for r in v.get("reference") or [] if isinstance(r, dict) and r.get("lock") != v["lock"]]
    if refs:
        h.append(f'<tr><th class="group" colspan="{len(head)}">recorded in their lock files, for reference (not run '
                 "here)</th></tr>")
        md.append("| *recorded in their lock files, for reference (not run here)* |" + " |" * (len(head) - 1))
    for r in refs:
        tds, mds = [], []
        classes = r.get("classes") if isinstance(r.get("classes"), dict) else {}
        for k, _ in CLASSES:
            e = classes.get(k) if isinstance(classes.get(k), dict) else {}
            word = str(e.get("verdict", "—"))
            if word == "—":
                why = [str(x) for x in e.get("why") or []] or ["its lock file's record gives no reason"]
                a, b = dash(why, str(r.get("lock")))
            else:
                a, b = f'<td class="{recorded_class(word)}">{html.escape(word)}</td>', word
            tds.append(a)
            mds.append(b)
        h.append(f'<tr><td class="rowhead" title="{html.escape(str(r.get("description", "")))}">'
                 f'{html.escape(str(r.get("lock")))}</td>' + "".join(tds) + "</tr>")
        md.append("| " + " | ".join([str(r.get("lock"))] + [x.replace("|", "\\|") for x in mds]) + " |")
    h.append("</table>")
    notes_h, notes_m = notes_parts(notes, prefix, "Why a cell is \"—\" (the cases of the class that do not apply to "
                                                  "that lock; \"the lock\": the row's):")
    h.append(notes_h)
    md.append(notes_m)
    page.raw_html("".join(h), "\n".join(md) + "\n")
    page.para("This lock's cells count its repetitions in the cases of each class by the checker's verdict (coloured by "
              "the worst; \"recorded\": what its lock file records). The reference rows are what the other locks' files "
              "record for the same cases, not run here (\"not recorded\": their files say nothing of it yet). "
              + " ".join(OUTCOME[w][2] + "." for w in VERDICT_WORDS), cls="note")


# --------------------------------------------------------------------------------------------
# the cases


def witness_focus(tree, case):
    """(cell, (kind, rep, None)) for the case's witness repetition, or (None, reason)."""
    w = case.get("witness") if isinstance(case.get("witness"), dict) else None
    if w is None:
        return None, "verdict.json names no witness for it"
    cell = next((c for c in tree.cells if c.id == case.get("cell")), None)
    if cell is None:
        return None, f"the tree has no cell {case.get('cell')}"
    rep = next((r for r in cell.reps if r.get("dir") == w.get("dir") or r.get("rep") == w.get("rep")), None)
    if rep is None:
        return None, f"{case.get('cell')} has no repetition {w.get('rep')}"
    run = cell.run_of(rep)
    kinds = [x.get("kind") for x in run.get("witnesses") or [] if isinstance(x, dict)]
    # The witness that shows the verdict: two holders overlapping for "2 holders"; for "unsafe",
    # the stale write or foreign release the checker found first.
    want = ["mutual_exclusion"] if case["verdict"] == TWO_HOLDERS else []
    first = (w.get("first") or {}).get("kind") if isinstance(w.get("first"), dict) else None
    want += [first] if first else []
    want += ["stale_write", "foreign_release", "mutual_exclusion"]
    kind = next((k for k in want if k in kinds), None)
    if kind is None:
        return None, "its run recorded no witness"
    return cell, (kind, rep, None)


def timeline_of(tree, case, outdir):
    cell, focus = witness_focus(tree, case)
    if cell is None:
        return None, focus
    rd = RepData(cell, focus[1], full=True)
    return draw_timeline(cell, focus, rd, outdir, f"witness-{slug(case_name(case))}.png")


def badge(case):
    text = counts_text(case.get("counts")) if case.get("counts") else case["verdict"]
    return f'<span class="badge {css_of(case["verdict"])}">{html.escape(text)}</span>', f"**{text}**"


def write_case(case, timelines, page):
    name = case_name(case)
    page.heading(4, name, f"case-{slug(name)}")
    b_html, b_md = badge(case)
    page.raw_html(f"<p>{b_html}</p>", b_md + "\n")
    if case.get("description"):
        page.para(case["description"], cls="desc")
    items = []
    if case.get("predicted"):
        s = f"The literature predicts {case['predicted']}" + (f": {case['predicted_why']}" if case.get("predicted_why") else "")
        if case["predicted"] != case["verdict"]:
            s += f" (this run: {case['verdict']})"
        items.append(s + ".")
    if case.get("recorded"):
        items.append(f"Its lock file records {case['recorded']}.")
    failed = [str(f) for f in case.get("failed") or []]
    if failed:
        items.append("Expectations that did not hold: " + "; ".join(failed) + ".")
    if items:
        page.bullets(items)
    if case["verdict"] not in UNSAFE_WORDS:
        return
    res = timelines.get(name)
    if res is not None:
        img, cap = res
        if img is None:
            page.para(f"No timeline of the witness: {cap}.", cls="note")
        else:
            page.image(img, cap)
    if case.get("replay"):
        page.raw_html('<p class="note">Replay it live (the witness\'s repetition, its seed):</p>'
                      f'<pre class="cmd">{html.escape(case["replay"])}</pre>',
                      f"Replay it live (the witness's repetition, its seed):\n\n```\n{case['replay']}\n```\n")
    if case.get("remedy"):
        page.para(f"What would have prevented it: {case['remedy']}.")


def write_not_applicable(v, page):
    na = [n for n in v.get("not_applicable") or [] if isinstance(n, dict)]
    if not na:
        return
    page.heading(2, "Cases that do not apply", "not-applicable")
    rows, seen = [], {}
    for n in na:
        key = (n.get("case"), n.get("why"))
        if key in seen:  # the case's variants, refused for the same reason
            if n.get("variant"):
                seen[key][0] += ", " + variant_label("", n["variant"])
            continue
        row = [variant_label(n.get("case"), n.get("variant")),
               CLASS_WORD.get(n.get("class"), "—") if n.get("class") else "(no class)", str(n.get("why", "?"))]
        seen[key] = row
        rows.append(row)
    page.table(["case (and variants)", "failure class", "why it does not apply"], rows, widths=["26%", "14%", "60%"])


def write_discovered(v, page):
    """The live search's classes (`verdict --discover`), and what it tried: its coverage."""
    d = v.get("discover")
    if not isinstance(d, dict):
        return
    page.heading(2, "Discovered by the live search", "discovered")
    model = f"; the simulator's classes of {d['model']} first" if d.get("model") else ""
    page.para(f"{plural(d.get('schedules_tried', 0), 'live schedule')} in {d.get('wall_s', 0):.0f} s of "
              f"{d.get('seconds', 0):.0f}{model}; {d.get('not_applicable', 0)} drawn that do not apply to the lock, "
              f"{d.get('skipped_known', 0)} skipped as of a class found already. Each class's witness replays with "
              "`lockbench run DIR/WITNESS`.", cls="note")
    rows = [[str(c.get("failure_class", "?")), str(c.get("class", "?")), f"{c.get('first_found_s', 0):.0f} s",
             f"{c.get('repetitions_violating', 0)} of {c.get('repetitions', 0)}", str(c.get("source", "")),
             str(c.get("witness", ""))] for c in v.get("discovered") or []]
    if rows:
        page.table(["catalog class", "class", "found after", "violated", "found as", "witness"], rows,
                   widths=["12%", "40%", "9%", "9%", "14%", "16%"])
    else:
        page.para("Nothing found. What was tried:", cls="note")
    cov = [[str(c.get("fault")), str(c.get("point")), str(c.get("target")), str(c.get("tried")), str(c.get("violated"))]
           for c in d.get("coverage") or []]
    if cov:
        page.heading(3, "Coverage: what the search tried", "coverage")
        page.table(["fault", "point", "target", "tried", "violated"], cov, widths=["40%", "16%", "24%", "10%", "10%"])


# --------------------------------------------------------------------------------------------
# the page


def header(v, tree, page):
    lib = v.get("library") if isinstance(v.get("library"), dict) else {}
    facts = v.get("facts") if isinstance(v.get("facts"), dict) else {}
    page.heading(1, f"lockbench verdict: {v['lock']}")
    if v.get("description"):
        page.para(v["description"], cls="desc")
    version = lib.get("library") or "built-in"
    algorithm = lib.get("algorithm") or (facts.get("algorithm") if facts.get("algorithm") != "external" else None)
    fencing = lib.get("fencing") if isinstance(lib.get("fencing"), bool) else facts.get("fencing")
    items = [f"Lock file: {v.get('lock_file', '?')}",
             f"Library: {version}" + (f"; algorithm: {algorithm}" if algorithm else "")
             + {True: "; fencing: yes", False: "; fencing: no"}.get(fencing, "")]
    offers = facts_lines(facts)
    if offers:
        items.append("What it is and offers (its lock file): " + "; ".join(offers) + ".")
    reps = sum(len(c.reps) for c in tree.cells)
    ncases = len(v["cases"])
    items.append(f"{plural(ncases, 'case')} run, {plural(v.get('repeat', 0), 'repetition')} each ({reps} in all); "
                 f"{plural(len(v.get('not_applicable') or []), 'case')} (or variants) that do not apply.")
    page.bullets(items)
    diffs = [str(d) for d in v.get("differences") or []]
    if diffs:
        page.heading(2, "Differences from its lock file's record", "differences")
        page.raw_html('<div class="warn"><ul>' + "".join(f"<li>{html.escape(d)}</li>" for d in diffs) + "</ul></div>",
                      "\n".join(f"- **{d}**" for d in diffs) + "\n")


def write_versus(v, page):
    """`verdict --versus OTHER`: this lock's classes beside OTHER's, and the cases whose verdicts differ."""
    vs = v.get("versus")
    if not isinstance(vs, dict):
        return
    other = str(vs.get("lock", "?"))
    page.heading(2, f"Versus {other} ({vs.get('library', '?')})", "versus")
    classes = [c for c in vs.get("classes") or [] if isinstance(c, dict)]
    rows = [[CLASS_WORD.get(c.get("class"), str(c.get("class"))), str(c.get("here")), str(c.get("there")),
             "differs" if c.get("differs") else ""] for c in classes]
    css = [[None, None, None, "warn" if c.get("differs") else None] for c in classes]
    page.table(["class", v["lock"], other, ""], rows, classes=css, widths=["22%", "34%", "34%", "10%"])
    cases = [c for c in vs.get("cases") or [] if isinstance(c, dict)]
    if cases:
        page.para("The cases whose verdicts differ (or that run on one side only):", cls="note")
        page.table(["case", v["lock"], other], [[case_name(c), str(c.get("here")), str(c.get("there"))] for c in cases],
                   widths=["30%", "35%", "35%"])
    said = []
    if vs.get("same"):
        said.append("The same verdict in every class.")
    elif not any(c.get("differs") for c in classes):
        said.append("Every class the same; a case both ran differs.")
    agree = vs.get("cases_same")  # not in a verdict.json written before it was counted
    if isinstance(agree, int):
        said.append(f"Cases both ran with the same verdict: {agree}.")
    page.para(" ".join(said + [f"{other}'s own verdict: {vs.get('verdict', '?')}."]), cls="note")


def plan(v, tree, outdir):
    """Every witness timeline to draw, drawn with progress: {case name: (img, caption)}."""
    todo = [c for c in v["cases"] if c["verdict"] in UNSAFE_WORDS]
    out = {}
    for i, c in enumerate(todo):
        progress(f"drawing timeline {case_name(c)} ... ({i + 1}/{len(todo)})")
        out[case_name(c)] = timeline_of(tree, c, outdir)
    return out


def build_verdict(v, tree, outdir, page):
    progress(f"verdict of {v['lock']}: {plural(len(v['cases']), 'case')}")
    timelines = plan(v, tree, outdir)
    header(v, tree, page)
    page.heading(2, "Verdict by failure class", "table")
    table(v, page)
    write_versus(v, page)
    mine = class_entries(v)
    by_class = {}
    for c in v["cases"]:
        by_class.setdefault(c.get("class"), []).append(c)
    applies = [k for k, _ in CLASSES if k in by_class]
    if applies:
        page.heading(2, "Failure classes", "classes")
    for k in applies:
        e = mine.get(k) or {}
        word = counts_text(e.get("counts")) if e.get("counts") else worst(c["verdict"] for c in by_class[k])
        page.heading(3, f"{CLASS_WORD[k]}: {word}", f"class-{slug(k)}")
        for c in by_class[k]:
            write_case(c, timelines, page)
    others = [c for k, cs in by_class.items() if k not in CLASS_WORD for c in cs]
    if others:
        page.heading(2, "Other cases", "other")
        page.para("Cases of no failure class: each on its own, not counted in the row above.", cls="note")
        for c in others:
            write_case(c, timelines, page)
    write_discovered(v, page)
    write_not_applicable(v, page)
    page.para(f"Generated {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} from {VERDICT_FILE} and the results "
              f"tree beside it ({tree.name}, spec {tree.spec_id}).", cls="note")
    return f"lockbench verdict: {v['lock']}"


def check_tree(trees, d):
    """The verdict's tree: DIR itself, a matrix."""
    t = next((t for t in trees if os.path.normpath(t.path) == os.path.normpath(d)), None)
    if t is None or t.kind != "matrix":
        raise Fail(os.path.join(d, VERDICT_FILE), "lies beside no matrix tree (lockbench-results.json of kind \"matrix\")")
    return t

