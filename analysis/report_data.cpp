#include "analysis/report_data.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace lockbench {
namespace {

constexpr double kNsPerMs = 1e6;

// Each (client, lease)'s completed enter calls (read invoke → ok), in the client's order.
using ReadCalls = std::map<std::pair<int, int>, std::vector<std::pair<long long, long long>>>;

ReadCalls read_calls(const RunHistory& h) {
    ReadCalls calls;
    std::map<std::pair<int, int>, long long> invoked;
    for (const ClientEvent& e : h.events) {
        if (e.op != OpKind::read || !e.lease) continue;
        const std::pair key{e.client, *e.lease};
        if (e.type == EventType::invoke) {
            invoked[key] = e.t_ns;
        } else if (e.type == EventType::ok) {
            if (auto it = invoked.find(key); it != invoked.end()) {
                calls[key].emplace_back(it->second, e.t_ns);
                invoked.erase(it);
            }
        }
    }
    return calls;
}

double ms_since(long long t_ns, long long t0_ns) { return static_cast<double>(t_ns - t0_ns) / kNsPerMs; }

// The first outer acquire ok of each lease, and each client's last event, on the axis.
struct ClientTimes {
    std::unordered_map<int, double> acquired_ms;
    std::unordered_map<int, double> last_ms;
};

ClientTimes client_times(const RunHistory& h, long long t0_ns) {
    ClientTimes t;
    for (const ClientEvent& e : h.events) {
        t.last_ms[e.client] = ms_since(e.t_ns, t0_ns);
        if (e.op == OpKind::acquire && e.type == EventType::ok && e.depth <= 1 && e.lease)
            t.acquired_ms.try_emplace(*e.lease, ms_since(e.t_ns, t0_ns));
    }
    return t;
}

const SectionSpan* section_entered_at(const std::vector<SectionSpan>& sections, long long seq) {
    const auto it = std::ranges::find(sections, seq, &SectionSpan::enter_seq);
    return it == sections.end() ? nullptr : &*it;
}

const SectionSpan* section_of_lease(const std::vector<SectionSpan>& sections, int lease) {
    const auto it = std::ranges::find(sections, lease, &SectionSpan::lease);
    return it == sections.end() ? nullptr : &*it;
}

// The span a timeline of A and B must show: both sections, both leases from their acquire,
// the release that deleted B's lock, and A's client up to its last event when the store
// never saw A's section end.
void frame(WitnessWindow& w, const SectionSpan& a, const SectionSpan& b, const ClientTimes& t) {
    std::vector<double> starts{*a.enter_ms, *b.enter_ms}, ends{*a.end_ms(), *b.end_ms()};
    for (const SectionSpan* s : {&a, &b})
        if (auto it = t.acquired_ms.find(s->lease); it != t.acquired_ms.end()) starts.push_back(it->second);
    if (w.release_ms) ends.push_back(*w.release_ms);
    if (!a.exit_ms && !a.write_ms) {
        const auto it = t.last_ms.find(a.client);
        ends.push_back(it == t.last_ms.end() ? *a.enter_ms : it->second);
    }
    w.from_ms = std::ranges::min(starts);
    w.to_ms = std::ranges::max(ends);
}

// A and B found in the store: the window, the overlap at the store, who else entered.
WitnessWindow window_of(std::string kind, const SectionSpan& a, const SectionSpan& b, std::optional<double> release_ms,
                        const std::vector<SectionSpan>& sections, const ClientTimes& t) {
    WitnessWindow w{.kind = std::move(kind), .placed = true, .a_enter_seq = a.enter_seq, .b_enter_seq = b.enter_seq};
    w.release_ms = release_ms;
    frame(w, a, b, t);
    const double lo = std::max(*a.enter_ms, *b.enter_ms), hi = std::min(*a.end_ms(), *b.end_ms());
    if (hi >= lo && w.kind != "foreign_release") w.overlap_ms = std::pair{lo, hi};
    w.others_inside = std::ranges::count_if(sections, [&](const SectionSpan& s) {
        return s.lease != a.lease && a.enter_seq < s.enter_seq && s.enter_seq < a.last_seq();
    });
    return w;
}

WitnessWindow witness_window(const Witness& w, const ReportData& d, const ClientTimes& t) {
    const bool foreign = w.kind == Witness::Kind::foreign_release;
    const auto find = [&](const SectionRef& ref) {
        const SectionSpan* s = section_entered_at(d.sections, ref.enter_seq);
        return s || !foreign ? s : section_of_lease(d.sections, ref.lease);
    };
    const SectionSpan *a = find(w.first), *b = find(w.second);
    std::optional<double> release_ms;
    if (foreign) release_ms = ms_since(w.t_ns, d.t0_ns);
    // Without the alignment nothing of the store has a place on the axis.
    if (!a || !b || !d.clock.offset_ns) return {.kind = witness_kind_name(w.kind)};
    return window_of(witness_kind_name(w.kind), *a, *b, release_ms, d.sections, t);
}

// The run's first fence rejection (A) and the first other lease in after A (B).
std::optional<WitnessWindow> reject_window(const ReportData& d, const ClientTimes& t) {
    const auto a = std::ranges::find(d.sections, true, &SectionSpan::rejected);
    if (a == d.sections.end() || !d.clock.offset_ns) return std::nullopt;
    const auto b = std::ranges::find_if(
        d.sections, [&](const SectionSpan& s) { return s.enter_seq > a->enter_seq && s.lease != a->lease; });
    if (b == d.sections.end()) return std::nullopt;
    return window_of("reject", *a, *b, std::nullopt, d.sections, t);
}

}  // namespace

