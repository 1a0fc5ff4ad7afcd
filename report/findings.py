"""5. Findings in words: one line per scenario (or sweep) at the top of the page, and the
sentences under each scenario, all from the checker's figures."""

import json
import os

from .common import (ADAPTER_BROKE, FENCED, HOLDER_REFUSED, MEANING, SAFE, TWO_HOLDERS, UNAVAILABLE, UNSAFE, fmt_ms, fmt_n, join_en,
                     load_json, num, plural, slug)
from .phase import boundary, sweep_lines


def describe_fault(f):
    if not isinstance(f, dict):
        return str(f)
    parts = [str(f.get("fault", "?"))]
    for k in ("mode", "duration_ms", "jump_ms", "rate", "restart_after_ms", "count", "stagger_ms", "latency_ms"):
        if k in f:
            parts.append(f"{k}={f[k]}")
    if "point" in f:
        parts.append(f"at {f['point']} #{f.get('occurrence', 1)}")
    elif "at_ms" in f:
        parts.append(f"at {f['at_ms']} ms")
    for k in ("client", "node", "nodes", "clients", "store", "replication"):
        if k in f:
            parts.append(f"{k}={json.dumps(f[k])}")
    return " ".join(parts)


def scenario_text(cells, scen, brief=False):
    """[sentences] about one scenario's cells (or, brief, one sweep step)."""
    out = [faults_text(cells, scen)]
    run = [c for c in cells if c.reps]
    notrun = [c for c in cells if not c.reps and not c.could_not_force]
    unforced = [c for c in cells if c.could_not_force]
    out += safety_text(run)
    un = [c for c in run if c.unavailable_mean() > 0.5]
    if un:
        out.append("Unavailable: " + join_en(f"{c.run} {fmt_ms(c.unavailable_mean())} per rep on average "
                                             f"(at most {fmt_ms(c.unavailable_max())})" for c in un) + ".")
    out += expectations_text(run, brief)
    part = [c for c in run if c.partial]
    if part or notrun:
        out.append("Incomplete: " + join_en([f"{c.run} ({c.reps_done} of {c.repeat} reps done)" for c in part]
                                            + [f"{c.run} (not run)" for c in notrun]) + ".")
    if unforced:  # repetitions that did not happen as written: no evidence, in no verdict
        out.append("Could not force: " + join_en(f"{c.run} in {c.unforced_text()}" for c in unforced) + ".")
    return out


def faults_text(cells, scen):
    """What was injected (as the runs report it), else what the scenario schedules."""
    labels = {}
    for c in cells:
        for rep in c.reps:
            for f in c.run_of(rep).get("faults") or []:
                if isinstance(f, dict):
                    lab = f.get("label", f.get("fault", "?"))
                    d = labels.setdefault(lab, [0, 0, set()])
                    d[1] += 1
                    d[2].add(c.run)
                    if num(f.get("fired"), 0) > 0:
                        d[0] += 1
    if labels:
        parts = []
        for lab, (fired, seen, runs) in labels.items():
            s = f"{lab} (fired in {fired} of {seen} rep runs"
            if len(runs) < len(cells):
                s += "; runs " + join_en(sorted(runs))
            parts.append(s + ")")
        return "Injected: " + "; ".join(parts) + "."
    sfaults = (scen or {}).get("faults") or []
    if sfaults:
        return "Scheduled faults: " + "; ".join(describe_fault(f) for f in sfaults) + "."
    return "No fault injected."


DAMAGE = (("lost_updates", "lost update", "lost updates"),
          ("stale_writes_accepted", "stale write accepted", "stale writes accepted"),
          ("foreign_releases", "foreign release", "foreign releases"))


