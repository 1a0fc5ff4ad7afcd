#include "analysis/aggregate.h"

#include <algorithm>
#include <cmath>

#include "analysis/metrics.h"
#include "analysis/stats.h"

namespace lockbench {

Interval wilson_interval(long long hits, long long n, double z) {
    if (n <= 0) return {0, 1};
    const double p = static_cast<double>(hits) / static_cast<double>(n);
    const double nn = static_cast<double>(n), z2 = z * z;
    const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
    // At 0/n and n/n the bound is exactly 0 or 1; rounding must not move it.
    return {hits == 0 ? 0.0 : std::max(0.0, centre - half), hits == n ? 1.0 : std::min(1.0, centre + half)};
}

namespace {

using Json = nlohmann::json;

// A figure a repetition's record lacks (one written before the metric existed, as
// holder_writes_rejected) reads as 0, as RunFigures::metric reads it.
double figure(const Json& rep, std::string_view field) {
    const auto it = rep.find(std::string(field));
    return it == rep.end() ? 0.0 : it->get<double>();
}

Json spread(const Json& reps, std::string_view field) {
    if (reps.empty()) return {{"total", 0}, {"mean", 0.0}, {"min", 0}, {"max", 0}};
    double total = 0, lo = INFINITY, hi = -INFINITY;
    for (const auto& r : reps) {
        const double v = figure(r, field);
        total += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    return {{"total", total}, {"mean", total / static_cast<double>(reps.size())}, {"min", lo}, {"max", hi}};
}

// How many repetitions had any of `m` (the violations), the rate and its 95 % interval.
void add_rate(Json& a, const Json& reps, const Metric& m) {
    const long long n = static_cast<long long>(reps.size());
    long long hits = 0;
    for (const auto& r : reps)
        if (figure(r, m.name) > 0) ++hits;
    const Interval ci = wilson_interval(hits, n);
    a["violating_reps"] = hits;
    a["violation_rate"] = n ? static_cast<double>(hits) / static_cast<double>(n) : 0.0;
    a["violation_rate_ci95"] = {ci.lo, ci.hi};
}

// Each metric's reduction over the repetitions, as the metric table says.
void add_metrics(Json& a, const Json& reps) {
    for (const Metric& m : metrics()) {
        const std::string key(m.aggregate_key());
        switch (m.aggregation) {
            case Aggregation::none:
            case Aggregation::per_rep: break;
            case Aggregation::mean: a[key] = {{"mean", spread(reps, m.name).at("mean")}}; break;
            case Aggregation::mean_max: {
                const Json s = spread(reps, m.name);
                a[key] = {{"mean", s.at("mean")}, {"max", s.at("max")}};
                break;
            }
            case Aggregation::spread: a[key] = spread(reps, m.name); break;
            case Aggregation::spread_rate:
                a[key] = spread(reps, m.name);
                add_rate(a, reps, m);
                break;
        }
    }
}

}  // namespace

Json rep_figures(const RunSummary& run) {
    Json f = {{"seed", run.seed},
              {"sections_per_s", run.figures.sections_per_s},
              {"acquire_ms", to_json(run.figures.acquire_ms)},
              {"expectations", to_json(run.expectations)},
              {"expectations_held", run.expectations_held},
              {"verdict", verdict_word(run.verdict)},
              {"clients_failed", to_json(run.clients_failed)}};
    for (const Metric& m : metrics())
        if (m.aggregation != Aggregation::none) {
            const double v = run.metric(m.name);
            f[std::string(m.name)] = m.is_count() ? Json(static_cast<long long>(v)) : Json(v);
        }
    return f;
}

Json aggregate_reps(const Json& reps, std::vector<double>& acquire_ms) {
    const long long n = static_cast<long long>(reps.size());
    long long held = 0, failed = 0;
    Json verdicts = Json::object();   // how many repetitions had each verdict (analysis/verdict.h)
    for (const auto& r : reps) {
        if (r.at("expectations_held").get<bool>()) ++held;
        if (!r.value("clients_failed", Json::array()).empty()) ++failed;
        if (r.contains("verdict")) verdicts[r.at("verdict").get<std::string>()] = verdicts.value(r.at("verdict").get<std::string>(), 0) + 1;
    }
    Json a = {{"acquire_ms", to_json(percentiles(acquire_ms))},
              {"expectations_held_reps", held},
              {"expectation_held", n > 0 && held == n},
              {"clients_failed_reps", failed},
              {"has_expectations", n > 0 && !reps.front().at("expectations").empty()},
              {"verdicts", verdicts}};
    add_metrics(a, reps);
    return a;
}

}  // namespace lockbench
