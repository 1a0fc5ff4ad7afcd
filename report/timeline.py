"""2. The timeline of a witness: one lane per client, the lease as the client believed it, the
critical section as the store saw it, fault windows shaded, the overlap hatched. The checker
chose the sections (A and B) and their window (sections.json); this draws them."""

from .common import MAX_OTHER_LANES, color_of, fmt_ms, num, plt, save_fig

KIND_TITLE = {
    "mutual_exclusion": "two holders in the store",
    "stale_write": "a stale write accepted",
    "reject": "the fence rejects a stale write",
    "foreign_release": "a release deletes another holder's lock",
}
FAULT_COL = "#9e9e9e"


def find_focus(cell):
    """(kind, rep, witness-or-None) for the cell's most telling case, or None."""
    for kind in ("mutual_exclusion", "stale_write", "reject", "foreign_release"):
        for rep in cell.reps:
            run = cell.run_of(rep)
            if kind == "reject":
                safety = run.get("safety") or {}
                if num(safety.get("stale_writes_rejected"), 0) + num(safety.get("holder_writes_rejected"), 0) > 0:
                    return kind, rep, None
                continue
            for w in run.get("witnesses") or []:
                if isinstance(w, dict) and w.get("kind") == kind:
                    return kind, rep, w
    return None


def draw_timeline(cell, focus, rd, outdir, name):
    """Returns (Image_, caption) or (None, reason)."""
    kind, rep, _ = focus
    if rd.offset_ns is None:
        return None, "no critical section was entered, so the store's clock cannot be placed on the clients' axis"
    win = rd.window(kind) or {}
    A = rd.sec_by_enter.get(win.get("a_enter_seq")) if win.get("placed") else None
    B = rd.sec_by_enter.get(win.get("b_enter_seq")) if win.get("placed") else None
    if A is None or B is None:
        return None, "the witness's sections are not in the store log"
    t = Timeline(cell, kind, rep, rd, A, B, win)
    return t.draw(outdir, name), t.caption()


