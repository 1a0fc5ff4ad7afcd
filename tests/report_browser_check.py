#!/usr/bin/python3
"""Open a lockbench report in headless Chromium and check that it renders.

    /usr/bin/python3 tests/report_browser_check.py REPORT_HTML [--screenshot PATH] [--height PX] [--images-optional]

Copies the report to a temporary file with a small script appended that, once the page has
loaded, checks that every <img> loaded (complete, naturalWidth > 0; at least one image) and that
nothing sticks out at a 1280-px-wide window (no horizontal overflow of the document, every image
and table inside the page width), then writes its verdict as JSON into the DOM. Chromium
(--headless --dump-dom) prints the DOM; this script parses the verdict, prints one line and
exits 0 when the page opened, every image loaded and nothing overflows, 1 when a check failed,
2 when the check could not run (no chromium, no such file, no verdict).

--images-optional accepts a page with no image at all (a verdict page of a lock with no unsafe
case has no witness to draw); an image that is there must still load.
--screenshot PATH also saves a PNG of the page at 1280 px wide and --height px tall (default:
the page's own height as measured by the check, at most 16000), for looking at it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

WIDTH = 1280

CHECK_JS = r"""
<script>
(function () {
  function verdict() {
    var W = window.innerWidth;
    var doc = document.documentElement;
    var imgs = Array.prototype.slice.call(document.images);
    var bad = [], wide = [];
    imgs.forEach(function (im, i) {
      if (!(im.complete && im.naturalWidth > 0)) bad.push(i + ':' + (im.alt || im.src.slice(0, 40)));
      var r = im.getBoundingClientRect();
      if (r.right > W + 0.5 || r.left < -0.5) wide.push('img ' + i + ' (' + (im.alt || '') + ') right=' + Math.round(r.right));
    });
    var els = document.querySelectorAll('table, pre, figure, p, h1, h2, h3, ul, nav');
    for (var k = 0; k < els.length; k++) {
      var r = els[k].getBoundingClientRect();
      if (r.right > W + 0.5) wide.push(els[k].tagName.toLowerCase() + ' #' + k + ' right=' + Math.round(r.right));
    }
    var v = {
      opened: true,
      images: imgs.length,
      images_bad: bad,
      inner_width: W,
      scroll_width: doc.scrollWidth,
      page_height: Math.max(doc.scrollHeight, document.body ? document.body.scrollHeight : 0),
      overflow: doc.scrollWidth > W,
      too_wide: wide.slice(0, 20),
      too_wide_count: wide.length
    };
    var pre = document.createElement('pre');
    pre.id = 'lockbench-report-check';
    pre.style.display = 'none';
    pre.textContent = 'LBCHECK' + JSON.stringify(v) + 'LBCHECK';
    document.body.appendChild(pre);
  }
  if (document.readyState === 'complete') verdict(); else window.addEventListener('load', verdict);
})();
</script>
"""


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def run_chromium(chrome, args, timeout=120):
    base = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
            "--no-first-run", "--disable-extensions", "--disable-background-networking"]
    with tempfile.TemporaryDirectory(prefix="lbcheck-profile.") as prof:
        return subprocess.run(base + [f"--user-data-dir={prof}"] + args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout, text=True)


def parse_args(args):
    """(report, screenshot, height, images optional), or an exit code: 0 after --help, 2 on a bad
    command line."""
    shot = height = None
    optional = False
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a == "--images-optional":
            optional = True
            i += 1
            continue
        if a in ("--screenshot", "--height") and i + 1 < len(args):
            if a == "--screenshot":
                shot = args[i + 1]
            else:
                height = int(args[i + 1])
            i += 2
            continue
        pos.append(a)
        i += 1
    if len(pos) != 1:
        print("report_browser_check: usage: report_browser_check.py REPORT_HTML [--screenshot PATH] [--height PX] "
              "[--images-optional]", file=sys.stderr)
        return 2
    return os.path.abspath(pos[0]), shot, height, optional


def with_check(report):
    """A copy of the report with the check script, beside it (so that relative paths, if any,
    resolve the same way) or, in a read-only folder, in the temp folder: the report is
    self-contained."""
    with open(report, encoding="utf-8") as f:
        page = f.read()
    idx = page.lower().rfind("</body>")
    checked = page[:idx] + CHECK_JS + page[idx:] if idx >= 0 else page + CHECK_JS
    try:
        fd, tmp = tempfile.mkstemp(prefix=".report-check.", suffix=".html", dir=os.path.dirname(report))
    except OSError:
        fd, tmp = tempfile.mkstemp(prefix="report-check.", suffix=".html")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(checked)
    return tmp


def problems_of(v, images_optional=False):
    """What the page's verdict says is wrong, one phrase each."""
    problems = []
    if not v.get("opened"):
        problems.append("did not open")
    if v.get("images", 0) == 0 and not images_optional:
        problems.append("no images")
    if v.get("images_bad"):
        problems.append(f"{len(v['images_bad'])} image(s) did not load: {', '.join(v['images_bad'][:5])}")
    if v.get("overflow"):
        problems.append(f"horizontal overflow: scrollWidth {v['scroll_width']} > {v['inner_width']}")
    if v.get("too_wide_count"):
        problems.append(f"{v['too_wide_count']} element(s) past the right edge: {'; '.join(v['too_wide'][:5])}")
    return problems


