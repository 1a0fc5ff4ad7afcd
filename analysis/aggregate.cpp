#include "analysis/aggregate.h"

#include <algorithm>
#include <cmath>

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

const char* const kCounts[] = {"mutual_exclusion_violations", "fenced_overlaps", "lost_updates",
                               "stale_writes_accepted", "stale_writes_rejected", "foreign_releases"};

nlohmann::json spread(const nlohmann::json& reps, const char* field) {
    if (reps.empty()) return {{"total", 0}, {"mean", 0.0}, {"min", 0}, {"max", 0}};
    double total = 0, lo = INFINITY, hi = -INFINITY;
    for (const auto& r : reps) {
        const double v = r.at(field).get<double>();
        total += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    return {{"total", total}, {"mean", total / static_cast<double>(reps.size())}, {"min", lo}, {"max", hi}};
}

}  // namespace

nlohmann::json rep_figures(const nlohmann::json& run) {
    nlohmann::json f = {{"seed", run.at("seed")},
                        {"unavailable_ms", run.at("availability").at("unavailable_ms")},
                        {"sections_completed", run.at("ops").at("sections_completed")},
                        {"sections_per_s", run.at("sections_per_s")},
                        {"acquire_ms", run.at("latency_ms").at("acquire")},
                        {"faults_injected", run.at("ops").value("faults_injected", 0)},
                        {"expectations", run.at("expectations")},
                        {"expectations_held", run.at("expectations_held")},
                        {"clients_failed", run.value("clients_failed", nlohmann::json::array())}};
    for (const char* c : kCounts) f[c] = run.at("safety").at(c);
    return f;
}

nlohmann::json aggregate_reps(const nlohmann::json& reps, std::vector<double>& acquire_ms) {
    const long long n = static_cast<long long>(reps.size());
    long long violating = 0, held = 0, failed = 0;
    for (const auto& r : reps) {
        if (r.at("mutual_exclusion_violations").get<long long>() > 0) ++violating;
        if (r.at("expectations_held").get<bool>()) ++held;
        if (!r.value("clients_failed", nlohmann::json::array()).empty()) ++failed;
    }
    const Interval ci = wilson_interval(violating, n);
    nlohmann::json a = {{"violations", spread(reps, "mutual_exclusion_violations")},
                        {"violating_reps", violating},
                        {"violation_rate", n ? static_cast<double>(violating) / static_cast<double>(n) : 0.0},
                        {"violation_rate_ci95", {ci.lo, ci.hi}},
                        {"unavailable_ms", {{"mean", spread(reps, "unavailable_ms").at("mean")},
                                            {"max", spread(reps, "unavailable_ms").at("max")}}},
                        {"sections_completed", {{"mean", spread(reps, "sections_completed").at("mean")}}},
                        {"acquire_ms", to_json(percentiles(acquire_ms))},
                        {"expectations_held_reps", held},
                        {"expectation_held", n > 0 && held == n},
                        {"clients_failed_reps", failed},
                        {"has_expectations", n > 0 && !reps.front().at("expectations").empty()}};
    for (const char* c : kCounts)
        if (std::string(c) != "mutual_exclusion_violations") a[c] = spread(reps, c);
    return a;
}

}  // namespace lockbench
