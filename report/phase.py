"""4. A sweep's phase diagram: the violation rate (with its Wilson interval, as the
aggregates hold it) and the unavailable time at each swept value, one line per run."""

import re

from .common import color_of, fmt_n, num, plt, save_fig


def sweep_lines(tree):
    """[(label, key, [cells by value])]: one line per run of the swept scenario, i.e. per position
    within a step (every step runs the same runs in the same order). Labelled by the variant; when
    the sweep changes the variant itself (a swept non-duration parameter), without that parameter."""
    bystep = {}
    for c in sorted(tree.cells, key=lambda c: c.index):
        bystep.setdefault(c.step if c.step is not None else c.value, []).append(c)
    lines = {}
    for cs in bystep.values():
        for k, c in enumerate(cs):
            lines.setdefault(k, []).append(c)
    param = str((tree.sweep or {}).get("path", "")).split(".")[-1]
    out = []
    for k in sorted(lines):
        cs = sorted(lines[k], key=lambda c: num(c.value, 0))
        vs = {c.variant for c in cs}
        if len(vs) == 1:
            label = cs[0].variant
        else:
            label = re.sub(r"\+" + re.escape(param) + r"=[^+]*", "", cs[0].variant) if param else cs[0].algorithm
        out.append([label, k, cs])
    seen = {}
    for ln in out:
        seen[ln[0]] = seen.get(ln[0], 0) + 1
    for ln in out:
        if seen[ln[0]] > 1:
            ln[0] = f"{ln[0]} [{ln[2][0].label_suffix()}]"
    return [(label, label, cs) for label, k, cs in out]


def boundary(cs):
    """(x, lo_value, hi_value) between the last rate-0 step and the first step with rate > 0 after it."""
    pts = [(num(c.value), c.violation_rate()[0]) for c in cs if c.reps]
    for (v0, r0), (v1, r1) in zip(pts, pts[1:]):
        if r0 == 0 and r1 > 0:
            return (v0 + v1) / 2, v0, v1
    return None


def draw_phase(tree, outdir):
    p = plt()
    sw = tree.sweep
    lines = sweep_lines(tree)
    fig, axes = p.subplots(1, 2, figsize=(11, 4.2 + 0.2 * ((len(lines) + 3) // 4)))
    ax = axes[0]
    bounds = draw_rates(ax, tree, lines)
    mark_boundaries(axes, bounds)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(sw.get("path", "swept value"))
    ax.set_ylabel("violation rate (share of reps with ≥ 1 violation)")
    ax.set_title("violation rate, 95% interval (Wilson)")
    ax.grid(True, color="#eeeeee")
    draw_availability(axes[1], tree, lines)
    vals = sw.get("values") or sorted({num(c.value) for c in tree.cells})
    for a in axes:
        if len(vals) <= 12:
            a.set_xticks(vals)
    fig.suptitle(f"sweep of {sw.get('scenario', '?')}: {sw.get('path', '?')} from {fmt_n(sw.get('from', '?'))} "
                 f"to {fmt_n(sw.get('to', '?'))}", fontsize=10, x=0.06, ha="left")
    h, lab = ax.get_legend_handles_labels()
    nrow = (len(h) + 3) // 4
    fig.legend(h, lab, loc="lower center", ncol=min(4, max(len(h), 1)), frameon=False, fontsize=8)
    fig.tight_layout(rect=(0, 0.07 + 0.045 * nrow, 1, 1))
    return save_fig(fig, f"{tree.slug}-phase.png", f"phase diagram of {tree.name}", outdir), bounds


def draw_rates(ax, tree, lines):
    """Each line's violation rate with its interval; returns the lines' boundaries."""
    nlines = max(len(lines), 1)
    allx = [num(c.value) for c in tree.cells]
    xspan = (max(allx) - min(allx)) if allx and max(allx) > min(allx) else 1.0
    bounds = []
    for li, (label, key, cs) in enumerate(lines):
        pts = [(num(c.value), *c.violation_rate(), c) for c in cs if c.reps]
        if not pts:
            continue
        col = color_of(key)
        xs = [x for x, _, _, _ in pts]
        # lines that agree would hide each other's error bars: offset them a little sideways
        dx = (li - (nlines - 1) / 2) * 0.012 * xspan
        ys = [r for _, r, _, _ in pts]
        lo = [r - ci[0] for _, r, ci, _ in pts]
        hi = [ci[1] - r for _, r, ci, _ in pts]
        ax.errorbar([x + dx for x in xs], ys, yerr=[lo, hi], color=col, marker="o", ms=4, lw=1.5, capsize=3,
                    label=label, alpha=0.9)
        for x, r, _, c in pts:
            if c.partial:
                ax.plot([x], [r], marker="o", mfc="white", mec=col, ms=6)
        b = boundary(cs)
        if b:
            bounds.append((b, col, label))
    return bounds


def mark_boundaries(axes, bounds):
    """A dashed line at each boundary, on both panels; lines that share one share its label."""
    merged = {}
    for (bx, v0, v1), col, label in bounds:
        merged.setdefault((bx, v0, v1), []).append((col, label))
    for k, ((bx, v0, v1), who) in enumerate(sorted(merged.items())):
        col = who[0][0] if len(who) == 1 else "#333333"
        for a in axes:
            a.axvline(bx, color=col, ls="--", lw=1.2, zorder=1)
        axes[0].text(bx, 0.62 - 0.16 * (k % 4), f" boundary: between {fmt_n(v0)} and {fmt_n(v1)}\n "
                     + ", ".join(lab for _, lab in who), color=col, fontsize=7.5, va="center", ha="left", zorder=6,
                     bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.5))


def draw_availability(ax2, tree, lines):
    sw = tree.sweep
    for label, key, cs in lines:
        pts = [(num(c.value), c.unavailable_mean(), c.unavailable_max()) for c in cs if c.reps]
        if not pts:
            continue
        col = color_of(key)
        ax2.plot([x for x, _, _ in pts], [m for _, m, _ in pts], color=col, marker="o", ms=4, lw=1.5, label=label)
        ax2.plot([x for x, _, _ in pts], [m for _, _, m in pts], color=col, marker="v", mfc="none", ms=6, lw=0)
    if not any(c.unavailable_max() > 0 for c in tree.cells if c.reps):
        ax2.set_ylim(0, 1)
        ax2.text(0.5, 0.5, "no unavailable time at any value", transform=ax2.transAxes, ha="center", color="#666666")
    ax2.set_xlabel(sw.get("path", "swept value"))
    ax2.set_ylabel("unavailable ms per rep (dot: mean, ▽: max)")
    ax2.set_title("availability")
    if ax2.get_ylim()[1] > 0:
        ax2.set_ylim(bottom=0)
    ax2.grid(True, color="#eeeeee")
