#include "analysis/metrics.h"

#include <algorithm>
#include <cstdio>

#include "analysis/checker.h"

namespace lockbench {
namespace {

using G = MetricGroup;
using U = MetricUnit;
using A = Aggregation;

double as_double(long long v) { return static_cast<double>(v); }
bool probed(const CheckResult& r) { return r.validity.has_value(); }

// The table. Its order is the tables' column order and the order an unknown metric's error
// lists the expectable ones in; docs/results.md's "Reading the results" defines each figure.
const std::vector<Metric> kMetrics = {
    {"acquire_attempts", G::ops, U::count, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.ops.acquire_attempts); }},
    {"acquired", G::ops, U::count, true, A::none, "", Column{"acquired", 8}, std::nullopt,
     [](const CheckResult& r) { return as_double(r.ops.acquired); }},
    {"released", G::ops, U::count, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.ops.released); }},
    {"sections_completed", G::ops, U::count, true, A::mean, "", Column{"sections", 8}, std::nullopt,
     [](const CheckResult& r) { return as_double(r.ops.sections_completed); }},
    {"acquire_success_rate", G::ops, U::ratio, false, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) {
         return r.ops.acquire_attempts ? as_double(r.ops.acquired) / as_double(r.ops.acquire_attempts) : 0.0;
     }},
    // The headline: a cell's aggregate calls it "violations" and adds how many repetitions had one.
    {"mutual_exclusion_violations", G::safety, U::count, true, A::spread_rate, "violations", Column{"viol", 6},
     Column{"viol/rep", 9, 1}, [](const CheckResult& r) { return as_double(r.safety.mutual_exclusion_violations); }},
    {"fenced_overlaps", G::safety, U::count, true, A::spread, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.safety.fenced_overlaps); }},
    {"lost_updates", G::safety, U::count, true, A::spread, "", Column{"lost", 6}, Column{"lost/rep", 9, 1},
     [](const CheckResult& r) { return as_double(r.safety.lost_updates); }},
    // Jepsen's figure: the share of acknowledged writes (those the store accepted) that the
    // final counter lacks; 0 when nothing was written.
    {"lost_update_share", G::safety, U::ratio, true, A::mean_max, "", std::nullopt, Column{"lost/ack", 9, 2},
     [](const CheckResult& r) {
         return r.ops.sections_completed ? as_double(r.safety.lost_updates) / as_double(r.ops.sections_completed) : 0.0;
     }},
    {"stale_writes_accepted", G::safety, U::count, true, A::spread, "", Column{"stale", 5}, std::nullopt,
     [](const CheckResult& r) { return as_double(r.safety.stale_writes_accepted); }},
    {"stale_writes_rejected", G::safety, U::count, true, A::spread, "", Column{"rejected", 9}, std::nullopt,
     [](const CheckResult& r) { return as_double(r.safety.stale_writes_rejected); }},
    {"holder_writes_rejected", G::safety, U::count, true, A::spread, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.safety.holder_writes_rejected); }},
    {"foreign_releases", G::safety, U::count, true, A::spread, "", Column{"foreign", 7}, std::nullopt,
     [](const CheckResult& r) { return as_double(r.safety.foreign_releases); }},
    {"unavailable_ms", G::availability, U::ms, true, A::mean_max, "", Column{"unavail", 9, 0, "ms"},
     Column{"unavail", 9, 0, "ms"}, [](const CheckResult& r) { return r.availability.unavailable_ms; }},
    {"longest_unavailable_ms", G::availability, U::ms, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return r.availability.longest_unavailable_ms; }},
    // The longest acquire attempt: a lock whose attempts all hang (on a node cut off) holds
    // nobody and counts no failed attempt meanwhile, so the windows above do not see it.
    {"longest_acquire_ms", G::availability, U::ms, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return r.acquire_ms.max; }},
    // Only in a run with a Sentinel failover (sentinel.jsonl's +switch-master).
    {"failover_to_entry_ms", G::availability, U::ms, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return *r.availability.failover_to_entry_ms; },
     [](const CheckResult& r) { return r.availability.failover_to_entry_ms.has_value(); }},
    // Counted by the fault injector, not the checker: the run's record (run.json) gives it.
    {"faults_injected", G::ops, U::count, true, A::per_rep, "", std::nullopt, std::nullopt, nullptr},
    // The library's validity against the key's real TTL (analysis/validity.h): only in runs
    // that probe it, so every other summary stays as it was.
    {"validity_probes", G::validity, U::count, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.validity->probes); }, probed},
    {"validity_spent_live", G::validity, U::count, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.validity->spent_live); }, probed},
    {"validity_gone", G::validity, U::count, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return as_double(r.validity->gone); }, probed},
    {"validity_understated_ms", G::validity, U::ms, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return r.validity->understated_ms; }, probed},
    {"validity_overstated_ms", G::validity, U::ms, true, A::none, "", std::nullopt, std::nullopt,
     [](const CheckResult& r) { return r.validity->overstated_ms; }, probed},
};

std::string right_aligned(const std::string& text, int width) {
    return text.size() >= static_cast<size_t>(std::max(width, 0)) ? text : std::string(width - text.size(), ' ') + text;
}

}  // namespace

std::string_view group_name(MetricGroup g) {
    switch (g) {
        case MetricGroup::ops: return "ops";
        case MetricGroup::safety: return "safety";
        case MetricGroup::availability: return "availability";
        case MetricGroup::validity: return "validity";
    }
    return "";
}

const std::vector<Metric>& metrics() { return kMetrics; }

const Metric* find_metric(std::string_view name) {
    const auto it = std::ranges::find(kMetrics, name, &Metric::name);
    return it == kMetrics.end() ? nullptr : &*it;
}

std::string expectable_metric_list() {
    std::string list;
    for (const Metric& m : kMetrics)
        if (m.expectable) list += (list.empty() ? "" : ", ") + std::string(m.name);
    return list;
}

std::string table_cell(const Column& c, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", c.decimals, v);
    return right_aligned(buf, c.width - static_cast<int>(c.unit.size())) + std::string(c.unit);
}

std::string table_header(const Column& c) { return right_aligned(std::string(c.header), c.width); }

}  // namespace lockbench
