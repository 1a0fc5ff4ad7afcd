"""1. The verdict matrix: one row per lock (a case's variants of it in stripes), one column per
scenario (per swept value for a sweep), each cell coloured by the worst verdict the checker
recorded over its reps; as a figure and as a table."""

import html

from .common import (ADAPTER_BROKE, FACTS, FENCED, HOLDER_REFUSED, NBSP, NOT_RUN, OUTCOME, SAFE, TWO_HOLDERS, UNAVAILABLE, UNSAFE,
                     VERDICT_WORDS, css_of, fmt_ms, fmt_n, num, plt, save_fig)
from .phase import sweep_lines


def matrix_layout(tree):
    """Rows (variant, sub-row count) and columns; grid[(variant, col)] = [cells]."""
    if tree.kind == "sweep":
        cols = []
        for c in tree.cells:
            key = c.step if c.step is not None else c.value
            if key not in [k for k, _ in cols]:
                cols.append((key, c.value))
        cols.sort(key=lambda kv: (num(kv[0], 0)))
        colkeys = [k for k, _ in cols]
        collabels = [fmt_n(v) if v is not None else f"step {k}" for k, v in cols]
        colof = lambda c: c.step if c.step is not None else c.value  # noqa: E731
    else:
        colkeys = list(tree.scenario_order)
        collabels = colkeys
        colof = lambda c: c.scenario  # noqa: E731
    grid = {}
    if tree.kind == "sweep":
        variants = []
        for label, _, cs in sweep_lines(tree):
            variants.append(label)
            for c in cs:
                grid.setdefault((label, colof(c)), []).append(c)
    else:
        variants = []
        for c in sorted(tree.cells, key=lambda c: c.index):
            if c.variant not in variants:
                variants.append(c.variant)
        variants.sort(key=variant_key)
        for c in sorted(tree.cells, key=lambda c: c.index):
            grid.setdefault((c.variant, colof(c)), []).append(c)
    sub = {v: max(len(grid.get((v, k), [])) for k in colkeys) or 1 for v in variants}
    return variants, sub, colkeys, collabels, grid


ALGO_ORDER = FACTS["algorithms"]  # the built-in algorithms in lockimpl/registry.cpp's order


def variant_key(v):
    alg = v.split("+")[0]
    return (ALGO_ORDER.index(alg) if alg in ALGO_ORDER else len(ALGO_ORDER), alg, v != alg, v)


_measure = {}


def text_width_in(text, size):
    """Width of text in inches at font size (points), as matplotlib will draw it."""
    key = (text, size)
    if key not in _measure:
        from matplotlib.textpath import TextToPath
        from matplotlib.font_manager import FontProperties
        w, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=size), ismath=False)
        _measure[key] = w / 72.0
    return _measure[key]


def wrap_lines(lines, width_in, size):
    """Break lines that are wider than width_in: at " · ", then spaces, then before "+" or "-"."""
    out = []
    for ln in lines:
        while ln and text_width_in(ln, size) > width_in:
            cuts = []
            for sep, keep in ((" · ", False), (" ", False), ("+", True), ("-", True)):
                i = ln.find(sep, 1)
                while i > 0:
                    cuts.append((i, sep, keep))
                    i = ln.find(sep, i + 1)
            fit = [c for c in cuts if text_width_in(ln[:c[0]], size) <= width_in]
            if not fit:
                # nothing fits: cut the word
                k = len(ln)
                while k > 1 and text_width_in(ln[:k] + "…", size) > width_in:
                    k -= 1
                out.append(ln[:k] + "…")
                ln = ""
                break
            i, sep, keep = max(fit, key=lambda c: c[0])
            out.append(ln[:i])
            ln = ln[i:] if keep else ln[i + len(sep):]
        if ln:
            out.append(ln)
    return out


