#include "analysis/checker.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/metrics.h"

namespace lockbench {
namespace {

constexpr double kNsPerMs = 1e6;

// ---- the store's order: sections, overlaps, stale writes, lost updates ------------------

struct LeaseState {
    std::optional<SectionRef> section;
    bool wrote = false;
    bool write_rejected = false;
    // Entered, then nothing: no write, no exit (its client died inside the section, or its
    // abandon was lost too). The store saw nothing of it after its enter, so its section
    // ends there: its own enter can land inside another's section, nobody's inside its.
    bool end_unseen() const { return section && !section->exit_seq && !wrote && !write_rejected; }
};

// Keeps at most max_witnesses of each kind, so that one kind cannot crowd out another.
void add_witness(CheckResult& r, const CheckOptions& o, Witness w) {
    const auto same_kind = std::ranges::count(r.witnesses, w.kind, &Witness::kind);
    if (static_cast<size_t>(same_kind) < o.max_witnesses) r.witnesses.push_back(std::move(w));
}

// The sweep over the store's log: who is inside a section now, and who superseded whom.
struct StoreSweep {
    std::vector<LeaseState> leases;
    std::vector<int> open;                               // leases inside a section, now
    std::vector<std::optional<int>> client_open;         // each client's open section
    std::vector<std::pair<int, int>> overlaps;           // (open lease, entering lease)
    std::optional<int> latest_enter;                     // lease of the most recent enter
    // The highest fence the store has seen, the lease that brought it first, and another
    // lease that brought the same one since, if any (two leases with one token).
    struct MaxFence {
        long long fence = 0;
        int lease = 0;
        std::optional<int> also;
    };
    std::optional<MaxFence> max_fence;

