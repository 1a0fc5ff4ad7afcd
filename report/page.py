"""6. The page: every figure planned and drawn in order (with progress), then the HTML and the
Markdown written together, and moved in place only when all of it succeeded."""

import base64
import datetime
import html
import os
import re
import shutil

from .common import BUCKET_MS, NOT_RUN, Fail, color_of, css_of, fmt_ms, fmt_n, join_en, meanings, num, plural, progress, slug
from .discovered import load as load_explore, write_discovered
from .findings import budget_note, scenario_text, write_findings
from .libraries import README_CLOSE, draw_library_grid, table_rows, write_library_table
from .matrix import draw_matrix, matrix_table
from .perf import draw_latency, draw_throughput
from .phase import draw_phase, sweep_lines
from .rundata import RepData
from .timeline import draw_timeline, find_focus
from .tree import find_trees
from .verdict_page import build_verdict, check_tree, load_verdict

CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:14px;line-height:1.45;color:#222;
 margin:0;padding:0 16px;}
main{max-width:1200px;margin:0 auto;}
h1{font-size:24px;margin:18px 0 6px} h2{font-size:20px;margin:32px 0 8px;border-bottom:2px solid #ddd;padding-bottom:3px}
h3{font-size:16px;margin:26px 0 6px} h4{font-size:14px;margin:14px 0 4px}
img{max-width:100%;height:auto;display:block;margin:6px 0;border:1px solid #eee}
figure{margin:8px 0 18px} figcaption{font-size:12px;color:#555;max-width:1100px}
table{border-collapse:collapse;font-size:12px;margin:6px 0 14px;width:100%;table-layout:fixed}
th,td{border:1px solid #ccc;padding:3px 5px;text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:break-word}
th{background:#f3f3f3}
table.matrix td{text-align:center;font-size:11px}
table.matrix td.rowhead{text-align:left;font-weight:bold}
table.matrix td.stack{padding:0;display:table-cell}
table.matrix td.stack div{padding:3px 4px;height:100%;box-sizing:border-box}
table.matrix td.stack div + div{border-top:2px solid #fff}
table.matrix th{font-size:11px}
table.cells td.num{text-align:right}
.o-violation{background:#d7301f;color:#fff}.o-unsafe{background:#fdae61}.o-fenced{background:#7fb3d5}
.o-safe{background:#91cf60}.o-notrun{background:#d9d9d9;color:#444}.o-none{background:#fff;color:#888}
.o-failed{background:#5a5a5a;color:#fff}.o-unavailable{background:#b7a4d9}
.o-violation a,.o-failed a{color:#fff}
sup.note-ref{font-size:9px;margin-left:2px} sup.note-ref a{color:#555;text-decoration:none}
ol.notes{font-size:12px;color:#444;margin:2px 0 12px;padding-left:26px} ol.notes li{margin:1px 0}
.warn{border-left:4px solid #d7301f;background:#fff4f2;padding:4px 10px;margin:8px 0}
.badge{display:inline-block;padding:1px 8px;border-radius:3px;font-weight:bold;font-size:13px}
span.small{font-size:10px;opacity:.85}
pre.cmd{font-size:12px;background:#f5f5f5;padding:4px 8px;white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
table.libraries td{font-size:11px} table.libraries td.rowhead{font-weight:bold}
table.libraries th.group{background:#fff;border-left:none;border-right:none;padding-top:8px;font-style:italic}
table.libraries a{color:inherit}
.note{color:#555;font-size:13px} .desc{color:#444;font-style:italic;font-size:13px}
ul{margin:4px 0 8px 0;padding-left:22px} li{margin:2px 0}
nav ul{columns:2;font-size:13px}
code{font-size:12px;background:#f5f5f5;padding:0 3px}
"""


class Page:
    """Collects the report as HTML and Markdown at once."""

    def __init__(self):
        self.h = []
        self.m = []
        self.explore = None  # explore.json, when the folder is `lockbench explore`'s

    def heading(self, level, text, anchor=None):
        a = f' id="{html.escape(anchor)}"' if anchor else ""
        self.h.append(f"<h{level}{a}>{html.escape(text)}</h{level}>")
        self.m.append("\n" + "#" * level + " " + text + "\n")

    def para(self, text, cls=None):
        c = f' class="{cls}"' if cls else ""
        self.h.append(f"<p{c}>{html.escape(text)}</p>")
        self.m.append(("> " + text if cls == "desc" else text) + "\n")

    def lead_bullets(self, items):
        """[(lead, anchor, text)]: a bold lead linked to its section, then the text."""
        self.h.append("<ul>" + "".join(f'<li><a href="#{a}"><b>{html.escape(lead)}</b></a>: {html.escape(text)}</li>'
                                       for lead, a, text in items) + "</ul>")
        self.m.append("\n".join(f"- **{lead}**: {text}" for lead, a, text in items) + "\n")

    def bullets(self, items):
        self.h.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
        self.m.append("\n".join(f"- {i}" for i in items) + "\n")

    def image(self, img, caption=None):
        b64 = base64.b64encode(img.png).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.h.append(f'<figure><img src="data:image/png;base64,{b64}" alt="{html.escape(img.alt)}">{cap}</figure>')
        self.m.append(f"![{img.alt}](report-images/{img.name})\n" + (f"\n{caption.strip()}\n" if caption else ""))

    def table(self, header, rows, cls=None, classes=None, widths=None):
        """rows: lists of str; classes: same shape, a CSS class per cell or None."""
        c = f' class="{cls}"' if cls else ""
        out = [f"<table{c}>"]
        if widths:
            out.append("<colgroup>" + "".join(f'<col style="width:{w}">' if w else "<col>" for w in widths) + "</colgroup>")
        out.append("<tr>" + "".join(f"<th>{html.escape(x)}</th>" for x in header) + "</tr>")
        for i, r in enumerate(rows):
            tds = []
            for j, x in enumerate(r):
                k = classes[i][j] if classes and classes[i][j] else None
                kc = f' class="{k}"' if k else ""
                tds.append(f"<td{kc}>{html.escape(x)}</td>")
            out.append("<tr>" + "".join(tds) + "</tr>")
        out.append("</table>")
        self.h.append("".join(out))
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        self.m.append("| " + " | ".join(esc(x) for x in header) + " |\n|" + "---|" * len(header) + "\n"
                      + "".join("| " + " | ".join(esc(x) or " " for x in r) + " |\n" for r in rows))

    def raw_html(self, s, md=""):
        self.h.append(s)
        if md:
            self.m.append(md)



class Job:
    def __init__(self, label, fn):
        self.label, self.fn = label, fn


# The jobs of the figures being drawn: set before the workers are forked, which read it.
_JOBS = []


def _run_job(i):
    return _JOBS[i].fn()


def workers():
    """Processes to draw with: LOCKBENCH_REPORT_JOBS, else one per core."""
    try:
        n = int(os.environ.get("LOCKBENCH_REPORT_JOBS", "0"))
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


def run_jobs(jobs):
    """Every job's result, by index. Each figure is drawn on its own (a timeline, a scenario's
    two performance plots, a matrix), so they are drawn in forked processes, one per core;
    progress counts them as they end."""
    global _JOBS
    _JOBS = jobs
    n = workers()
    if n == 1 or len(jobs) < 2:
        out = {}
        for i, j in enumerate(jobs):
            progress(f"{j.label} ... ({i + 1}/{len(jobs)})")
            out[i] = j.fn()
        return out
    import concurrent.futures
    import multiprocessing
    out = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_run_job, i): i for i in range(len(jobs))}
        try:
            for done, f in enumerate(concurrent.futures.as_completed(futures)):
                i = futures[f]
                out[i] = f.result()
                progress(f"{jobs[i].label} ... ({done + 1}/{len(jobs)})")
        except BaseException:  # the first failure ends the report: draw nothing more
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return out


def assign_colors(trees):
    """One colour per variant over the whole page, in the trees' order: given before the
    figures are drawn in forked processes, which each kept colours of their own in the order
    they drew (a variant's colour changed from figure to figure and from one report to the next)."""
    for t in trees:
        for c in sorted(t.cells, key=lambda c: c.index):
            color_of(c.variant)
        if t.kind == "sweep":
            for _, key, _ in sweep_lines(t):
                color_of(key)


def build(trees, outdir, page):
    assign_colors(trees)
    # plan every figure first, so progress can count
    jobs = []
    results = {}
    jobs.append(Job("drawing the libraries' table", lambda: draw_library_grid(*table_rows(trees), outdir)))
    results["grid"] = len(jobs) - 1
    for t in trees:
        jobs.append(Job(f"drawing verdict matrix {t.name}", lambda t=t: draw_matrix(t, outdir)))
        results[("matrix", t.name)] = len(jobs) - 1
        if t.kind == "sweep":
            jobs.append(Job(f"drawing phase diagram {t.name}", lambda t=t: draw_phase(t, outdir)))
            results[("phase", t.name)] = len(jobs) - 1
        if t.kind == "matrix":
            groups = [(sc, t.cells_of(sc)) for sc in t.scenario_order]
        else:
            # sweep: timelines for the first step at which each line has something to show
            groups = []
            picked = []
            for label, key, cs in sweep_lines(t):
                for c in cs:
                    if c.reps and find_focus(c):
                        picked.append(c)
                        break
            groups.append((t.sweep.get("scenario", "sweep"), picked))
        for sc, cells in groups:
            for c in cells:
                if not c.reps:
                    continue
                f = find_focus(c)
                if f:
                    nm = f"{t.slug}-timeline-{slug(c.id)}.png"
                    jobs.append(Job(f"drawing timeline {c.id}", lambda c=c, f=f, nm=nm: timeline_job(c, f, outdir, nm)))
                    results.setdefault(("tl", t.name, sc), []).append((c, len(jobs) - 1))
            if t.kind == "matrix" and any(c.reps for c in cells):
                jobs.append(Job(f"drawing latency and throughput {sc}",
                                lambda t=t, sc=sc, cells=cells: perf_job(t, sc, [c for c in cells if c.reps], outdir)))
                results[("perf", t.name, sc)] = len(jobs) - 1
    results.update(run_jobs(jobs))
    write_page(trees, results, page)


def perf_job(t, sc, cells, outdir):
    """A scenario's two performance plots, from every rep's history read once."""
    datas = load_scenario(cells)
    return (draw_latency(sc, sc, cells, datas, outdir, f"{t.slug}-latency-{slug(sc)}.png"),
            draw_throughput(sc, cells, datas, outdir, f"{t.slug}-throughput-{slug(sc)}.png"))


def timeline_job(cell, focus, outdir, name):
    rd = RepData(cell, focus[1], full=True)
    return draw_timeline(cell, focus, rd, outdir, name)


def load_scenario(cells):
    out = {}
    for c in cells:
        out[c.id] = [RepData(c, r, full=False) for r in c.reps]
    return out


def tree_dates(trees):
    ts = []
    for t in trees:
        for c in t.cells:
            for r in c.reps:
                try:
                    ts.append(os.path.getmtime(os.path.join(c.rep_path(r), "summary.json")))
                except OSError:
                    pass
    if not ts:
        return None
    f = lambda x: datetime.datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M")  # noqa: E731
    return f(min(ts)), f(max(ts))

def write_page(trees, results, page):
    write_cover(trees, page, results.get(results.get("grid")))
    write_findings(trees, page)
    write_howto(page)
    toc = []
    for t in trees:
        toc.append(f'<li><a href="#{slug(t.name)}">{html.escape(t.name)}</a> ({t.kind})</li>')
        if t.kind == "matrix":
            for sc in t.scenario_order:
                toc.append(f'<li><a href="#{slug(t.name)}-{slug(sc)}">{html.escape(t.name)} / {html.escape(sc)}</a></li>')
    page.raw_html("<nav><ul>" + "".join(toc) + "</ul></nav>")
    for t in trees:
        page.heading(2, f"{t.name}: {t.kind}" + (f" of {t.sweep.get('scenario')}" if t.kind == "sweep" else ""), slug(t.name))
        page.heading(3, "Verdict matrix")
        page.image(results[results[("matrix", t.name)]], ("Rows: locks; columns: cases" if t.kind == "matrix" else
                   f"Rows: variants; columns: values of {t.sweep.get('path')}") +
                   ". A cell split in stripes holds several runs of one row in one column (a case's variants of the "
                   "lock, named in the stripe); its colour is the worst verdict the checker recorded over its reps.")
        page.raw_html(*matrix_table(t))
        if t.kind == "sweep":
            write_sweep(t, results, page)
            continue
        for sc in t.scenario_order:
            write_scenario(t, sc, results, page)


def write_cover(trees, page, grid=None):
    ncell = sum(len(t.cells) for t in trees)
    nrep = sum(len(c.reps) for t in trees for c in t.cells)
    nplanned = sum(max(c.repeat, len(c.reps)) for t in trees for c in t.cells)
    seeds = sorted({r.get("seed") for t in trees for c in t.cells for r in c.reps if isinstance(r.get("seed"), int)})
    dates = tree_dates(trees)
    page.heading(1, "lockbench report")
    table = write_library_table(trees, page, grid)  # the page opens with the libraries side by side
    cover = [f"{t.name}: {t.kind}" + (f" of {t.sweep.get('scenario')} over {t.sweep.get('path')}" if t.kind == "sweep" else
                                      f" of {plural(len(t.scenario_order), 'scenario')}")
             + f", {plural(len(t.cells), 'cell')}, spec {t.spec_id}" + budget_note(t) for t in trees]
    page.para("Covers " + "; ".join(cover) + ".")
    s = f"{plural(ncell, 'cell')} (a case run against one lock, or a variant of the case), {nrep} of {nplanned} planned reps done"
    if seeds:
        s += f", seeds {seeds[0]}–{seeds[-1]}" if len(seeds) > 3 and seeds[-1] - seeds[0] == len(seeds) - 1 else \
            f", seeds {', '.join(map(str, seeds))}"
    if dates:
        s += f"; reps recorded {dates[0]} to {dates[1]} (file times)"
    page.para(s + f". Generated {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}.")
    for t in trees:
        if t.incomplete:
            page.para(f"INCOMPLETE: {t.name} lacks repetitions in {len(t.incomplete)} of {plural(len(t.cells), 'cell')} "
                      "(a shard not merged, or not finished): "
                      + join_en(f"{c.id} ({len(c.reps)} of {c.repeat} reps)" for c in t.incomplete[:8])
                      + (f" and {len(t.incomplete) - 8} more" if len(t.incomplete) > 8 else "")
                      + ". Those cells are shown as not run (grey) or partial (dashed), and no finding speaks for "
                      "what did not run.")
        if t.unforced:
            page.para(f"COULD NOT FORCE: in {t.name}, repetitions that did not happen as their case is written "
                      "(run again, then counted in no verdict: no evidence either way): "
                      + join_en(f"{c.id}, {c.unforced_text()}" for c in t.unforced[:8])
                      + (f" and {len(t.unforced) - 8} more" if len(t.unforced) > 8 else "") + ".")
    if table:  # the end of what scripts/readme-table copies into README.md
        page.raw_html("", README_CLOSE + "\n")
    if page.explore:  # an explore folder shows what its search discovered
        write_discovered(page.explore, page)


def write_howto(page):
    page.heading(2, "How to read this report", "how")
    page.para(
        "Every figure is drawn from recorded data: the checker's figures in the summaries, the clients' histories "
        "(CLOCK_MONOTONIC), the protected store's log (its own order and clock) and the nemesis's fault log. "
        "The verdict matrix has one row per lock (a case's variants of it in stripes, named in the stripe) and one column per "
        "scenario (per swept value for a sweep); a cell's colour is the worst verdict the checker recorded over its "
        "reps: " + meanings(with_colours=True) + "; grey, not run. "
        "The text gives totals over reps and how many reps had that verdict; ✓/✗ says "
        "whether the scenario's expectations held in every rep. Each timeline replays one concrete case "
        "the checker found (its first witness): one lane per client, the lease as the client believed it, the critical "
        "section as the store saw it, fault windows shaded, the overlap hatched. Performance plots show acquire latency "
        "(CDF, log scale) and sections completed per 100 ms with the checker's unavailability windows in red.")


def write_sweep(t, results, page):
    img, bounds = results[results[("phase", t.name)]]
    sw = t.sweep
    cap = (f"Left: share of reps with at least one mutual-exclusion violation at each value of {sw.get('path')}, "
           "with its 95% Wilson interval; hollow markers: partial cells. ")
    if bounds:
        cap += "Dashed: " + "; ".join(f"{lab}: safe at {fmt_n(v0)}, violating at {fmt_n(v1)}"
                                      for (bx, v0, v1), col, lab in bounds) + ". "
    else:
        cap += "No line goes from rate 0 to a rate above 0 between two steps, so no boundary is marked. "
    cap += "Right: mean unavailable time per rep (marker: the worst rep)."
    page.heading(3, "Phase diagram")
    page.image(img, cap)
    scen = t.scenarios.get(sw.get("scenario"))
    if scen and scen.get("description"):
        page.para("Scenario description: " + scen["description"], cls="desc")
    page.heading(3, "Per value")
    bystep = {}
    for c in t.cells:
        bystep.setdefault((num(c.value), c.step), []).append(c)
    items = []
    for (val, step), cs in sorted(bystep.items(), key=lambda kv: kv[0][0]):
        items.append(f"{sw.get('path')} = {fmt_n(val)}: " + " ".join(scenario_text(cs, scen, brief=True)))
    page.bullets(items)
    tls = results.get(("tl", t.name, sw.get("scenario", "sweep")), [])
    if tls:
        page.heading(3, "Timelines at the first value where each variant fails")
        for c, idx in tls:
            emit_timeline(page, c, results[idx], show_value=sw.get("path"))


def write_scenario(t, sc, results, page):
    cells = t.cells_of(sc)
    scen = t.scenarios.get(sc)
    page.heading(3, sc, f"{slug(t.name)}-{slug(sc)}")
    if scen and scen.get("description"):
        page.para("Scenario description: " + scen["description"], cls="desc")
    page.bullets(scenario_text(cells, scen))
    header = ["run", "variant", "outcome", "viol", "viol reps", "lost", "stale acc.", "rejected", "foreign",
              "unavail (mean)", "acq p50/p99", "expect"]
    rows = [cell_row(c) for c in cells]
    classes = [[None, None, css_of(c.outcome())] + [None] * 9 for c in cells]
    page.table(header, rows, cls="cells", classes=classes,
               widths=["19%", "13%", "8%", "5%", "6%", "5%", "6%", "6%", "6%", "8%", "10%", "8%"])
    for c, idx in results.get(("tl", t.name, sc), []):
        emit_timeline(page, c, results[idx])
    perf = results.get(("perf", t.name, sc))
    if perf is not None:
        latency, throughput = results[perf]
        page.image(latency, "Acquire latency of every outermost acquire attempt in every rep of the run, "
                                     "from the client's invoke to its reply (client histories); left the "
                                     "attempts that got the lock, right those refused or timed out.")
        page.image(throughput, f"Sections the store accepted (its write entries), per {BUCKET_MS:.0f} ms, "
                                     "coloured for the first rep of each run and grey for the others; faults "
                                     "(nemesis log) and unavailable windows (checker) of the coloured rep.")


def cell_row(c):
    """One cell's line of its scenario's table."""
    o = c.outcome()
    acq = c.agg.get("acquire_ms") if isinstance(c.agg.get("acquire_ms"), dict) else {}
    held = c.expectations_held_reps()
    return [c.run, c.variant, o + (" (partial)" if c.partial and o != NOT_RUN else ""),
            fmt_n(c.total("mutual_exclusion_violations")) if c.reps else "–",
            f"{c.reps_with('mutual_exclusion_violations')}/{len(c.reps)}" + (f" of {c.repeat}" if c.partial else ""),
            fmt_n(c.total("lost_updates")), fmt_n(c.total("stale_writes_accepted")),
            fmt_n(c.total("stale_writes_rejected"))
            + (f" + {fmt_n(c.total('holder_writes_rejected'))} holder's" if c.total("holder_writes_rejected") else ""),
            fmt_n(c.total("foreign_releases")),
            fmt_ms(c.unavailable_mean()) if c.reps else "–",
            f"{fmt_ms(num(acq.get('p50'), None))} / {fmt_ms(num(acq.get('p99'), None))}" if acq and c.reps else "–",
            (f"{held}/{len(c.reps)} ✓" if held == len(c.reps) else f"{held}/{len(c.reps)} ✗")
            if c.reps and c.has_expectations() else "–"]


def emit_timeline(page, c, res, show_value=None):
    img, cap = res
    if img is None:
        page.para(f"{c.id}: no timeline ({cap}).", cls="note")
        return
    if show_value:
        cap = f"{show_value} = {fmt_n(c.value)}. " + cap
    page.image(img, cap)


def render(d):
    """The catalog report of the trees in d, or, where d holds verdict.json, its verdict page."""
    verdict = load_verdict(d) if os.path.isdir(d) else None
    trees = find_trees(d)
    if not any(t.cells for t in trees):
        raise Fail(os.path.join(trees[0].path, "summary.json"), "has no cells; nothing to report")
    if verdict is not None:
        tree = check_tree(trees, d)
        return publish(d, lambda outdir, page: build_verdict(verdict, tree, outdir, page))

    def fill(outdir, page):
        page.explore = load_explore(d)
        build(trees, outdir, page)
        return "lockbench report: " + ", ".join(t.name for t in trees)
    return publish(d, fill)


def publish(d, fill):
    """fill(images folder, page) -> title, in d/.report.tmp.PID; then the images and both pages
    moved in place, only when all of it succeeded."""
    pid = os.getpid()
    cleanup_stale(d)
    tmp = os.path.join(d, f".report.tmp.{pid}")
    try:
        os.makedirs(os.path.join(tmp, "report-images"))
    except OSError as e:
        raise Fail(d, f"cannot create {os.path.basename(tmp)}: {e.strerror}")
    try:
        page = Page()
        title = fill(os.path.join(tmp, "report-images"), page)
        doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               f"<title>{html.escape(title)}</title>"
               f"<style>{CSS}</style></head><body><main>\n" + "\n".join(page.h) + "\n</main></body></html>\n")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as f:
            f.write(doc)
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as f:
            f.write("\n".join(page.m))
        # move in place: images folder swapped by rename, then the two pages
        final_imgs = os.path.join(d, "report-images")
        old = os.path.join(d, f".report.old.{pid}")
        if os.path.exists(final_imgs):
            os.rename(final_imgs, old)
        try:
            os.rename(os.path.join(tmp, "report-images"), final_imgs)
        except OSError:
            if os.path.exists(old):
                os.rename(old, final_imgs)
            raise
        os.replace(os.path.join(tmp, "report.md"), os.path.join(d, "report.md"))
        os.replace(os.path.join(tmp, "report.html"), os.path.join(d, "report.html"))
        if os.path.exists(old):
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.path.join(d, "report.html")


def cleanup_stale(d):
    """Remove temp folders left by a report that was killed (its pid no longer runs)."""
    for name in os.listdir(d):
        m = re.fullmatch(r"\.report\.(tmp|old)\.(\d+)", name)
        if not m:
            continue
        pid = int(m.group(2))
        alive = True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            alive = False
        except PermissionError:
            pass
        if not alive:
            shutil.rmtree(os.path.join(d, name), ignore_errors=True)

