"""lockbench report: render results trees as one self-contained HTML page and a Markdown page.

    /usr/bin/python3 report DIR

DIR is a results tree (the output folder of `lockbench matrix` or `lockbench sweep`, holding
lockbench-results.json, version 6 or 7) or a folder whose immediate subfolders are results trees.
Writes DIR/report.html (images embedded as PNG data URIs), DIR/report.md and
DIR/report-images/*.png. Everything is rendered into DIR/.report.tmp.<pid>/ first and moved in
place only when all of it succeeded; on any failure the previous report is left untouched.
Exit 0 on success, 2 on an error (one line on stderr naming the file and what is wrong).

Where DIR holds verdict.json (`lockbench verdict LOCK --out DIR`), the page is that lock's
verdict on one page instead: its row beside the reference locks' recorded rows, each class and
case with its witness, the command that replays it and what would have prevented it.

The report draws; the checker computes: each run's verdict and figures (summary.json), each
cell's aggregates and intervals (the tree's summary.json) and what a run's timeline and
throughput need (runs/NAME/sections.json) are read as the C++ side wrote them; no verdict is
derived here. A tree of an older version is refused in one line naming `lockbench check DIR
--write`, which adds what it lacks.

Modules: common (errors, JSON, formats, matplotlib), tree (reading a tree), libraries (the
cross-library verdict table the page opens with), rundata (one rep's run on one time axis),
matrix (the verdict matrix), timeline, perf (latency and throughput), phase (a sweep's phase
diagram), findings (the text), page (the page and its files), verdict_page (one lock's verdict).

Needs matplotlib and numpy (Debian: python3-matplotlib); run it with /usr/bin/python3.
"""