def screenshot(chrome, url, shot, height, v):
    """A problem phrase, or None when the screenshot was taken."""
    h = height or min(max(int(v.get("page_height", 2000)), 600), 16000)
    try:
        rs = run_chromium(chrome, [f"--window-size={WIDTH},{h}", "--virtual-time-budget=10000",
                                   f"--screenshot={os.path.abspath(shot)}", url])
        if rs.returncode != 0 or not os.path.exists(shot):
            return f"screenshot failed (chromium exit {rs.returncode})"
    except subprocess.TimeoutExpired:
        return "screenshot timed out"
    return None


def check_page(chrome, report, url, shot, height, images_optional=False):
    """Opens the page in chromium and prints OK or FAIL; returns the exit code."""
    try:
        r = run_chromium(chrome, [f"--window-size={WIDTH},2000", "--virtual-time-budget=10000", "--dump-dom", url])
    except subprocess.TimeoutExpired:
        print(f"FAIL {report}: chromium did not finish within 120 s", file=sys.stderr)
        return 2
    m = re.search(r"LBCHECK(\{.*?\})LBCHECK", r.stdout, re.S)
    if not m:
        err = (r.stderr or "").strip().splitlines()
        print(f"FAIL {report}: no verdict from the page (chromium exit {r.returncode}"
              + (f": {err[-1]}" if err else "") + ")")
        return 2
    v = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    problems = problems_of(v, images_optional)
    if shot:
        problems += [p for p in [screenshot(chrome, url, shot, height, v)] if p]
    if problems:
        print(f"FAIL {report}: " + "; ".join(problems))
        return 1
    summary = (f"{v.get('images', 0)} images loaded, page {v.get('scroll_width')}x{v.get('page_height')} px "
               f"at a {v.get('inner_width')}-px window")
    print(f"OK {report}: {summary}" + (f"; screenshot {shot}" if shot else ""))
    return 0


def main(argv):
    parsed = parse_args(argv[1:])
    if isinstance(parsed, int):
        return parsed
    report, shot, height, optional = parsed
    if not os.path.isfile(report):
        print(f"report_browser_check: {report}: no such file", file=sys.stderr)
        return 2
    chrome = find_chromium()
    if not chrome:
        print("report_browser_check: no chromium on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    tmp = with_check(report)
    try:
        return check_page(chrome, report, "file://" + tmp, shot, height, optional)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
