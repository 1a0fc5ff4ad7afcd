#include "analysis/checker.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace lockbench {
namespace {

constexpr double kNsPerMs = 1e6;

// ---- the store's order: sections, overlaps, stale writes, lost updates ------------------

struct LeaseState {
    std::optional<SectionRef> section;
    bool write_rejected = false;
};

// Keeps at most max_witnesses of each kind, so that one kind cannot crowd out another.
void add_witness(CheckResult& r, const CheckOptions& o, Witness w) {
    const auto same_kind = std::ranges::count(r.witnesses, w.kind, &Witness::kind);
    if (static_cast<size_t>(same_kind) < o.max_witnesses) r.witnesses.push_back(std::move(w));
}

void check_store(const RunHistory& h, const CheckOptions& opts, CheckResult& r) {
    std::vector<LeaseState> leases(h.leases.size());
    std::vector<int> open;                               // leases inside a section, now
    std::vector<std::pair<int, int>> overlaps;           // (open lease, entering lease)
    std::optional<int> latest_enter;                     // lease of the most recent enter
    for (const StoreEntry& e : h.store) {
        LeaseState& l = leases[e.lease];
        switch (e.kind) {
            case StoreKind::enter:
                for (int other : open)
                    if (other != e.lease) overlaps.emplace_back(other, e.lease);
                if (std::ranges::count(open, e.lease) == 0) open.push_back(e.lease);
                l.section = SectionRef{e.lease, e.client, e.fence, e.seq, std::nullopt, e.t_us};
                latest_enter = e.lease;
                break;
            case StoreKind::write:
                ++r.ops.sections_completed;
                if (latest_enter && *latest_enter != e.lease) {
                    ++r.safety.stale_writes_accepted;
                    SectionRef writer = l.section.value_or(SectionRef{});
                    writer.write_seq = e.seq;
                    add_witness(r, opts, {Witness::Kind::stale_write, writer,
                                          leases[*latest_enter].section.value_or(SectionRef{}), 0, 0});
                }
                break;
            case StoreKind::reject:
                ++r.safety.stale_writes_rejected;
                l.write_rejected = true;
                break;
            case StoreKind::exit:
                std::erase(open, e.lease);
                if (l.section) l.section->exit_seq = e.seq;
                break;
        }
    }
    // Classified at the end: whether a fence refused a section's write is known only later.
    for (auto [a, b] : overlaps) {
        if (leases[a].write_rejected || leases[b].write_rejected) {
            ++r.safety.fenced_overlaps;
            continue;
        }
        ++r.safety.mutual_exclusion_violations;
        add_witness(r, opts, {Witness::Kind::mutual_exclusion, *leases[a].section, *leases[b].section, 0, 0});
    }
    r.safety.lost_updates = std::max(0LL, r.ops.sections_completed - h.final_counter);
}

// ---- the clients' histories: counts, latency, foreign releases, availability ------------

struct AcquireOk {
    long long t_ns;
    int lease;
    std::uint32_t nodes;
};

struct ClientState {
    std::optional<long long> invoked_ns;       // the operation now in flight began then
    std::optional<long long> waiting_since_ns; // first attempt of the current acquire loop
    std::optional<long long> acquired_ns;      // outermost acquire ok of the lease held
    bool holding = false;
    long long last_ns = 0;
};

bool is_outer(const ClientEvent& e) { return e.depth <= 1; }

void count_foreign_releases(const RunHistory& h, const std::vector<AcquireOk>& acquires,
                            const std::vector<std::pair<ClientEvent, long long>>& releases,
                            const CheckOptions& opts, CheckResult& r) {
    std::unordered_map<int, long long> acquired_at;  // lease -> its outermost acquire ok
    for (const AcquireOk& a : acquires) acquired_at.emplace(a.lease, a.t_ns);
    for (const auto& [rel, invoked_ns] : releases) {
        if (!rel.lease || rel.nodes == 0 || !acquired_at.contains(*rel.lease)) continue;
        const long long from = acquired_at[*rel.lease];
        auto it = std::ranges::upper_bound(acquires, from, {}, &AcquireOk::t_ns);
        for (; it != acquires.end() && it->t_ns < invoked_ns; ++it) {
            if (it->lease == *rel.lease || (it->nodes & rel.nodes) == 0) continue;
            ++r.safety.foreign_releases;
            SectionRef culprit{*rel.lease, rel.client, rel.fence, 0, std::nullopt, 0};
            SectionRef victim{it->lease, h.lease_client[it->lease], std::nullopt, 0, std::nullopt, 0};
            add_witness(r, opts, {Witness::Kind::foreign_release, culprit, victim, invoked_ns,
                                  it->nodes & rel.nodes});
            break;
        }
    }
}

// Sweeps the merged, time-ordered events once, keeping each client's state.
void check_clients(const RunHistory& h, const CheckOptions& opts, CheckResult& r) {
    std::vector<ClientState> clients(static_cast<size_t>(h.clients));
    std::vector<double> acquire, wait, release;
    std::vector<AcquireOk> acquires;
    std::vector<std::pair<ClientEvent, long long>> releases;  // release ok, with its invoke time
    int waiting = 0, holding = 0;
    long long gap_start = 0, prev_ns = h.events.empty() ? 0 : h.events.front().t_ns;
    double longest = 0;
    const auto unavailable = [&] { return waiting > 0 && holding == 0; };
    // A client that stops recording (it was killed) neither holds nor waits after its
    // last event.
    std::vector<size_t> last_event(clients.size(), 0);
    for (size_t i = 0; i < h.events.size(); ++i) last_event[static_cast<size_t>(h.events[i].client)] = i;

    for (size_t i = 0; i < h.events.size(); ++i) {
        const ClientEvent& e = h.events[i];
        if (unavailable()) r.availability.unavailable_ms += static_cast<double>(e.t_ns - prev_ns) / kNsPerMs;
        const bool was_unavailable = unavailable();
        prev_ns = e.t_ns;
        ClientState& c = clients[static_cast<size_t>(e.client)];
        c.last_ns = e.t_ns;
        if (e.type == EventType::invoke) {
            c.invoked_ns = e.t_ns;
            if (e.op == OpKind::acquire && is_outer(e)) {
                ++r.ops.acquire_attempts;
                if (!c.waiting_since_ns) { c.waiting_since_ns = e.t_ns; ++waiting; }
            }
        } else {
            const double took = c.invoked_ns ? static_cast<double>(e.t_ns - *c.invoked_ns) / kNsPerMs : 0;
            if (e.op == OpKind::acquire && is_outer(e)) {
                acquire.push_back(took);
                if (e.type == EventType::ok) {
                    ++r.ops.acquired;
                    if (c.waiting_since_ns) {
                        wait.push_back(static_cast<double>(e.t_ns - *c.waiting_since_ns) / kNsPerMs);
                        c.waiting_since_ns.reset();
                        --waiting;
                    }
                    if (!c.holding) { c.holding = true; ++holding; }
                    if (e.lease) acquires.push_back({e.t_ns, *e.lease, e.nodes});
                }
            } else if (e.op == OpKind::release) {
                if (is_outer(e)) release.push_back(took);
                if (e.type == EventType::ok) {
                    if (is_outer(e)) ++r.ops.released;
                    releases.emplace_back(e, c.invoked_ns.value_or(e.t_ns));
                }
                if (is_outer(e) && c.holding) { c.holding = false; --holding; }
            }
        }
        if (i == last_event[static_cast<size_t>(e.client)]) {
            if (c.holding) { c.holding = false; --holding; }
            if (c.waiting_since_ns) { c.waiting_since_ns.reset(); --waiting; }
        }
        if (unavailable() && !was_unavailable) gap_start = e.t_ns;
        if (!unavailable() && was_unavailable)
            longest = std::max(longest, static_cast<double>(e.t_ns - gap_start) / kNsPerMs);
    }
    if (unavailable()) longest = std::max(longest, static_cast<double>(prev_ns - gap_start) / kNsPerMs);
    r.availability.longest_unavailable_ms = longest;
    r.acquire_ms = percentiles(acquire);
    r.acquire_wait_ms = percentiles(wait);
    r.release_ms = percentiles(release);
    count_foreign_releases(h, acquires, releases, opts, r);
}

const char* witness_kind_name(Witness::Kind k) {
    switch (k) {
        case Witness::Kind::mutual_exclusion: return "mutual_exclusion";
        case Witness::Kind::foreign_release: return "foreign_release";
        case Witness::Kind::stale_write: return "stale_write";
    }
    return "?";
}

nlohmann::json section_json(const SectionRef& s, const RunHistory& h) {
    nlohmann::json j = {{"lease", h.leases.at(static_cast<size_t>(s.lease))}, {"client", s.client}};
    if (s.fence) j["fence"] = *s.fence;
    if (s.enter_seq) j["enter_seq"] = s.enter_seq;
    if (s.exit_seq) j["exit_seq"] = *s.exit_seq;
    if (s.write_seq) j["write_seq"] = *s.write_seq;
    if (s.enter_t_us) j["enter_store_t_us"] = s.enter_t_us;
    return j;
}

nlohmann::json node_list(std::uint32_t mask) {
    nlohmann::json out = nlohmann::json::array();
    for (int n = 0; n < 32; ++n)
        if (mask & (1u << n)) out.push_back(n);
    return out;
}

nlohmann::json witness_sections(const Witness& w, const RunHistory& h, long long t0_ns) {
    nlohmann::json j = {{"kind", witness_kind_name(w.kind)}};
    if (w.kind == Witness::Kind::foreign_release) {
        j["releaser"] = section_json(w.first, h);
        j["victim"] = section_json(w.second, h);
        j["release_t_ms"] = static_cast<double>(w.t_ns - t0_ns) / kNsPerMs;
        j["nodes"] = node_list(w.nodes);
    } else {
        j["first"] = section_json(w.first, h);
        j["second"] = section_json(w.second, h);
    }
    return j;
}

// When each witness's leases were acquired, by the clients' common clock (ms from the
// first event): only for the handful of leases the witnesses name.
void add_acquire_times(nlohmann::json& section, const std::unordered_map<int, long long>& acquired, int lease,
                       long long t0_ns) {
    if (auto it = acquired.find(lease); it != acquired.end())
        section["acquired_t_ms"] = static_cast<double>(it->second - t0_ns) / kNsPerMs;
}

std::unordered_map<int, long long> acquire_times(const std::vector<Witness>& ws, const RunHistory& h) {
    std::unordered_set<int> wanted;
    for (const Witness& w : ws) wanted.insert({w.first.lease, w.second.lease});
    std::unordered_map<int, long long> found;
    if (wanted.empty()) return found;
    for (const ClientEvent& e : h.events)
        if (e.op == OpKind::acquire && e.type == EventType::ok && e.lease && is_outer(e) && wanted.contains(*e.lease))
            found.try_emplace(*e.lease, e.t_ns);
    return found;
}

nlohmann::json witness_json(const Witness& w, const RunHistory& h, long long t0_ns,
                            const std::unordered_map<int, long long>& acquired) {
    nlohmann::json j = witness_sections(w, h, t0_ns);
    for (auto& [key, section] : j.items())
        if (section.is_object() && section.contains("lease"))
            add_acquire_times(section, acquired, h.lease_ids.at(section.at("lease").get<std::string>()), t0_ns);
    return j;
}

}  // namespace

