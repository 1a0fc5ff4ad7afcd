"""What every part of the report shares: the one-line error, reading JSON, number and time
formats, matplotlib (loaded once, on first use), colours and saving a figure."""

import io
import json
import os
import re
import sys

PROG = "lockbench report"
BUCKET_MS = 100.0        # throughput buckets
MAX_OTHER_LANES = 2      # timeline: clients shown besides the two involved
DPI = 100
NBSP = "\u00a0"

class Fail(Exception):
    """An error to report as one line: `lockbench report: WHERE: WHAT`."""

    def __init__(self, where, what):
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what

    def __reduce__(self):  # raised in a drawing process, it reaches the parent whole
        return Fail, (self.where, self.what)


# --------------------------------------------------------------------------------------------
# reading


def json_msg(e):
    """json's message without its dangling "at" ("Invalid control character at")."""
    return re.sub(r"\s+at$", "", e.msg)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise Fail(path, "missing (the results tree is incomplete: re-run or re-merge it)")
    except IsADirectoryError:
        raise Fail(path, "is a folder, expected a JSON file")
    except json.JSONDecodeError as e:
        raise Fail(path, f"not valid JSON (line {e.lineno} column {e.colno}: {json_msg(e)})")
    except UnicodeDecodeError as e:
        raise Fail(path, f"not UTF-8 text ({e.reason} at byte {e.start})")


def read_jsonl(path, keep=None):
    """Yield one dict per line; keep(line) may drop lines before they are parsed."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise Fail(path, "missing (the results tree is incomplete: re-run or re-merge it)")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if keep is not None and not keep(line):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise Fail(path, f"line {n}: not valid JSON ({json_msg(e)} at column {e.colno})")
            if not isinstance(obj, dict):
                raise Fail(path, f"line {n}: expected a JSON object")
            yield obj


def num(x, default=0.0):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else default


_plt = None


def plt():
    global _plt
    if _plt is None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as p
            import numpy as np
            np.zeros(1)
        except ImportError as e:
            raise Fail(sys.executable, f"cannot import {e.name}: run the report with /usr/bin/python3 "
                                       "(Debian's python3-matplotlib and python3-numpy)")
        p.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
                           "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.dpi": DPI,
                           "font.family": "DejaVu Sans", "axes.spines.top": False, "axes.spines.right": False})
        _plt = p
    return _plt


# The facts the report words its pages with, defined once in C++ (the verdict words worst
# first, analysis/verdict.h; the verdict table's columns, sim/engine/scenario.cpp; the built-in
# algorithms in order, lockimpl/registry.cpp) and written here by `lockbench list --json`
# (ctest's report_facts_test fails when the two differ).
_FACTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "facts.json")


def _refuse_facts(what):
    """A facts file that is not `lockbench list --json`'s: one line, exit 2, nothing drawn."""
    print(f"{PROG}: {_FACTS_FILE}: {what}", file=sys.stderr)
    sys.exit(2)


try:
    with open(_FACTS_FILE, encoding="utf-8") as _f:
        FACTS = json.load(_f)
    _ = FACTS["verdicts"], FACTS["failure_classes"], FACTS["algorithms"]
    for _key in ("verdict_meanings", "algorithm_summaries"):
        if not isinstance(FACTS[_key], dict):
            raise TypeError(f"{_key} is not an object")
except (OSError, ValueError, KeyError, TypeError) as _e:  # one line, as every error of the report
    _refuse_facts(f"not the facts `lockbench list --json` writes ({type(_e).__name__}: {_e})")

# The verdicts, worst first, as the checker words them and writes them into every run's
# summary and every repetition's figures: the report never derives one. What each means is
# the C++ side's too (analysis/verdict.cpp).
VERDICT_WORDS = tuple(FACTS["verdicts"])
MEANING = {w: FACTS["verdict_meanings"].get(w) for w in VERDICT_WORDS}
if not all(isinstance(m, str) for m in MEANING.values()):
    _refuse_facts(f"its verdict_meanings {FACTS['verdict_meanings']} do not mean each of {VERDICT_WORDS}")
NOT_RUN = "not run"
RANK = {w: i for i, w in enumerate(VERDICT_WORDS + (NOT_RUN,))}


def _verdict(word):
    """A verdict word the report treats apart, checked against the facts when loaded."""
    if word not in VERDICT_WORDS:
        _refuse_facts(f"{word!r} is none of its verdict words {VERDICT_WORDS}")
    return word


ADAPTER_BROKE, TWO_HOLDERS, UNSAFE = _verdict("adapter broke"), _verdict("2 holders"), _verdict("unsafe")
HOLDER_REFUSED, FENCED = _verdict("holder's write refused"), _verdict("stale write refused")
UNAVAILABLE, SAFE = _verdict("unavailable"), _verdict("safe")

