// Repetitions of one cell (a scenario's run, run N times with distinct seeds) reduced to
// what a review asks: how often it violated (with a confidence interval), how badly, how
// available it stayed, how fast it was.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/run_summary.h"

namespace lockbench {

struct Interval {
    double lo = 0, hi = 1;
};

// Wilson score interval for `hits` successes in `n` trials at 95 % (z = 1.96). Unlike the
// normal approximation it stays inside [0, 1] and is honest for 0/n and n/n with small n,
// which is what a handful of repetitions gives. [0, 1] when n == 0.
Interval wilson_interval(long long hits, long long n, double z = 1.959963984540054);

// One repetition's figures, from its entry in a run's summary.json: every metric the metric
// table keeps per repetition (analysis/metrics.h), with the seed, throughput, acquire latency
// and the expectations' verdicts.
nlohmann::json rep_figures(const RunSummary& run);

// The aggregate of a cell's repetitions (each as rep_figures gives it). `acquire_ms` holds
// every acquire latency of every repetition, pooled (sorted in place).
nlohmann::json aggregate_reps(const nlohmann::json& reps, std::vector<double>& acquire_ms);

}  // namespace lockbench
