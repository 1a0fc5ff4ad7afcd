"""3. Latency and throughput of one scenario: the acquire latency CDF pooled over reps, and
sections completed per bucket over time with the faults and the checker's unavailable
windows."""

from .common import BUCKET_MS, color_of, fmt_ms, plt, save_fig


def draw_latency(scen_key, title, cells, datas, outdir, name):
    p = plt()
    import numpy as np
    fig, axes = p.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    any_line = [False, False]
    seen = {}
    for c in cells:
        dup = seen.get(c.variant, 0)
        seen[c.variant] = dup + 1
        ls = ["-", "--", ":", "-."][dup % 4]
        oks, fails = [], []
        for rd in datas.get(c.id, []):
            oks += rd.acq_ok_dur
            fails += rd.acq_fail_dur
        for k, vals in enumerate((oks, fails)):
            if not vals:
                continue
            v = np.sort(np.maximum(np.asarray(vals, dtype=float), 1e-3))
            y = np.arange(1, len(v) + 1) / len(v)
            axes[k].step(v, y, where="post", color=color_of(c.variant), lw=1.4, ls=ls,
                         label=f"{c.run} (n={len(v)}, p50 {fmt_ms(float(np.median(v)))})")
            any_line[k] = True
    for k, t in enumerate(("acquire attempts that succeeded", "attempts that failed or timed out")):
        ax = axes[k]
        ax.set_xscale("log")
        ax.set_title(t)
        ax.set_xlabel("acquire latency, invoke → reply (ms, log scale)")
        ax.grid(True, which="major", color="#eeeeee")
        if any_line[k]:
            ax.legend(loc="lower right", fontsize=7, frameon=False)
        else:
            ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", color="#888888")
    axes[0].set_ylabel("share of attempts ≤ x")
    axes[0].set_ylim(0, 1.02)
    fig.suptitle(f"{title}: acquire latency CDF, pooled over reps", fontsize=10, x=0.06, ha="left")
    fig.tight_layout()
    return save_fig(fig, name, f"acquire latency CDF {title}", outdir)


def draw_throughput(title, cells, datas, outdir, name):
    p = plt()
    import numpy as np
    from matplotlib.patches import Patch
    rows = [c for c in cells if datas.get(c.id)]
    n = len(rows)
    fig, axes = p.subplots(n, 1, figsize=(11, 0.9 + 1.05 * n + 0.35), sharex=True, squeeze=False)
    axes = axes[:, 0]
    tmax = max((rd.end_ms for c in rows for rd in datas[c.id]), default=1.0)
    edges = np.arange(0, tmax + BUCKET_MS, BUCKET_MS)
    ymax_all = 1
    for ax, c in zip(axes, rows):
        rds = datas[c.id]
        for rd in rds[1:]:
            h, _ = np.histogram(rd.write_ms, bins=edges)
            ax.stairs(h, edges, color="#555555", lw=0.7, alpha=0.7, zorder=4)
            ymax_all = max(ymax_all, h.max() if len(h) else 0)
        rd = rds[0]
        h, _ = np.histogram(rd.write_ms, bins=edges)
        ymax_all = max(ymax_all, h.max() if len(h) else 0)
        ax.stairs(h, edges, fill=True, color=color_of(c.variant), alpha=0.35, lw=0, zorder=2)
        ax.stairs(h, edges, color=color_of(c.variant), lw=1.3, zorder=3)
        for a, b in rd.unavail:
            ax.axvspan(a, b, ymin=0, ymax=1, color="#d7301f", alpha=0.13, lw=0)
            ax.axvspan(a, b, ymin=0, ymax=0.06, color="#d7301f", alpha=0.9, lw=0)
        labels_done = set()
        placed = []
        for f in rd.faults:
            end = f.end if f.end is not None else None
            if end is not None and end > f.start:
                ax.axvspan(f.start, end, color="#777777", alpha=0.18, lw=0, hatch="xx")
            else:
                ax.axvline(f.start, color="#333333", lw=1.0, ls=":")
            if f.fault not in labels_done:
                fx = max(f.start, 0.0)
                near = sum(1 for x in placed if abs(x - fx) < 0.05 * tmax)
                ax.text(fx, 0.97 - 0.22 * near, " " + f.fault, transform=ax.get_xaxis_transform(), fontsize=7,
                        va="top", color="#333333", style="italic", clip_on=True)
                labels_done.add(f.fault)
                placed.append(fx)
        txt = f"{c.run}  ·  rep {rd.rep.get('rep', '?')}"
        if len(rds) > 1:
            txt += f" (grey: reps {', '.join(str(r.rep.get('rep', '?')) for r in rds[1:])})"
        if rd.unavail:
            txt += f"  ·  unavailable {fmt_ms(sum(b - a for a, b in rd.unavail))}"
        ax.text(0.005, 1.0, txt, transform=ax.transAxes, fontsize=8, va="bottom", ha="left")
        ax.grid(True, axis="y", color="#eeeeee")
    for ax in axes:
        ax.set_ylim(0, ymax_all * 1.15 + 0.5)
        ax.set_xlim(0, tmax)
    axes[n // 2].set_ylabel(f"sections completed per {BUCKET_MS:.0f} ms")
    axes[-1].set_xlabel("ms since the run's first client event")
    handles = []
    if any(rd.faults for c in rows for rd in datas[c.id][:1]):
        handles.append(Patch(facecolor="#777777", alpha=0.35, hatch="xx", label="fault window (dotted line: a fault without an end)"))
    if any(rd.unavail for c in rows for rd in datas[c.id][:1]):
        handles.append(Patch(facecolor="#d7301f", alpha=0.5, label="lock unavailable (checker's windows)"))
    if handles:
        fig.legend(handles=handles, loc="lower right", ncol=2, frameon=False, fontsize=7.5)
    fig.suptitle(f"{title}: throughput and availability over time", fontsize=10, x=0.06, ha="left")
    # Margins in inches rather than tight_layout, which measured every tick of every row: with
    # a row per lock it took a second a figure, a fifth of the whole report's drawing.
    width, height = fig.get_size_inches()
    top_in, bottom_in, gap_in = 0.45, 0.04 * height + 0.45, 0.22
    axes_in = (height - top_in - bottom_in - (n - 1) * gap_in) / n
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, top=1 - top_in / height, bottom=bottom_in / height,
                        hspace=gap_in / axes_in)
    return save_fig(fig, name, f"throughput {title}", outdir)