ClockAlignment align_store_clock(const RunHistory& h) {
    const ReadCalls calls = read_calls(h);
    std::map<std::pair<int, int>, size_t> used;
    // Twice each difference, in whole ns: nothing rounds (the store's clock is ~1.8e18 ns,
    // past what a double holds to the ns).
    std::vector<long long> twice;
    for (const StoreEntry& e : h.store) {
        if (e.kind != StoreKind::enter) continue;
        const std::pair key{e.client, e.lease};
        const size_t k = used[key]++;
        const auto it = calls.find(key);
        if (it == calls.end() || k >= it->second.size()) continue;
        const auto [invoke_ns, ok_ns] = it->second[k];
        twice.push_back(2 * e.t_us * 1000 - invoke_ns - ok_ns);
    }
    ClockAlignment a;
    a.samples = static_cast<long long>(twice.size());
    if (twice.empty()) return a;
    std::ranges::sort(twice);
    const size_t n = twice.size();
    a.offset_ns = twice[n / 2] / 2;
    a.iqr_us = static_cast<double>(twice[3 * n / 4] - twice[n / 4]) / 2000.0;
    return a;
}

std::vector<SectionSpan> store_sections(const RunHistory& h, const ClockAlignment& clock, long long t0_ns) {
    const auto on_axis = [&](const StoreEntry& e) -> std::optional<double> {
        if (!clock.offset_ns) return std::nullopt;
        return static_cast<double>(e.t_us * 1000 - *clock.offset_ns - t0_ns) / kNsPerMs;
    };
    std::vector<SectionSpan> sections;
    std::unordered_map<int, size_t> open;  // client -> its open section
    for (const StoreEntry& e : h.store) {
        if (e.kind == StoreKind::enter) {
            if (auto it = open.find(e.client); it != open.end()) sections[it->second].closed_by_next = true;
            open[e.client] = sections.size();
            sections.push_back({.lease = e.lease, .client = e.client, .fence = e.fence, .enter_seq = e.seq,
                                .enter_ms = on_axis(e)});
            continue;
        }
        const auto it = open.find(e.client);
        if (it == open.end() || sections[it->second].lease != e.lease) continue;
        SectionSpan& s = sections[it->second];
        if (e.kind == StoreKind::exit) {
            s.exit_seq = e.seq;
            s.exit_ms = on_axis(e);
            open.erase(it);
        } else {
            s.write_seq = e.seq;
            s.write_ms = on_axis(e);
            s.rejected = e.kind == StoreKind::reject;
            if (s.rejected) s.max_fence = e.max_fence;
        }
    }
    return sections;
}