class Timeline:
    """One witness's figure: its window, lanes and faults, then the drawing and its caption."""

    def __init__(self, cell, kind, rep, rd, A, B, win):
        self.cell, self.kind, self.rep, self.rd, self.A, self.B = cell, kind, rep, rd, A, B
        self.LA, self.LB = rd.lease_by_id.get(A.lease), rd.lease_by_id.get(B.lease)
        # A lock that renews in a task of its own (reentrant's watchdog): believed until released.
        # A run recorded before its record said so is judged by the rule the record now
        # carries: reentrant with its watchdog on.
        run = cell.run_of(rep) or {}
        self.watchdog = run.get("renews_in_background") is True if "renews_in_background" in run else (
            cell.algorithm == "reentrant" and (cell.raw.get("params") or {}).get("watchdog", True) is not False)
        self.release_t = win.get("release_ms")
        self.others_inside = int(num(win.get("others_inside"), 0))
        lo, hi = (num(x) for x in win.get("window_ms") or [A.enter, A.end()])
        span = max(hi - lo, 1.0)
        margin = max(0.05 * span, 0.5)
        self.lo, self.hi = lo - margin, hi + margin
        self.pick_lanes()
        self.ov_col = "#0050b3" if (A.rejected or B.rejected) else "#d7301f"
        ov = win.get("overlap_ms")
        self.has_overlap = isinstance(ov, list) and len(ov) == 2
        self.ov_lo, self.ov_hi = (num(ov[0]), num(ov[1])) if self.has_overlap else (0.0, 0.0)
        self.zoom = self.has_overlap and (self.ov_hi - self.ov_lo) < 0.04 * (self.hi - self.lo)
        # faults seen in the window, numbered (a fault without an end that began earlier is still in force: listed)
        self.shown_faults = [f for f in rd.faults if not (f.start > self.hi or (f.end is not None and f.end < self.lo))]
        self.role = {A.lease: "A", B.lease: "B"}
        self.col = color_of(cell.variant)

    def pick_lanes(self):
        """A's and B's clients, then the busiest others in the window, up to MAX_OTHER_LANES."""
        lanes = []
        for c in (self.A.client, self.B.client):
            if c not in lanes:
                lanes.append(c)
        others = []
        for c in self.rd.clients:
            if c in lanes:
                continue
            k = len(self.rd.sections_of(c, self.lo, self.hi))
            if k:
                others.append((-k, str(c), c))
        others.sort()
        self.lanes = lanes + [c for _, _, c in others[:MAX_OTHER_LANES]]
        self.hidden = len(others) - min(len(others), MAX_OTHER_LANES)
        self.n = len(self.lanes)

    def believed_end(self, lz):
        end = self.rd.lease_end(lz)
        if lz.validity is not None and not self.watchdog:
            return min(end, lz.acq_ok + lz.validity)
        return end

    def plot(self, ax, xlo, xhi, annotate):
        ax.set_xlim(xlo, xhi)
        ax.set_ylim(self.n - 0.45, -0.75)
        for i, c in enumerate(self.lanes):
            ax.axhline(i + 0.5, color="#e0e0e0", lw=0.6, zorder=0)
            for lz in self.rd.leases_of(c, xlo, xhi):
                self.plot_lease(ax, i, lz, xlo, xhi, annotate)
            for s in self.rd.sections_of(c, xlo, xhi):
                self.plot_section(ax, i, s)
        for k, f in enumerate(self.shown_faults):
            self.plot_fault(ax, k, f, xlo, xhi, annotate)
        if self.has_overlap:
            ax.axvspan(self.ov_lo, max(self.ov_hi, self.ov_lo + (xhi - xlo) * 0.002), facecolor="none",
                       edgecolor=self.ov_col, hatch="////", lw=0.0, alpha=0.75, zorder=1)
            for x in (self.ov_lo, self.ov_hi):
                ax.axvline(x, color=self.ov_col, lw=0.8, zorder=1)
        if self.release_t is not None:
            ax.axvline(self.release_t, color="#ff7f00", lw=1.8, zorder=5)
        ax.set_yticks(range(self.n))
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)

    def plot_lease(self, ax, i, lz, xlo, xhi, annotate):
        from matplotlib.patches import Rectangle
        col = self.col
        end = self.rd.lease_end(lz)
        bel = self.believed_end(lz)
        hl = lz.lease in self.role
        ax.add_patch(Rectangle((lz.acq_ok, i - 0.42), max(bel - lz.acq_ok, 0), 0.3, facecolor=col,
                               alpha=0.9 if hl else 0.35, edgecolor="none", zorder=2))
        if end > bel:
            ax.add_patch(Rectangle((lz.acq_ok, i - 0.42), end - lz.acq_ok, 0.3, facecolor="none",
                                   edgecolor=col, lw=1.1 if hl else 0.6, ls="--", zorder=2))
        for t, ty in lz.renewals:  # small ticks above the lease: renewals, failed (or lost) ones red
            ax.plot([t, t], [i - 0.5, i - 0.38], color="#d7301f" if ty in ("fail", "lost") else "black",
                    lw=1.0, zorder=6, solid_capstyle="butt")
        if hl and lz.write_inv is not None:
            ax.plot([lz.write_inv], [i - 0.27], marker="v", color="black", ms=6, mec="white", mew=0.6, zorder=6)
        if not (hl and annotate):
            return
        txt = f"{self.role[lz.lease]}: lease {lz.lease}"
        if lz.fence is not None:
            txt += f", fence {lz.fence}"
        if lz.validity is not None:
            txt += f", validity {fmt_ms(lz.validity)}"
        if lz.rel_end is None and lz.rel_inv is None:
            txt += ", never released"
        if lz.acq_ok > xlo + 0.55 * (xhi - xlo):
            tx, ha = min(max(end, lz.acq_ok), xhi), "right"
        else:
            tx, ha = max(lz.acq_ok, xlo), "left"
        ax.text(tx, i - 0.44, txt, fontsize=7.5, va="bottom", ha=ha, zorder=7,
                clip_on=True, bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.4))

    def plot_section(self, ax, i, s):
        from matplotlib.patches import Rectangle
        hl = s.lease in self.role
        end = s.end()
        ax.add_patch(Rectangle((s.enter, i - 0.06), max(end - s.enter, 0), 0.3,
                               facecolor="#2b2b2b" if hl else "#9a9a9a", edgecolor="none", zorder=3))
        if s.write is None:
            return
        if s.rejected:
            ax.plot([s.write], [i + 0.09], marker="X", color="#0050b3", ms=10, mec="white", mew=0.8, zorder=6)
        elif hl:
            stale = (self.kind == "stale_write" and s is self.A)
            ax.plot([s.write, s.write], [i - 0.12, i + 0.3], color="#d7301f" if stale else "black",
                    lw=2.2, zorder=6, solid_capstyle="butt")

    def plot_fault(self, ax, k, f, xlo, xhi, annotate):
        from matplotlib.patches import Rectangle
        if f.fault in ("pause", "kill", "gate") and f.client in self.lanes:
            i = self.lanes.index(f.client)
            if f.end is not None:
                ax.add_patch(Rectangle((f.start, i - 0.5), f.end - f.start, 1.0, facecolor=FAULT_COL, alpha=0.22,
                                       hatch="xx", edgecolor="#777777", lw=0, zorder=1))
            else:
                ax.plot([f.start, f.start], [i - 0.5, i + 0.5], color="black", lw=2.5, zorder=5)
        elif f.end is not None:
            ax.axvspan(f.start, f.end, color=FAULT_COL, alpha=0.18, lw=0, zorder=0)
        else:
            ax.axvline(f.start, color="#444444", lw=1.4, ls=":", zorder=1)
        if annotate:
            near = sum(1 for g in self.shown_faults[:k] if abs(max(g.start, xlo) - max(f.start, xlo)) < 0.02 * (xhi - xlo))
            ax.annotate(str(k + 1), (max(f.start, xlo), 1.0), xycoords=ax.get_xaxis_transform(), xytext=(1 + 13 * near, 3),
                        textcoords="offset points", fontsize=7, ha="left", va="bottom", color="white", fontweight="bold",
                        bbox=dict(boxstyle="circle,pad=0.15", fc="#555555", ec="none"), zorder=8, annotation_clip=False)

    def draw(self, outdir, name):
        p = plt()
        title_h, lane_h, axis_h, legend_h = 0.55, 0.7, 0.55, 0.62
        faults_h = 0.17 * len(self.shown_faults)
        H = title_h + lane_h * self.n + 0.35 + axis_h + faults_h + legend_h
        fig = p.figure(figsize=(11.0, H))
        bottom, top = (axis_h + faults_h + legend_h) / H, 1 - title_h / H
        if self.zoom:
            gs = fig.add_gridspec(1, 2, width_ratios=[3.3, 1], wspace=0.05, left=0.1, right=0.985, bottom=bottom, top=top)
            axes = [fig.add_subplot(gs[0])]
            axes.append(fig.add_subplot(gs[1], sharey=axes[0]))
        else:
            gs = fig.add_gridspec(1, 1, left=0.1, right=0.985, bottom=bottom, top=top)
            axes = [fig.add_subplot(gs[0])]
        self.plot(axes[0], self.lo, self.hi, True)
        A, B = self.A, self.B
        axes[0].set_yticklabels([f"client {c}" + (f" ({'A' if c == A.client else 'B'})" if c in (A.client, B.client)
                                                  and A.client != B.client else "") for c in self.lanes])
        self.note_writes(axes[0])
        axes[0].set_xlabel("ms since the run's first client event (CLOCK_MONOTONIC)")
        if self.zoom:
            self.draw_zoom(axes)
        title = f"{self.cell.id}: {KIND_TITLE[self.kind]} (rep {self.rep.get('rep', '?')}, seed {self.rep.get('seed', '?')})"
        fig.text(0.012, 1 - 0.1 / H, title, fontsize=10, fontweight="bold", va="top")
        self.list_faults(fig, H, legend_h, faults_h)
        self.legend(fig)
        return save_fig(fig, name, f"timeline {self.cell.id}", outdir)

    def draw_zoom(self, axes):
        zs = max(self.ov_hi - self.ov_lo, 0.05)
        zlo, zhi = self.ov_lo - 1.5 * zs - 0.3, self.ov_hi + 1.5 * zs + 0.3
        self.plot(axes[1], zlo, zhi, False)
        axes[1].tick_params(axis="y", labelleft=False)
        axes[1].set_title("zoom on the overlap", fontsize=8.5, pad=3)
        axes[1].set_xlabel("ms")
        axes[0].axvspan(zlo, zhi, facecolor="none", edgecolor="#666666", ls="--", lw=0.8, zorder=7)

    def note_writes(self, ax):
        """What happened to A's write, and A's release, in words on the plot."""
        A, B, LA, lo, hi = self.A, self.B, self.LA, self.lo, self.hi
        if A.write is not None and A.client in self.lanes:
            i = self.lanes.index(A.client)
            right = A.write > lo + 0.6 * (hi - lo)
            if A.rejected:
                txt = f"A's write rejected: fence {A.fence} < {A.max_fence} " if A.max_fence is not None else "A's write rejected "
            elif LA is not None and LA.validity is not None and not self.watchdog and A.write > LA.acq_ok + LA.validity:
                txt = f"A's write lands {fmt_ms(A.write - (LA.acq_ok + LA.validity))} after its validity ran out "
            else:
                txt = None
            if txt:
                ax.text(A.write, i + 0.38, (txt if right else " " + txt.strip()), fontsize=7.5,
                        color=self.ov_col if A.rejected else "#b00020", ha="right" if right else "left", va="center",
                        zorder=8, clip_on=True, bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.3))
        if self.release_t is not None:
            ax.text(self.release_t, self.n - 0.5, f" A's release deletes B's lock ({B.lease}) ", color="#e06000",
                    fontsize=7.5, va="bottom", ha="right" if self.release_t > lo + 0.6 * (hi - lo) else "left", zorder=8,
                    bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.3))

    def list_faults(self, fig, H, legend_h, faults_h):
        y = (legend_h + faults_h) / H - 0.03 / H
        for k, f in enumerate(self.shown_faults):
            when = f"{f.start:.1f} ms" + (f" → {f.end:.1f} ms" if f.end is not None else
                                          (" (no end; before this window, still in force)" if f.start < self.lo else " (no end)"))
            fig.text(0.1, y - k * 0.17 / H, f"fault {k + 1}: {f.label}, {when}", fontsize=7.5, va="top", color="#333333")

    def legend(self, fig):
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        col = self.col
        handles = [Patch(facecolor=col, alpha=0.9, label="lease as the client believed it (" + (
                       "watchdog: until release)" if self.watchdog else "to validity end)")),
                   Patch(facecolor="none", edgecolor=col, ls="--", label="held past validity, until release"),
                   Line2D([], [], marker="v", color="black", ls="none", ms=6, label="client sends its write"),
                   Patch(facecolor="#2b2b2b", label="critical section at the store (enter → exit)"),
                   Line2D([], [], color="black", lw=2, label="write accepted by the store"),
                   Line2D([], [], marker="X", color="#0050b3", ls="none", ms=8, label="write rejected by the fence"),
                   Patch(facecolor=FAULT_COL, alpha=0.35, hatch="xx", edgecolor="#777777", label="fault window (numbered)"),
                   Patch(facecolor="none", edgecolor=self.ov_col, hatch="////", label="A and B both inside at the store")]
        if self.kind == "stale_write":
            handles.insert(5, Line2D([], [], color="#d7301f", lw=2, label="A's stale write, accepted"))
        if self.release_t is not None:
            handles.append(Line2D([], [], color="#ff7f00", lw=2, label="A's release removes B's lock"))
        if any(lz.renewals for c in self.lanes for lz in self.rd.leases.get(c, [])):
            handles.append(Line2D([], [], color="black", lw=1, label="renewal (red: failed, or the lock said lost)"))
        fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.09, 0.0), ncol=3, frameon=False, fontsize=7.5,
                   handlelength=1.8, columnspacing=1.2)

    def caption(self):
        A, B, rep, rd = self.A, self.B, self.rep, self.rd
        cap = [f"Rep {rep.get('rep', '?')} (seed {rep.get('seed', '?')}) of {self.cell.run}, "]
        if self.kind == "mutual_exclusion":
            cap.append(f"its first mutual-exclusion witness: A = {sec_txt(A)}; B = {sec_txt(B)}. ")
        elif self.kind == "stale_write":
            cap.append(f"its first stale-write witness: A = {sec_txt(A)}; B = {sec_txt(B)}, entered before A's write. ")
        elif self.kind == "reject":
            cap.append(f"its first fence rejection: A = {sec_txt(A)}; B = {sec_txt(B)}, the first other lease in after A. ")
        else:
            cap.append(f"its first foreign-release witness: A (releaser) = {sec_txt(A)}; B (victim) = {sec_txt(B)}. ")
        if self.others_inside > 1:
            cap.append(f"While A was inside, {self.others_inside} sections of other leases entered the store. ")
        cap.append(f"Store times (Redis TIME, CLOCK_REALTIME) are mapped onto the clients' CLOCK_MONOTONIC axis by one "
                   f"offset: the median over {rd.offset_n} sections of the store's enter time minus the midpoint of the "
                   f"client's enter call (read invoke → ok); interquartile spread {num(rd.offset_iqr_us):.0f} µs. ")
        cap.append("A lease is drawn from the client's acquire ok to its release" +
                   (" (the watchdog renews the lease, so the client believes it until then)" if self.watchdog else
                    ", filled up to the validity the algorithm reported") + ". ")
        if self.hidden > 0:
            cap.append(f"{self.hidden} more client(s) active in this window are not shown. ")
        return "".join(cap)


def sec_txt(s):
    t = f"lease {s.lease} (client {s.client}) entered at store seq {s.enter_seq}"
    if s.rejected:
        t += f", its write (fence {s.fence}) rejected at seq {s.write_seq} (the store had seen fence {s.max_fence})"
    elif s.write_seq is not None:
        t += f", wrote at seq {s.write_seq}"
    if s.exit_seq is not None:
        t += f", left at seq {s.exit_seq}"
        if s.write_seq is None and not s.rejected:
            t += " without writing (it only read: its holder abandoned the section)"
    return t