    void see_fence(const StoreEntry& e) {
        if (!e.fence) return;
        if (!max_fence || *e.fence > max_fence->fence) max_fence = MaxFence{*e.fence, e.lease, std::nullopt};
        else if (*e.fence == max_fence->fence && e.lease != max_fence->lease && !max_fence->also) max_fence->also = e.lease;
    }
    // A client does one thing at a time: its new section ends any it left open (a lost
    // reply, a crash), so an abandoned section cannot overlap everything after it.
    void close_client_section(const StoreEntry& e) {
        if (client_open.size() <= static_cast<size_t>(e.client)) client_open.resize(static_cast<size_t>(e.client) + 1);
        auto& mine = client_open[static_cast<size_t>(e.client)];
        if (mine && *mine != e.lease) std::erase(open, *mine);
        mine = e.lease;
    }
    // The lease a write came too late for, if any: one that entered after this lease did
    // (unless both carry fences and the later one's is lower: it was the stale one), or one
    // whose fence the store has seen and is higher than this write's, or equal: two leases
    // with one token is a failure of the fence, and neither may write once both are seen.
    std::optional<int> superseded_by(const StoreEntry& e) const {
        if (latest_enter && *latest_enter != e.lease) {
            const auto& later = leases[*latest_enter].section;
            const bool later_is_older = e.fence && later && later->fence && *later->fence < *e.fence;
            if (!later_is_older) return latest_enter;
        }
        if (!e.fence || !max_fence || max_fence->fence < *e.fence) return std::nullopt;
        if (max_fence->lease != e.lease) return max_fence->lease;
        return max_fence->also;
    }
};

void on_enter(StoreSweep& s, const StoreEntry& e) {
    s.close_client_section(e);
    for (int other : s.open)
        if (other != e.lease) s.overlaps.emplace_back(other, e.lease);
    if (std::ranges::count(s.open, e.lease) == 0) s.open.push_back(e.lease);
    s.leases[e.lease].section = SectionRef{e.lease, e.client, e.fence, e.seq, std::nullopt, std::nullopt, e.t_us};
    s.latest_enter = e.lease;
    s.see_fence(e);
}

void on_write(StoreSweep& s, const StoreEntry& e, const CheckOptions& opts, CheckResult& r) {
    ++r.ops.sections_completed;
    s.leases[e.lease].wrote = true;
    if (const std::optional<int> newer = s.superseded_by(e)) {
        ++r.safety.stale_writes_accepted;
        SectionRef writer = s.leases[e.lease].section.value_or(SectionRef{});
        writer.write_seq = e.seq;
        add_witness(r, opts, {Witness::Kind::stale_write, writer, s.leases[*newer].section.value_or(SectionRef{}), 0, 0});
    }
    s.see_fence(e);
}

// The leases whose refused write the lock server, asked right after, said still held the lock:
// the holder's write refused, not a stale one (the fence or token ran against the grants).
std::unordered_set<int> held_when_refused(const RunHistory& h) {
    std::unordered_set<int> held;
    for (const ClientEvent& e : h.events)
        if (e.op == OpKind::write && e.type == EventType::fail && e.lease && e.lock_says_held.value_or(false))
            held.insert(*e.lease);
    return held;
}

void check_store(const RunHistory& h, const CheckOptions& opts, CheckResult& r) {
    StoreSweep s;
    s.leases.resize(h.leases.size());
    const std::unordered_set<int> holders = held_when_refused(h);
    for (const StoreEntry& e : h.store) {
        switch (e.kind) {
            case StoreKind::enter: on_enter(s, e); break;
            case StoreKind::write: on_write(s, e, opts, r); break;
            case StoreKind::reject:
                ++(holders.contains(e.lease) ? r.safety.holder_writes_rejected : r.safety.stale_writes_rejected);
                s.leases[e.lease].write_rejected = true;
                break;
            case StoreKind::exit:  // the first: an abandon may log a second one later
                std::erase(s.open, e.lease);
                if (auto& section = s.leases[e.lease].section; section && !section->exit_seq) section->exit_seq = e.seq;
                break;
        }
    }
    // Classified at the end: whether a fence refused a section's write is known only later.
    for (auto [a, b] : s.overlaps) {
        if (s.leases[a].end_unseen()) continue;
        if (s.leases[a].write_rejected || s.leases[b].write_rejected) {
            ++r.safety.fenced_overlaps;
            continue;
        }
        ++r.safety.mutual_exclusion_violations;
        // Which side only read: with `abandon`, most overlaps are an abandoned holder's read.
        const auto side = [&](int lease) {
            SectionRef ref = *s.leases[lease].section;
            ref.read_only = ref.exit_seq && !s.leases[lease].wrote && !s.leases[lease].write_rejected;
            return ref;
        };
        add_witness(r, opts, {Witness::Kind::mutual_exclusion, side(a), side(b), 0, 0});
    }
    r.safety.lost_updates = std::max(0LL, r.ops.sections_completed - h.final_counter);
}

// ---- the clients' histories: counts, latency, foreign releases, availability ------------

struct AcquireOk {
    long long t_ns;
    int lease;
    std::uint32_t nodes;
    long long invoked_ns;   // when its attempt began: its SETs landed after this
};

struct ClientState {
    std::optional<long long> invoked_ns;       // the operation now in flight began then
    std::optional<long long> waiting_since_ns; // first attempt of the current acquire loop
    bool holding = false;
};

// Unavailable: from an acquire attempt that began while nobody held the lock and failed
// while nobody held it still, until the next successful acquire. A free lock that nobody
// happens to be asking for is not unavailable, nor is an attempt that met a holder. When
// the next success was already under way before that failure came back, the two crossed
// (the winner's SET landed first, its reply later): a hand-over, not downtime.
struct Availability {
    int holding = 0;
    long long free_since_ns = 0;
    std::optional<long long> down_since_ns;
    long long down_failed_ns = 0;   // when the failure that opened the window came back
    double total_ms = 0, longest_ms = 0;
    std::vector<std::pair<long long, long long>> windows;   // [from, to) in t_ns