def safety_text(run):
    out = []
    viol = [c for c in run if c.total("mutual_exclusion_violations") > 0]
    if viol:
        out.append("Violated mutual exclusion: " + join_en(
            f"{c.run} ({plural(c.total('mutual_exclusion_violations'), 'overlap')} in "
            f"{c.reps_with('mutual_exclusion_violations')}/{len(c.reps)} reps)" for c in viol) + ".")
    other = []
    for c in run:
        bits = [plural(c.total(m), word, pl) for m, word, pl in DAMAGE if c.total(m) > 0]
        if bits:
            other.append(f"{c.run}: " + ", ".join(bits))
    if other:
        out.append("Store damage: " + "; ".join(other) + ".")
    fenced = [c for c in run if c.total("stale_writes_rejected") > 0]
    if fenced:
        out.append("The store's check (the fence, or check-and-set on the token) rejected stale writes in " + join_en(
            f"{c.run} ({plural(c.total('stale_writes_rejected'), 'write')} in {c.reps_with('stale_writes_rejected')}/{len(c.reps)} reps"
            + (f"; {fmt_n(c.total('fenced_overlaps'))} overlapping sections neutralised" if c.total("fenced_overlaps") > 0 else "")
            + ")" for c in fenced) + ".")
    refused_holder = [c for c in run if c.total("holder_writes_rejected") > 0]
    if refused_holder:
        out.append("The store's check refused writes of the lock's current holder (the lock server said so right after: "
                   "the fence or token ran against the grants) in " + join_en(
                       f"{c.run} ({plural(c.total('holder_writes_rejected'), 'write')} in "
                       f"{c.reps_with('holder_writes_rejected')}/{len(c.reps)} reps)" for c in refused_holder) + ".")
    held = [c for c in run if c.outcome() in (SAFE, HOLDER_REFUSED, FENCED, UNAVAILABLE)]
    if held:
        out.append("Held (no overlap, no lost update, no stale write accepted, no foreign release in any rep): "
                   + join_en(c.run for c in held) + ".")
    dead = [c for c in run if c.reps_of(UNAVAILABLE)]
    if dead:
        out.append("Unavailable (nothing unsafe, but no section completed): " + join_en(
            f"{c.run} ({c.reps_of(UNAVAILABLE)}/{len(c.reps)} reps)" for c in dead) + ".")
    return out


def expectations_text(run, brief):
    """Reps not to trust (an adapter broke), then whether the expectations held."""
    out, fails = [], []
    nexp = nheld = 0
    for c in run:
        for rep in c.reps:
            dead = rep.get("clients_failed") or []
            if dead:  # an external adapter broke the protocol: this rep is not trusted
                first = dead[0] if isinstance(dead[0], dict) else {}
                out.append(f"NOT TRUSTED: {c.run} rep {rep.get('rep', '?')}: {plural(len(dead), 'client')} failed, "
                           f"e.g. client {first.get('client', '?')}: {first.get('error', '?')}.")
        if not c.has_expectations():
            continue
        nexp += 1
        if c.expectations_held_reps() == len(c.reps):
            nheld += 1
        for rep in c.reps:
            if not rep.get("expectations_held", True):
                bad = [e for e in rep.get("expectations") or [] if isinstance(e, dict) and not e.get("held", True)]
                what = "; ".join(f"{e.get('expect')} was {fmt_n(num(e.get('value'), 0))}" for e in bad) or "failed"
                fails.append(f"{c.run} rep {rep.get('rep', '?')} (seed {rep.get('seed', '?')}): {what}")
    if nexp:
        s = f"Expectations held in every rep of {nheld} of {plural(nexp, 'run')} that have them"
        if fails and brief:
            s += f"; they failed in {plural(len(fails), 'rep')}, e.g. {fails[0]}"
        elif fails:
            s += "; failed: " + "; ".join(fails[:6]) + (f"; and {len(fails) - 6} more" if len(fails) > 6 else "")
        out.append(s + ".")
    return out


def cell_name(c, cells):
    """The cell's variant, with what tells it apart when its scenario runs the variant more than once."""
    if sum(1 for o in cells if o.variant == c.variant) > 1:
        return f"{c.variant} [{c.label_suffix()}]"
    return c.variant


def incomplete_tail(cells, everyone):
    """" Not run: ...; partly run: ...", about cells lacking repetitions; "" when none do."""
    notrun = [c for c in cells if not c.reps]
    part = [c for c in cells if c.reps and c.partial]
    tail = ""
    if notrun:
        tail += " Not run (no repetition, so nothing is said of it): " + join_en(cell_name(c, everyone) for c in notrun) + "."
    if part:
        tail += " Partly run, the above is over the reps done: " + join_en(
            f"{cell_name(c, everyone)} ({len(c.reps)} of {c.repeat} reps)" for c in part) + "."
    return tail


