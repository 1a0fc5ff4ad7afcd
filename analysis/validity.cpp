#include "analysis/validity.h"

#include <algorithm>
#include <functional>

namespace lockbench {

long long majority_ttl_ms(const std::vector<std::optional<long long>>& ttl_ms) {
    std::vector<long long> live;
    for (const auto& t : ttl_ms)
        if (t && *t > 0) live.push_back(*t);
    const size_t quorum = ttl_ms.size() / 2 + 1;
    if (live.size() < quorum) return 0;
    std::ranges::sort(live, std::greater<>());
    return live[quorum - 1];
}

std::optional<long long> key_end_ns(const ClientEvent& acquired, std::optional<long long> ttl_ms) {
    constexpr long long kNsPerMs = 1'000'000;
    if (acquired.key_ttl_ms.empty()) return ttl_ms ? std::optional(acquired.t_ns + *ttl_ms * kNsPerMs) : std::nullopt;
    if (const long long held_ms = majority_ttl_ms(acquired.key_ttl_ms); held_ms > 0) return acquired.t_ns + held_ms * kNsPerMs;
    const auto answered = [&](long long v) { return std::ranges::any_of(acquired.key_ttl_ms, [v](const auto& t) { return t == v; }); };
    if (std::ranges::none_of(acquired.key_ttl_ms, [](const auto& t) { return t.has_value(); }) || answered(-1)) return std::nullopt;
    // Not found by this lease's token (-2): gone, or kept in a form the probe does not read
    // (warlock's value is not the token it reports). The TTL it asked for, not "ended".
    return ttl_ms ? std::optional(acquired.t_ns + *ttl_ms * kNsPerMs) : std::nullopt;
}

std::optional<ValidityFigures> check_validity(const RunHistory& h) {
    ValidityFigures f;
    for (const ClientEvent& e : h.events) {
        if (e.op != OpKind::acquire || e.type != EventType::ok || !e.validity_ms) continue;
        if (std::ranges::none_of(e.key_ttl_ms, [](const auto& t) { return t.has_value(); })) continue;  // nothing answered
        ++f.probes;
        const double held_ms = static_cast<double>(majority_ttl_ms(e.key_ttl_ms));
        const double said_ms = *e.validity_ms;
        f.overstated_ms = std::max(f.overstated_ms, said_ms - held_ms);
        if (held_ms <= 0) {
            ++f.gone;
            continue;
        }
        f.understated_ms = std::max(f.understated_ms, held_ms - said_ms);
        if (said_ms <= 0) ++f.spent_live;
    }
    if (f.probes == 0) return std::nullopt;
    return f;
}

}  // namespace lockbench