    void hold() { ++holding; }
    void let_go(long long t) {
        if (--holding == 0) free_since_ns = t;
    }
    void failed_attempt(long long invoked_ns, long long failed_ns) {
        if (holding != 0 || invoked_ns < free_since_ns || down_since_ns) return;
        down_since_ns = invoked_ns;
        down_failed_ns = failed_ns;
    }
    void up(long long t, long long winner_invoked_ns) {
        if (!down_since_ns) return;
        if (winner_invoked_ns < down_failed_ns) {
            down_since_ns.reset();
            return;
        }
        const double ms = static_cast<double>(t - *down_since_ns) / kNsPerMs;
        total_ms += ms;
        longest_ms = std::max(longest_ms, ms);
        windows.emplace_back(*down_since_ns, t);
        down_since_ns.reset();
    }
};

bool is_outer(const ClientEvent& e) { return e.depth <= 1; }

// The victim is the last other lease to acquire one of the removed nodes before the release
// began, with an attempt that began after this lease had acquired: its SET landed after
// ours, so our key was gone by then (an older attempt's SET, however late its reply,
// proves nothing).
void count_foreign_releases(const RunHistory& h, const std::vector<AcquireOk>& acquires,
                            const std::vector<std::pair<ClientEvent, long long>>& releases,
                            const CheckOptions& opts, CheckResult& r) {
    std::unordered_map<int, long long> acquired_at;  // lease -> its outermost acquire ok
    for (const AcquireOk& a : acquires) acquired_at.emplace(a.lease, a.t_ns);
    for (const auto& [rel, invoked_ns] : releases) {
        if (!rel.lease || rel.nodes == 0 || !acquired_at.contains(*rel.lease)) continue;
        const long long mine = acquired_at[*rel.lease];
        const auto first = std::ranges::upper_bound(acquires, mine, {}, &AcquireOk::t_ns);
        const auto last = std::ranges::lower_bound(first, acquires.end(), invoked_ns, {}, &AcquireOk::t_ns);
        const auto victim = std::find_if(std::make_reverse_iterator(last), std::make_reverse_iterator(first),
                                         [&](const AcquireOk& a) {
                                             return a.lease != *rel.lease && (a.nodes & rel.nodes) &&
                                                    a.invoked_ns > mine;
                                         });
        if (victim == std::make_reverse_iterator(first)) continue;
        ++r.safety.foreign_releases;
        const SectionRef releaser{.lease = *rel.lease, .client = rel.client, .fence = rel.fence};
        const SectionRef owner{.lease = victim->lease, .client = h.lease_client[static_cast<size_t>(victim->lease)]};
        add_witness(r, opts, {Witness::Kind::foreign_release, releaser, owner, invoked_ns, victim->nodes & rel.nodes});
    }
}

// Sweeps the merged, time-ordered events once, keeping each client's state.
class ClientSweep {
public:
    ClientSweep(const RunHistory& h, CheckResult& r) : h_(h), r_(r), clients_(static_cast<size_t>(h.clients)) {
        if (!h.events.empty()) availability_.free_since_ns = h.events.front().t_ns;
    }