def finding_of_scenario(t, sc):
    """One line: what the scenario did to each variant, worst first; a variant with no
    repetition is only ever named as not run."""
    everyone = t.cells_of(sc)
    cells = [c for c in everyone if c.reps]
    if not cells:
        return "not run."
    groups = []
    broken = [c for c in cells if c.outcome() == ADAPTER_BROKE]
    if broken:
        groups.append("adapter broke (not trusted) with " + join_en(cell_name(c, cells) for c in broken))
    viol = [c for c in cells if c.outcome() == TWO_HOLDERS]
    if viol:
        groups.append("2 holders with " + join_en(
            f"{cell_name(c, cells)} ({c.reps_of(TWO_HOLDERS)}/{len(c.reps)} reps)" for c in viol))
    unsafe = [c for c in cells if c.outcome() == UNSAFE]
    if unsafe:
        def damage(c):
            return ", ".join(plural(c.total(m), w, pl) for m, w, pl in (
                ("lost_updates", "lost update", "lost updates"),
                ("stale_writes_accepted", "stale write accepted", "stale writes accepted"),
                ("foreign_releases", "foreign release", "foreign releases")) if c.total(m) > 0)
        groups.append("unsafe (no overlap but damage in the store) with " + join_en(
            f"{cell_name(c, cells)} ({damage(c)})" for c in unsafe))
    refused_holder = [c for c in cells if c.outcome() == HOLDER_REFUSED]
    if refused_holder:
        groups.append("holder's write refused: the store's check refused the current holder's writes of "
                      + join_en(cell_name(c, cells) for c in refused_holder))
    fenced = [c for c in cells if c.outcome() == FENCED]
    if fenced:
        groups.append("stale write refused: the store's check refused the stale writes of "
                      + join_en(cell_name(c, cells) for c in fenced))
    dead = [c for c in cells if c.outcome() == UNAVAILABLE]
    if dead:
        groups.append("unavailable (nothing unsafe, no section completed) with "
                      + join_en(f"{cell_name(c, cells)} ({c.reps_of(UNAVAILABLE)}/{len(c.reps)} reps)" for c in dead))
    safe = [c for c in cells if c.outcome() == SAFE]
    if safe:
        groups.append("safe: " + join_en(
            cell_name(c, cells) + (f" (unavailable {fmt_ms(c.unavailable_mean())} a rep)" if c.unavailable_mean() >= 100 else "")
            for c in safe))
    exp = [c for c in cells if c.has_expectations()]
    failed = [c for c in exp if c.expectations_held_reps() < len(c.reps)]
    tail = ""
    if failed:
        tail = " EXPECTATIONS FAILED for " + join_en(cell_name(c, cells) for c in failed) + "."
    elif exp:
        tail = " Expectations held."
    return "; ".join(groups) + "." + tail + incomplete_tail(everyone, everyone)


def finding_of_sweep(t):
    sw = t.sweep
    parts = []
    for label, key, cs in sweep_lines(t):
        done = [c for c in cs if c.reps]
        bad = [c for c in done if c.outcome() == TWO_HOLDERS]
        notrun = [c for c in cs if not c.reps]
        if not done:
            parts.append(f"{label} not run")
            continue
        gap = f" (not run at {join_en(fmt_n(num(c.value)) for c in notrun)})" if notrun else ""
        if not bad:
            parts.append(f"{label} never violated mutual exclusion in the {plural(len(done), 'value')} run{gap}"
                         if notrun else f"{label} never violated mutual exclusion")
            continue
        b = boundary(cs)
        first = min(num(c.value) for c in bad)
        if b:
            parts.append(f"{label} held up to {fmt_n(b[1])} and violated from {fmt_n(b[2])}{gap}")
        else:
            parts.append(f"{label} violated from {fmt_n(first)}{gap}")
    values = sw.get("values") or [c.value for c in t.cells]
    rng = f"{fmt_n(num(values[0]))} to {fmt_n(num(values[-1]))}" if values else ""
    return f"{sw.get('path')} from {rng}: " + "; ".join(parts) + "."