# How each verdict looks: its CSS class (o-KEY), its colours (background, text) and the
# colour's name in the text; one for every word of the facts.
_LOOK = {
    ADAPTER_BROKE: ("failed", "#5a5a5a", "white", "dark grey"),
    TWO_HOLDERS: ("violation", "#d7301f", "white", "red"),
    UNSAFE: ("unsafe", "#fdae61", "black", "orange"),
    HOLDER_REFUSED: ("holder-refused", "#2166ac", "white", "dark blue"),
    FENCED: ("fenced", "#7fb3d5", "black", "blue"),
    UNAVAILABLE: ("unavailable", "#b7a4d9", "black", "lavender"),
    SAFE: ("safe", "#91cf60", "black", "green"),
}
if set(_LOOK) != set(VERDICT_WORDS):
    _refuse_facts(f"its verdict words {VERDICT_WORDS} are not those the report colours {tuple(_LOOK)}")
# word -> (background, text colour, legend line, CSS class)
OUTCOME = {w: (_LOOK[w][1], _LOOK[w][2], f"{w}: {MEANING[w]}", "o-" + _LOOK[w][0]) for w in VERDICT_WORDS}
OUTCOME[NOT_RUN] = ("#d9d9d9", "#444444", "not run: no repetition", "o-notrun")
COLOUR_NAME = {w: _LOOK[w][3] for w in VERDICT_WORDS}


def meanings(with_colours=False):
    """Every verdict word with its meaning, worst first, in one sentence's parts: "2 holders:
    two critical sections ..." (or "red, 2 holders (two critical sections ...)")."""
    if with_colours:
        return "; ".join(f"{COLOUR_NAME[w]}, {w} ({MEANING[w]})" for w in VERDICT_WORDS)
    return "; ".join(f"{w}: {MEANING[w]}" for w in VERDICT_WORDS)


def variant_label(case, variant):
    """A case's variant as lock files, commands and pages spell it: CASE+VARIANT, or CASE for its
    default variant (sim/engine/case_file.h: variant_label)."""
    return f"{case}+{variant}" if variant else str(case)


def worst(words):
    """The worst of some verdict words (NOT_RUN when there are none)."""
    words = [w for w in words if w in RANK]
    return min(words, key=RANK.get) if words else NOT_RUN


def css_of(word):
    """The CSS class of a verdict word (or of "not run"); o-none for anything else."""
    return OUTCOME[word][3] if word in OUTCOME else "o-none"


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"]
_variant_colors = {}


def color_of(key):
    if key not in _variant_colors:
        _variant_colors[key] = PALETTE[len(_variant_colors) % len(PALETTE)]
    return _variant_colors[key]


def fmt_ms(v):
    if v is None:
        return "?"
    if v < 0:
        return "−" + fmt_ms(-v)
    if v == 0:
        return "0 ms"
    if v >= 10000:
        return f"{v / 1000:.1f} s"
    if v >= 1000:
        return f"{v / 1000:.2f} s"
    if v >= 10:
        return f"{v:.0f} ms"
    if v >= 1:
        return f"{v:.1f} ms"
    return f"{v:.2f} ms"


def fmt_n(v):
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def slug(s):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "x"


class Image_:
    def __init__(self, name, png, alt):
        self.name, self.png, self.alt = name, png, alt


def save_fig(fig, name, alt, outdir):
    """PNG of the figure, reduced to a 255-colour palette (a third of the size, no visible loss
    on plots). The pixels go from the canvas to the palette directly, and the palette is an
    octree's: matplotlib's own PNG, decoded again and reduced by median cut, took a third of
    the report's CPU."""
    try:
        from PIL import Image
        fig.canvas.draw()
        width, height = fig.canvas.get_width_height()
        img = Image.frombuffer("RGBA", (width, height), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
        q = img.quantize(colors=255, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        out = io.BytesIO()
        q.save(out, format="PNG", optimize=True)
        data = out.getvalue()
    except ImportError:  # no PIL: matplotlib's PNG
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI)
        data = buf.getvalue()
    plt().close(fig)
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)
    return Image_(name, data, alt)


def join_en(xs):
    xs = list(xs)
    if len(xs) <= 1:
        return "".join(xs)
    return ", ".join(xs[:-1]) + " and " + xs[-1]


def plural(n, word, pl=None):
    return f"{fmt_n(n)} {word if n == 1 else (pl or word + 's')}"



def progress(msg):
    print(f"report: {msg}", file=sys.stderr, flush=True)