    void run(const CheckOptions& opts) {
        // A client that stops recording (it was killed) holds nothing after its last event.
        std::vector<size_t> last_event(clients_.size(), 0);
        for (size_t i = 0; i < h_.events.size(); ++i) last_event[static_cast<size_t>(h_.events[i].client)] = i;
        for (size_t i = 0; i < h_.events.size(); ++i) {
            const ClientEvent& e = h_.events[i];
            ClientState& c = clients_[static_cast<size_t>(e.client)];
            if (e.type == EventType::invoke) on_invoke(c, e);
            else if (e.op == OpKind::acquire && is_outer(e)) on_acquired(c, e);
            else if (e.op == OpKind::release) on_released(c, e);
            if (i == last_event[static_cast<size_t>(e.client)]) drop_hold(c, e.t_ns);
        }
        if (!h_.events.empty()) availability_.up(h_.events.back().t_ns, h_.events.back().t_ns);
        r_.availability.unavailable_ms = availability_.total_ms;
        r_.availability.longest_unavailable_ms = availability_.longest_ms;
        r_.availability.windows_ns = availability_.windows;
        r_.acquire_ms = percentiles(acquire_);
        r_.acquire_samples_ms = std::move(acquire_);
        r_.acquire_wait_ms = percentiles(wait_);
        r_.release_ms = percentiles(release_);
        count_foreign_releases(h_, acquires_, releases_, opts, r_);
    }

private:
    double since(const std::optional<long long>& from, long long t) const {
        return from ? static_cast<double>(t - *from) / kNsPerMs : 0;
    }

    void on_invoke(ClientState& c, const ClientEvent& e) {
        c.invoked_ns = e.t_ns;
        if (e.op != OpKind::acquire || !is_outer(e)) return;
        ++r_.ops.acquire_attempts;
        if (!c.waiting_since_ns) c.waiting_since_ns = e.t_ns;
    }

    void on_acquired(ClientState& c, const ClientEvent& e) {
        acquire_.push_back(since(c.invoked_ns, e.t_ns));
        if (e.type != EventType::ok) {
            availability_.failed_attempt(c.invoked_ns.value_or(e.t_ns), e.t_ns);
            return;
        }
        ++r_.ops.acquired;
        if (c.waiting_since_ns) wait_.push_back(since(c.waiting_since_ns, e.t_ns));
        c.waiting_since_ns.reset();
        availability_.up(e.t_ns, c.invoked_ns.value_or(e.t_ns));
        if (!c.holding) { c.holding = true; availability_.hold(); }
        if (e.lease) acquires_.push_back({e.t_ns, *e.lease, e.nodes, c.invoked_ns.value_or(e.t_ns)});
    }

    void on_released(ClientState& c, const ClientEvent& e) {
        if (is_outer(e)) release_.push_back(since(c.invoked_ns, e.t_ns));
        if (e.type == EventType::ok) {
            if (is_outer(e)) ++r_.ops.released;
            releases_.emplace_back(e, c.invoked_ns.value_or(e.t_ns));
        }
        if (is_outer(e)) drop_hold(c, e.t_ns);
    }

    void drop_hold(ClientState& c, long long t) {
        if (c.holding) { c.holding = false; availability_.let_go(t); }
    }