# The lock families a design review chooses among, by the run names the catalog gives them.
FAMILIES = (("single Redis (token-lua)", ("token-lua",)),
            ("Redlock (5 nodes)", ("redlock", "node-redlock")),
            ("ZooKeeper (kazoo Lock)", ("zookeeper",)),
            ("etcd (v3 Lock RPC)", ("etcd",)))


def family_of(run):
    for name, prefixes in FAMILIES:
        if any(run == p or run.startswith(p + "+") or run.startswith(p + "-") or run.startswith(p + "@") for p in prefixes):
            return name
    return None


def families_table(trees):
    """(header, rows): per scenario, what each family's runs came to, fenced runs marked."""
    tree = next((t for t in trees if t.kind == "matrix"), None)
    if tree is None:
        return None
    rows = []
    for sc in tree.scenario_order:
        row, seen = [sc], False
        for name, _ in FAMILIES:
            cells = [c for c in tree.cells_of(sc) if c.reps and family_of(c.run) == name]
            seen = seen or bool(cells)
            row.append("; ".join(sorted({("fenced: " if "fence" in c.run else "") + c.outcome()
                                         + ((" " if c.outcome() == UNAVAILABLE else ", unavailable ")
                                            + fmt_ms(c.unavailable_mean()) if c.unavailable_mean() >= 100 else "")
                                         for c in cells})) or "—")
        if seen:
            rows.append(row)
    return (["scenario"] + [n for n, _ in FAMILIES], rows) if rows else None


# The protected store's checks (a run's "resource_check", sim/engine/store.h), in table order.
CHECKS = ("none", "fence", "token")


# What a run's record (run.json) or its object in the scenario holds that is not a setting of
# the run: its name and check (what the table compares), its expectations (which differ with
# the check), the repetition's seed, and what came out (the faults as they fired, by label). A
# composed case's variant names its check ("before-write+none"), so its name is no setting either.
NOT_SETTINGS = ("name", "variant", "resource_check", "expect", "seed", "faults_injected", "final_counter", "sim_events",
                "clients_failed", "faults")


def run_settings(c, rep):
    """Everything the run was set to do but its check: its record (run.json: algorithm, resolved
    parameters, nodes, command, renew, workload, ...) and its object as the scenario wrote it
    (topology, persistence, check_lease_before_write, ...), so that no setting is left out."""
    run = c.run_of(rep)
    record = load_json(os.path.join(c.rep_path(rep), run.get("run_dir", "runs/" + c.run), "run.json"))
    scenario = load_json(os.path.join(c.rep_path(rep), "scenario.json"))
    written = next((r for r in scenario.get("runs", []) if isinstance(r, dict) and r.get("name") == run.get("name")), {})
    settings = {k: v for k, v in written.items() if k not in NOT_SETTINGS}
    settings.update({k: v for k, v in record.items() if k not in NOT_SETTINGS})
    settings["fault_labels"] = [f.get("label") for f in record.get("faults") or [] if isinstance(f, dict)]
    return json.dumps(settings, sort_keys=True)


def check_groups(tree, sc):
    """[{check: cell}]: the scenario's runs that differ only in the store's check (every other
    setting the same), where at least two checks ran."""
    groups = {}
    for c in tree.cells_of(sc):
        if not c.reps:
            continue
        groups.setdefault(run_settings(c, c.reps[0]), {})[c.run_of(c.reps[0]).get("resource_check", "fence")] = c
    return [g for g in groups.values() if len(g) >= 2]


def check_cell(c):
    """What one check came to over the reps: the stale writes it let through, the stale writes
    it refused and the lock holder's it refused, and the share of acknowledged writes lost."""
    n = len(c.reps)
    return (f"stale accepted in {c.reps_with('stale_writes_accepted')}/{n}, "
            f"refused {plural(c.total('stale_writes_rejected'), 'stale write')}"
            + (f" and {plural(c.total('holder_writes_rejected'), 'holder' + chr(39) + 's write')}"
               if c.total("holder_writes_rejected") else "")
            + ", "
            f"lost/ack {c.aggregate('lost_update_share', 'mean'):.2f}")