ReportData report_data(const RunHistory& h, const CheckResult& r) {
    ReportData d;
    d.t0_ns = h.events.empty() ? 0 : h.events.front().t_ns;
    d.clock = align_store_clock(h);
    d.sections = store_sections(h, d.clock, d.t0_ns);
    if (d.clock.offset_ns)
        for (const StoreEntry& e : h.store)
            if (e.kind == StoreKind::write)
                d.writes_ms.push_back(static_cast<double>(e.t_us * 1000 - *d.clock.offset_ns - d.t0_ns) / kNsPerMs);
    for (const auto& [from, to] : r.availability.windows_ns)
        d.unavailable_ms.emplace_back(ms_since(from, d.t0_ns), ms_since(to, d.t0_ns));
    const ClientTimes times = client_times(h, d.t0_ns);
    for (const Witness& w : r.witnesses) d.witnesses.push_back(witness_window(w, d, times));
    if (auto w = reject_window(d, times)) d.witnesses.push_back(std::move(*w));
    d.acquire_ms = r.acquire_samples_ms;
    return d;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
nlohmann::json opt(const std::optional<long long>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

nlohmann::json section_json(const SectionSpan& s, const RunHistory& h) {
    return {{"lease", h.leases.at(static_cast<size_t>(s.lease))}, {"client", s.client}, {"fence", opt(s.fence)},
            {"enter_seq", s.enter_seq}, {"enter_ms", opt(s.enter_ms)}, {"write_seq", opt(s.write_seq)},
            {"write_ms", opt(s.write_ms)}, {"rejected", s.rejected}, {"max_fence", opt(s.max_fence)},
            {"exit_seq", opt(s.exit_seq)}, {"exit_ms", opt(s.exit_ms)}, {"closed_by_next", s.closed_by_next}};
}

nlohmann::json window_json(const WitnessWindow& w) {
    if (!w.placed) return {{"kind", w.kind}, {"placed", false}};
    nlohmann::json j = {{"kind", w.kind}, {"placed", true}, {"a_enter_seq", w.a_enter_seq},
                        {"b_enter_seq", w.b_enter_seq}, {"window_ms", {w.from_ms, w.to_ms}},
                        {"overlap_ms", nullptr}, {"release_ms", opt(w.release_ms)},
                        {"others_inside", w.others_inside}};
    if (w.overlap_ms) j["overlap_ms"] = {w.overlap_ms->first, w.overlap_ms->second};
    return j;
}

}  // namespace

nlohmann::json to_json(const ReportData& d, const RunHistory& h) {
    nlohmann::json sections = nlohmann::json::array(), windows = nlohmann::json::array(),
                   unavailable = nlohmann::json::array();
    for (const SectionSpan& s : d.sections) sections.push_back(section_json(s, h));
    for (const WitnessWindow& w : d.witnesses) windows.push_back(window_json(w));
    for (const auto& [from, to] : d.unavailable_ms) unavailable.push_back({from, to});
    return {{"format", "lockbench-sections"},
            {"version", kSectionsVersion},
            {"t0_ns", d.t0_ns},
            {"clock", {{"offset_ns", opt(d.clock.offset_ns)}, {"samples", d.clock.samples},
                       {"iqr_us", opt(d.clock.iqr_us)}}},
            {"sections", sections},
            {"writes_ms", d.writes_ms},
            {"unavailable_ms", unavailable},
            {"witnesses", windows},
            {"acquire_ms", d.acquire_ms}};
}

nlohmann::json report_data_json(const RunHistory& h, const CheckResult& r) { return to_json(report_data(h, r), h); }

}  // namespace lockbench