nlohmann::json to_json(const CheckResult& r, const RunHistory& h) {
    const long long t0 = h.events.empty() ? 0 : h.events.front().t_ns;
    nlohmann::json witnesses = nlohmann::json::array();
    const auto acquired = acquire_times(r.witnesses, h);
    for (const Witness& w : r.witnesses) witnesses.push_back(witness_json(w, h, t0, acquired));
    const double success = r.ops.acquire_attempts
        ? static_cast<double>(r.ops.acquired) / static_cast<double>(r.ops.acquire_attempts) : 0.0;
    return {
        {"ops", {{"acquire_attempts", r.ops.acquire_attempts}, {"acquired", r.ops.acquired},
                 {"released", r.ops.released}, {"sections_completed", r.ops.sections_completed},
                 {"acquire_success_rate", success}}},
        {"safety", {{"mutual_exclusion_violations", r.safety.mutual_exclusion_violations},
                    {"fenced_overlaps", r.safety.fenced_overlaps},
                    {"lost_updates", r.safety.lost_updates},
                    {"stale_writes_accepted", r.safety.stale_writes_accepted},
                    {"stale_writes_rejected", r.safety.stale_writes_rejected},
                    {"foreign_releases", r.safety.foreign_releases}}},
        {"availability", {{"unavailable_ms", r.availability.unavailable_ms},
                          {"longest_unavailable_ms", r.availability.longest_unavailable_ms}}},
        {"latency_ms", {{"acquire", to_json(r.acquire_ms)}, {"acquire_wait", to_json(r.acquire_wait_ms)},
                        {"release", to_json(r.release_ms)}}},
        {"duration_s", r.duration_s},
        {"sections_per_s", r.sections_per_s},
        {"witnesses", witnesses},
    };
}

CheckResult check(const RunHistory& h, const CheckOptions& opts) {
    CheckResult r;
    check_store(h, opts, r);
    check_clients(h, opts, r);
    if (h.events.size() >= 2)
        r.duration_s = static_cast<double>(h.events.back().t_ns - h.events.front().t_ns) / 1e9;
    if (r.duration_s > 0) r.sections_per_s = static_cast<double>(r.ops.sections_completed) / r.duration_s;
    return r;
}

}  // namespace lockbench