def resource_check_table(trees):
    """(header, rows): per group of runs that differ only in the store's check, each check's
    outcome side by side; None when no scenario compares checks."""
    rows = []
    for t in trees:
        if t.kind != "matrix":
            continue
        for sc in t.scenario_order:
            for g in check_groups(t, sc):
                # Named by a variant that names its check ("token-lua+fence@before-write+none"),
                # without it (a lock's own name may end in "+fence" too); else by the runs' names
                # without their checks, most of them agreeing.
                named = [c.run[:-len(k) - 1] for k, c in g.items() if "@" in c.run and c.run.endswith("+" + k)]
                names = [c.run[:-len(k) - 1] if c.run.endswith("+" + k) else c.run for k, c in g.items()]
                name = named[0] if named else max(names, key=names.count)
                rows.append([f"{sc}: {name}"] + [check_cell(g[k]) if k in g else "—" for k in CHECKS])
    return (["case"] + [f"check {k}" for k in CHECKS], rows) if rows else None


def validity_table(trees):
    """(header, rows): the runs that read the key's real TTL right after each acquire
    (params.probe_key_ttl; the summary's "validity", analysis/validity.h): the validity the
    library reported against what the servers kept, over the reps. None when no run probed."""
    rows = []
    for t in trees:
        if t.kind != "matrix":
            continue
        for sc in t.scenario_order:
            for c in t.cells_of(sc):
                figures = [f for f in (c.run_of(r).get("validity") for r in c.reps) if isinstance(f, dict)]
                if not figures:
                    continue
                most = lambda key: max(num(f.get(key), 0) for f in figures)
                reps_with = lambda key: sum(1 for f in figures if num(f.get(key), 0) > 0)
                rows.append([f"{sc}: {c.run}", fmt_n(sum(num(f.get("validity_probes"), 0) for f in figures)),
                             f"{reps_with('validity_spent_live')}/{len(c.reps)}",
                             f"{reps_with('validity_gone')}/{len(c.reps)}", fmt_ms(most("validity_understated_ms")),
                             fmt_ms(most("validity_overstated_ms"))])
    header = ["run", "acquires probed", "reps with a lock handed out spent while it stood",
              "reps with a lock handed out after it was gone", "understated (max)", "overstated (max)"]
    return (header, rows) if rows else None


def write_findings(trees, page):
    page.heading(2, "Findings", "findings")
    page.para("Per scenario, from the checker's figures over every rep (details, timelines and plots below). "
              f"\"{TWO_HOLDERS}\": {MEANING[TWO_HOLDERS]}, in its own order.", cls="note")
    families = families_table(trees)
    if families:
        page.para("Side by side: a single Redis, Redlock, ZooKeeper and etcd under the same faults (\"fenced:\" the "
                  "store checked the lock's fencing token; \"—\": the case does not apply or was not run).", cls="note")
        page.table(*families)
    checks = resource_check_table(trees)
    if checks:
        page.para("The same lock and faults under each check of the protected store (\"resource_check\": none; the "
                  "lock's fencing token; check-and-set on its random token): in how many reps a stale write was "
                  "accepted, how many writes the check refused, and the mean share of acknowledged writes lost.",
                  cls="note")
        page.table(*checks)
    validity = validity_table(trees)
    if validity:
        page.para("The validity a library reported against the key's real TTL, read on each node right after the "
                  "acquire (\"probe_key_ttl\"): understated, how much of a lock that stood on a majority the library "
                  "said was gone (a conservative error, but a careful caller drops such a lock); gone, a lock handed out "
                  "after its keys had expired on a majority; overstated, validity "
                  "claimed beyond what the servers kept (the unsafe direction).", cls="note")
        page.table(*validity)
    items = []
    for t in trees:
        if t.kind == "sweep":
            items.append((f"{t.name} (sweep of {t.sweep.get('scenario')})", slug(t.name), finding_of_sweep(t)))
        else:
            items.extend((sc, f"{slug(t.name)}-{slug(sc)}", finding_of_scenario(t, sc)) for sc in t.scenario_order)
    page.lead_bullets(items)


def budget_note(tree):
    """Where a time budget set the number of repetitions (the main job's rounds)."""
    b = tree.summary.get("budget")
    if not isinstance(b, dict):
        return ""
    k, n = int(num(b.get("repetitions_per_cell"), 0)), int(num(tree.summary.get("repeat"), 0))
    return f" ({plural(k, 'rep')} per cell of up to {n}: the {fmt_n(num(b.get('seconds'), 0))} s time budget ended it)"