def cell_lines(c, multi):
    """(verdict word, the lines a cell shows): the recorded verdict, what it counts, in how many reps."""
    o = c.outcome()
    n = len(c.reps)
    lines = []
    if multi:
        lines.append(c.label_suffix())
    if o == NOT_RUN:
        lines += ["not run", f"0/{c.repeat or '?'} reps"]
        return o, lines
    k = f"{c.reps_of(o)}/{n} reps"
    if o == ADAPTER_BROKE:
        lines.append(ADAPTER_BROKE)
    elif o == TWO_HOLDERS:
        lines.append(f"{TWO_HOLDERS}: {fmt_n(c.total('mutual_exclusion_violations'))} viol")
    elif o == UNSAFE:
        parts = []
        for m, short in (("lost_updates", "lost"), ("stale_writes_accepted", "stale"), ("foreign_releases", "foreign")):
            if c.total(m) > 0:
                parts.append(f"{fmt_n(c.total(m))} {short}")
        lines.append(" · ".join([UNSAFE] + parts[:2]))
    elif o == HOLDER_REFUSED:
        lines.append(f"holder refused {fmt_n(c.total('holder_writes_rejected'))}")
    elif o == FENCED:
        lines.append(f"refused {fmt_n(c.total('stale_writes_rejected'))}")
    elif o == UNAVAILABLE:
        lines.append(UNAVAILABLE)
    else:
        lines.append(SAFE)
        k = f"{n} reps"
    lines.append(k)
    if c.partial:
        lines[-1] += f" of {c.repeat}"
    um = c.unavailable_mean()
    if um > 0:
        lines.append(f"unavail {fmt_ms(um).replace(' ', NBSP)}")
    return o, lines


def expect_mark(c):
    if not c.reps or not c.has_expectations():
        return None
    return "✓" if c.expectations_held_reps() == len(c.reps) and not c.partial else (
        "✗" if c.expectations_held_reps() < len(c.reps) else "…")


class MatrixFigure:
    """The figure's geometry: a label column, then one column per key, one row per stripe."""

    def __init__(self, tree):
        self.variants, self.sub, self.colkeys, self.collabels, self.grid = matrix_layout(tree)
        self.ncols = len(self.colkeys)
        self.nrows = sum(self.sub.values())
        self.label_w = 1.75
        self.cw = max(0.74, min(1.3, (11.8 - self.label_w - 0.2) / max(self.ncols, 1)))
        self.rh = 0.5
        top_h = 1.15 if tree.kind == "matrix" else 0.75
        self.bottom_h = 0.5 + 0.17 * legend_rows(tree)
        self.W = max(self.label_w + self.ncols * self.cw + 0.25, 10.4)  # never narrower than the legend below it
        self.H = top_h + self.nrows * self.rh + self.bottom_h
        self.fs = 7.2 if self.cw < 0.9 else 8


def draw_matrix(tree, outdir):
    p = plt()
    m = MatrixFigure(tree)
    fig = p.figure(figsize=(m.W, m.H))
    ax = fig.add_axes([m.label_w / m.W, m.bottom_h / m.H, m.ncols * m.cw / m.W, m.nrows * m.rh / m.H])
    ax.set_xlim(0, m.ncols)
    ax.set_ylim(m.nrows, 0)
    ax.axis("off")
    y = 0
    for v in m.variants:
        k = m.sub[v]
        ax.text(-0.08, y + k / 2, v.replace("+", "\n+", 1) if len(v) > 22 else v, ha="right", va="center",
                fontsize=8.5, fontweight="bold")
        for j, key in enumerate(m.colkeys):
            draw_matrix_cell(ax, m, j, y, k, m.grid.get((v, key), []))
        ax.plot([0, m.ncols], [y, y], color="#888888", lw=0.6)
        y += k
    ax.plot([0, m.ncols], [m.nrows, m.nrows], color="#888888", lw=0.6)
    draw_matrix_labels(ax, tree, m)
    draw_matrix_legend(fig, tree, m)
    name = f"{tree.slug}-verdict-matrix.png"
    return save_fig(fig, name, f"verdict matrix of {tree.name}", outdir)


def draw_matrix_cell(ax, m, j, y, k, cells):
    """Column j, rows y to y + k: the cells of one variant there, one stripe each."""
    from matplotlib.patches import Rectangle
    fs = m.fs
    if not cells:
        ax.add_patch(Rectangle((j, y), 1, k, facecolor="white", edgecolor="#bbbbbb", lw=0.6))
        ax.text(j + 0.5, y + k / 2, "–", ha="center", va="center", color="#aaaaaa", fontsize=fs)
        return
    h = k / len(cells)
    for i, c in enumerate(cells):
        y0 = y + i * h
        o, lines = cell_lines(c, len(cells) > 1)
        bg, fg = OUTCOME[o][:2]
        ax.add_patch(Rectangle((j, y0), 1, h, facecolor=bg, edgecolor="white", lw=1.5))
        if c.partial and o != NOT_RUN:
            ax.add_patch(Rectangle((j + 0.04, y0 + 0.06), 0.92, h - 0.12, facecolor="none",
                                   edgecolor="#333333", lw=1.4, ls=(0, (3, 2))))
        lines = wrap_lines(lines, m.cw * 0.92, fs)
        maxl = max(1, int(h * m.rh * 72 / (fs * 1.2)))
        if len(lines) > maxl:
            lines = lines[:maxl]
        ax.text(j + 0.5, y0 + h / 2, "\n".join(lines), ha="center", va="center", color=fg, fontsize=fs,
                linespacing=1.15)
        mark = expect_mark(c)
        if mark:
            col = {"✓": "#1a7f37", "✗": "#b00020", "…": "#666666"}[mark]
            ax.text(j + 0.97, y0 + 0.05, mark, ha="right", va="top", color=col, fontsize=fs + 0.5,
                    fontweight="bold", bbox=dict(boxstyle="circle,pad=0.12", fc="white", ec="none", alpha=0.9))


