// Exact percentiles from the samples themselves. Runs here produce at most some hundred
// thousand latencies, so sorting them costs less than a histogram library's setup and
// gives exact figures rather than bucketed ones.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

struct Percentiles {
    long long count = 0;
    double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
};

// Nearest-rank percentiles of `samples` (sorted in place). All zero when empty.
Percentiles percentiles(std::vector<double>& samples);
nlohmann::json to_json(const Percentiles& p);
// As to_json wrote them; throws nlohmann::json's exception on a missing field.
Percentiles percentiles_from_json(const nlohmann::json& j);

}  // namespace lockbench
