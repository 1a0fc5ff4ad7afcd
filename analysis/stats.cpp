#include "analysis/stats.h"

#include <algorithm>
#include <cmath>

namespace lockbench {

Percentiles percentiles(std::vector<double>& samples) {
    Percentiles p;
    if (samples.empty()) return p;
    std::sort(samples.begin(), samples.end());
    const auto rank = [&](double q) {
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
        return samples[std::clamp<size_t>(i, 1, samples.size()) - 1];
    };
    p.count = static_cast<long long>(samples.size());
    p.p50 = rank(0.50);
    p.p90 = rank(0.90);
    p.p99 = rank(0.99);
    p.p999 = rank(0.999);
    p.max = samples.back();
    return p;
}

nlohmann::json to_json(const Percentiles& p) {
    const auto r = [](double v) { return std::round(v * 1000.0) / 1000.0; };  // to the µs
    return {{"count", p.count}, {"p50", r(p.p50)}, {"p90", r(p.p90)}, {"p99", r(p.p99)},
            {"p999", r(p.p999)}, {"max", r(p.max)}};
}

Percentiles percentiles_from_json(const nlohmann::json& j) {
    return {j.at("count").get<long long>(), j.at("p50").get<double>(), j.at("p90").get<double>(),
            j.at("p99").get<double>(),      j.at("p999").get<double>(), j.at("max").get<double>()};
}

}  // namespace lockbench