def draw_matrix_labels(ax, tree, m):
    for j, lab in enumerate(m.collabels):
        if tree.kind == "matrix":
            ax.text(j + 0.5, -0.12, lab, rotation=30, ha="left", va="bottom", fontsize=8.5, rotation_mode="anchor")
        else:
            ax.text(j + 0.5, -0.12, lab, ha="center", va="bottom", fontsize=8.5)
    if tree.kind == "sweep":
        ax.text(m.ncols / 2, -0.75, f"{tree.sweep.get('scenario', '')}: {tree.sweep.get('path', '')} =",
                ha="center", va="bottom", fontsize=9)


def draw_matrix_legend(fig, tree, m):
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=OUTCOME[o][0], edgecolor="none", label=OUTCOME[o][2]) for o in legend_words(tree)]
    handles.append(Patch(facecolor="white", edgecolor="#333333", ls="--", lw=1.4, label="dashed frame: partial, fewer reps than planned"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.01, 0.22 / m.H), ncol=3, frameon=False, fontsize=8)
    fig.text(0.015, 0.06 / m.H, "✓ the run's expectations held in every rep   ✗ failed in some rep   … held in the reps "
             "done, some not run   (no mark: no expectation)   – : the lock is not in this column (the case does not apply to it)",
             ha="left", va="bottom", fontsize=8)


def legend_words(tree):
    """The verdicts a legend names: every word but "adapter broke" (only where an adapter broke), then not run."""
    seen = {c.outcome() for c in tree.cells}
    return [w for w in VERDICT_WORDS if w != ADAPTER_BROKE or w in seen] + [NOT_RUN]


def legend_rows(tree):
    return (len(legend_words(tree)) + 1 + 2) // 3


def matrix_text(tree, c):
    o, lines = cell_lines(c, False)
    m = expect_mark(c) or ""
    return o, " · ".join(lines) + (f" {m}" if m else "")



def wbr(text):
    """HTML-escaped, with line-break opportunities before '+' and after '-' and '='."""
    e = html.escape(text)
    return e.replace("+", "<wbr>+").replace("-", "-<wbr>").replace("=", "=<wbr>")


def matrix_table(t):
    """The verdict matrix as text: (html, markdown). One row per variant; a column holding several runs of
    the variant stacks them."""
    variants, sub, colkeys, collabels, grid = matrix_layout(t)
    head = ["variant"] + [str(x) for x in collabels]
    h = ['<table class="matrix"><colgroup><col style="width:150px">' + "<col>" * len(colkeys) + "</colgroup><tr>"
         + "".join(f"<th>{wbr(x)}</th>" for x in head) + "</tr>"]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        tds = [f'<td class="rowhead">{wbr(v)}</td>']
        mds = [v]
        for key in colkeys:
            cells = grid.get((v, key), [])
            if not cells:
                tds.append('<td class="o-none">–</td>')
                mds.append("–")
                continue
            divs, parts = [], []
            for c in cells:
                o, txt = matrix_text(t, c)
                if len(cells) > 1:
                    txt = f"[{c.label_suffix()}] {txt}"
                divs.append(f'<div class="{css_of(o)}">{html.escape(txt)}</div>')
                parts.append(txt)
            if len(cells) == 1:
                o = cells[0].outcome()
                tds.append(f'<td class="{css_of(o)}">{html.escape(matrix_text(t, cells[0])[1])}</td>')
            else:
                tds.append('<td class="stack">' + "".join(divs) + "</td>")
            mds.append("<br>".join(p.replace("|", "\\|") for p in parts))
        h.append("<tr>" + "".join(tds) + "</tr>")
        md.append("| " + " | ".join(mds) + " |")
    h.append("</table>")
    return "".join(h), "\n".join(md) + "\n"