    const RunHistory& h_;
    CheckResult& r_;
    std::vector<ClientState> clients_;
    Availability availability_;
    std::vector<double> acquire_, wait_, release_;
    std::vector<AcquireOk> acquires_;
    std::vector<std::pair<ClientEvent, long long>> releases_;  // release ok, with its invoke time
};


nlohmann::json section_json(const SectionRef& s, const RunHistory& h) {
    nlohmann::json j = {{"lease", h.leases.at(static_cast<size_t>(s.lease))}, {"client", s.client}};
    if (s.fence) j["fence"] = *s.fence;
    if (s.enter_seq) j["enter_seq"] = s.enter_seq;
    if (s.exit_seq) j["exit_seq"] = *s.exit_seq;
    if (s.write_seq) j["write_seq"] = *s.write_seq;
    if (s.enter_t_us) j["enter_store_t_us"] = s.enter_t_us;
    if (s.read_only) j["wrote"] = false;
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

// Unavailable windows as [from, to] in ms since the first client event, the longest first
// when there are more than a report can use.
nlohmann::json windows_json(std::vector<std::pair<long long, long long>> windows, long long t0_ns) {
    constexpr size_t kMax = 200;
    if (windows.size() > kMax) {
        std::ranges::sort(windows, std::greater<>{}, [](const auto& w) { return w.second - w.first; });
        windows.resize(kMax);
        std::ranges::sort(windows);
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [from, to] : windows)
        out.push_back({static_cast<double>(from - t0_ns) / kNsPerMs, static_cast<double>(to - t0_ns) / kNsPerMs});
    return out;
}

// From when the lock was free again after a Sentinel failover (the switch announced, and the key
// of every lease granted and not released before it at its end: key_end_ns; unless whatever
// kept it changed its expiry, seed 000's question about a promoted replica) to the first section
// begun after that (its read's invoke); with none, to the run's last event. Counted from the
// failover's own end, not from the first failed attempt, so a slow failover moves it not at
// all. None when the run had no failover, or ended before the lock was free again: an
// expectation on it then does not hold (RunFigures::metric).
std::optional<double> failover_to_entry_ms(const RunHistory& h) {
    if (!h.failover_ns || h.events.empty()) return std::nullopt;
    long long free_ns = *h.failover_ns;
    std::set<int> released;  // leases whose release was answered before the switch
    for (const ClientEvent& e : h.events)
        if (e.t_ns < *h.failover_ns && e.op == OpKind::release && e.type == EventType::ok && e.lease)
            released.insert(*e.lease);
    for (const ClientEvent& e : h.events) {
        if (e.t_ns >= *h.failover_ns || e.op != OpKind::acquire || e.type != EventType::ok) continue;
        if (e.lease && released.contains(*e.lease)) continue;
        if (const auto end = key_end_ns(e, h.ttl_ms)) free_ns = std::max(free_ns, *end);
    }
    if (free_ns > h.events.back().t_ns) return std::nullopt;
    long long entered_ns = h.events.back().t_ns;
    for (const ClientEvent& e : h.events)
        if (e.op == OpKind::read && e.type == EventType::invoke && e.t_ns >= free_ns) {
            entered_ns = e.t_ns;
            break;
        }
    return static_cast<double>(entered_ns - free_ns) / kNsPerMs;
}

}  // namespace

const char* witness_kind_name(Witness::Kind k) {
    switch (k) {
        case Witness::Kind::mutual_exclusion: return "mutual_exclusion";
        case Witness::Kind::foreign_release: return "foreign_release";
        case Witness::Kind::stale_write: return "stale_write";
    }
    return "?";
}

RunFigures run_figures(const CheckResult& r, const RunHistory& h) {
    const long long t0 = h.events.empty() ? 0 : h.events.front().t_ns;
    RunFigures f;
    for (const Metric& m : metrics())
        if (m.of && (!m.present || m.present(r))) f.metrics[std::string(m.name)] = m.of(r);
    f.windows_ms = windows_json(r.availability.windows_ns, t0);
    f.acquire_ms = r.acquire_ms;
    f.acquire_wait_ms = r.acquire_wait_ms;
    f.release_ms = r.release_ms;
    f.duration_s = r.duration_s;
    f.sections_per_s = r.sections_per_s;
    const auto acquired = acquire_times(r.witnesses, h);
    for (const Witness& w : r.witnesses) f.witnesses.push_back(witness_json(w, h, t0, acquired));
    return f;
}

nlohmann::json to_json(const CheckResult& r, const RunHistory& h) { return to_json(run_figures(r, h)); }

const char* checker_id() { return LOCKBENCH_CHECKER_ID; }

CheckResult check(const RunHistory& h, const CheckOptions& opts) {
    CheckResult r;
    check_store(h, opts, r);
    ClientSweep(h, r).run(opts);
    r.validity = check_validity(h);
    r.availability.failover_to_entry_ms = failover_to_entry_ms(h);
    if (h.events.size() >= 2)
        r.duration_s = static_cast<double>(h.events.back().t_ns - h.events.front().t_ns) / 1e9;
    if (r.duration_s > 0) r.sections_per_s = static_cast<double>(r.ops.sections_completed) / r.duration_s;
    return r;
}

}  // namespace lockbench
