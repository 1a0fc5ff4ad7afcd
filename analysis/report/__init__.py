"""lockbench report: render results trees as one self-contained HTML page and a Markdown page.

    /usr/bin/python3 analysis/report DIR

DIR is a results tree (the output folder of `lockbench matrix` or `lockbench sweep`, holding
lockbench-results.json, version 5, 4 or 3) or a folder whose immediate subfolders are results trees.
Writes DIR/report.html (images embedded as PNG data URIs), DIR/report.md and
DIR/report-images/*.png. Everything is rendered into DIR/.report.tmp.<pid>/ first and moved in
place only when all of it succeeded; on any failure the previous report is left untouched.
Exit 0 on success, 2 on an error (one line on stderr naming the file and what is wrong).

The report draws; the checker computes: each run's figures (summary.json), each cell's
aggregates and intervals (the tree's summary.json) and what a run's timeline and throughput
need (runs/NAME/sections.json) are read as the C++ side wrote them. A tree of an older version
is refused in one line naming `lockbench check DIR --write`, which adds those files.

Modules: common (errors, JSON, formats, matplotlib), tree (reading a tree), libraries (the
cross-library verdict table the page opens with), rundata (one rep's run on one time axis),
matrix (the verdict matrix), timeline, perf (latency and throughput), phase (a sweep's phase
diagram), findings (the text), page (the page and its files).

Needs matplotlib and numpy (Debian: python3-matplotlib); run it with /usr/bin/python3.
"""
