#include "sim/harness/discover.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario.h"
#include "sim/harness/explore.h"

namespace lockbench::sim {
using Json = nlohmann::json;

namespace {

// A shape of a kind the run offers (fault_kind.h): what one draw of a fault is.
struct Kind {
    const FaultKind* kind = nullptr;
    const FaultShape* shape = nullptr;
};

// What a run offers the draw: its kinds, the points its algorithm reaches, its time scale.
struct Run {
    std::vector<Kind> kinds;
    std::vector<std::string> points;
    long long scale_ms = 500;  // the lease: what a pause, a jump or a cut is measured against
    long long duration_ms = 0;
    int clients = 0, nodes = 1;
};

Run describe_run(const RunSpec& r) {
    Run out;
    // A fault armed where its run never passes is a wasted draw.
    out.points = points_reached(*r.algorithm, r.params.json());
    const Json& p = r.params.json();
    out.scale_ms = p.contains("ttl_ms") ? p.at("ttl_ms").get<long long>() : p.value("lease_ms", 500LL);
    out.duration_ms = r.workload.duration_ms;
    out.clients = r.workload.clients;
    out.nodes = r.nodes;
    const SearchRun offers{.clients = out.clients,
                           .background = r.renew || (r.algorithm->background_task && r.algorithm->background_task(p)),
                           .sentinel = r.sentinel};
    // The shapes every run offers, in the kinds' order, then those this run offers.
    for (const bool conditional : {false, true})
        for (const FaultKind* k : fault_kinds())
            for (const FaultShape& shape : k->shapes)
                if ((shape.offered != nullptr) == conditional && (!shape.offered || shape.offered(offers))) out.kinds.push_back({k, &shape});
    return out;
}

class Draw {
public:
    Draw(std::uint64_t seed, const Run& run) : rng_(seed), run_(run) {}

    long long uniform(long long lo, long long hi) {
        return hi <= lo ? lo : lo + static_cast<long long>(rng_() % static_cast<std::uint64_t>(hi - lo + 1));
    }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    template <class T> const T& pick(const std::vector<T>& v) { return v.at(static_cast<std::size_t>(uniform(0, static_cast<long long>(v.size()) - 1))); }
    // A length on the run's time scale: scale × 2^u, u uniform in [lo, hi].
    long long scaled(double lo, double hi) {
        const double u = std::uniform_real_distribution<double>(lo, hi)(rng_);
        return std::max(1LL, std::llround(static_cast<double>(run_.scale_ms) * std::exp2(u)));
    }

    std::mt19937_64& rng() { return rng_; }
    const Run& run() const { return run_; }

private:
    std::mt19937_64 rng_;
    const Run& run_;
};

// The kinds of one schedule: a subset of at most `budget` of the run's kinds (swarm testing),
// then the kind of each of its faults, every kind of the subset at least once.
std::vector<Kind> draw_kinds(Draw& d, int budget) {
    std::vector<Kind> all = d.run().kinds;
    std::shuffle(all.begin(), all.end(), d.rng());
    const long long subset = d.uniform(1, std::min<long long>(budget, static_cast<long long>(all.size())));
    std::vector<Kind> kinds(all.begin(), all.begin() + subset);
    const long long faults = d.uniform(subset, budget);
    while (static_cast<long long>(kinds.size()) < faults) kinds.push_back(d.pick(std::vector<Kind>(all.begin(), all.begin() + subset)));
    std::shuffle(kinds.begin(), kinds.end(), d.rng());
    return kinds;
}

// What the faults drawn so far chose, for the correlated draws that follow. Correlated, a
// schedule tells one story: every fault strikes one client in one of its lock cycles (the same
// occurrence), each at a point no earlier in the cycle than the one before, and a node fault
// keeps off the nodes a link cut that client from (a node it could still lock).
struct Aim {
    bool correlated = false;
    int client = 0;
    int occurrence = 1;
    std::size_t from_point = 0;     // index into the run's points, in cycle order
    std::vector<int> cut;           // the lock nodes an earlier link cut the client from
};

// When and on whom: at a point (whoever reaches it, or one client), or at a time on a client.
void draw_when(Draw& d, Json& f, Aim& aim, bool needs_point, bool node_fault, bool cuts_nodes) {
    const Run& r = d.run();
    if (aim.correlated) {
        // The story's natural places: a cut from lock nodes as the client sets out to lock
        // (drawn first, at the first point), a node fault right after it locked, if the story
        // has not passed it; anything else anywhere from where the story is.
        const auto after_acquire = static_cast<std::size_t>(std::ranges::find(r.points, "after_acquire") - r.points.begin());
        if (cuts_nodes) aim.from_point = 0;
        else if (node_fault && after_acquire >= aim.from_point && d.chance(0.5)) aim.from_point = after_acquire;
        else aim.from_point = static_cast<std::size_t>(d.uniform(static_cast<long long>(aim.from_point), static_cast<long long>(r.points.size()) - 1));
        f["point"] = r.points.at(aim.from_point);
        f["occurrence"] = aim.occurrence;
        f["client"] = aim.client;
    } else if (needs_point || d.chance(0.75)) {
        // A node fault matters most right after a client locked: it is drawn there half the time.
        f["point"] = node_fault && d.chance(0.5) ? std::string("after_acquire") : d.pick(r.points);
        f["occurrence"] = d.uniform(1, 3);
        if (d.chance(0.5)) f["client"] = d.uniform(0, r.clients - 1);
    } else {
        f["at_ms"] = d.uniform(0, r.duration_ms / 2);
        f["client"] = d.uniform(0, r.clients - 1);
    }
}

// A length that ends within the run, as the scenario rules want.
long long within_run(const Draw& d, const Json& f, long long length_ms) {
    return std::clamp(length_ms, 1LL, d.run().duration_ms - f.value("at_ms", 0LL));
}

// The lock nodes a link cuts: one, a minority, a bare majority or all of them; those sizes
// are where quorum locks change behaviour.
std::vector<int> draw_node_set(Draw& d, bool minority) {
    const int n = d.run().nodes;
    const std::vector<int> sizes = minority ? std::vector<int>{std::max(1, (n - 1) / 2)} : std::vector<int>{1, std::max(1, (n - 1) / 2), n / 2 + 1, n};
    std::vector<int> nodes(static_cast<std::size_t>(n));
    std::iota(nodes.begin(), nodes.end(), 0);
    std::shuffle(nodes.begin(), nodes.end(), d.rng());
    nodes.resize(static_cast<std::size_t>(d.pick(sizes)));
    std::ranges::sort(nodes);
    return nodes;
}

// A lock node: off the nodes the client was cut from when correlated (one it could still lock).
int draw_node(Draw& d, const Aim& aim) {
    std::vector<int> open;
    for (int n = 0; n < d.run().nodes; ++n)
        if (!aim.correlated || !std::ranges::count(aim.cut, n)) open.push_back(n);
    return open.empty() ? static_cast<int>(d.uniform(0, d.run().nodes - 1)) : d.pick(open);
}

// A kind's shape draws through this (fault_kind.h): the run's draw and the story's aim.
class ShapeDraw : public FaultDraw {
public:
    ShapeDraw(Draw& d, Aim& aim) : d_(d), aim_(aim) {}
    long long uniform(long long lo, long long hi) override { return d_.uniform(lo, hi); }
    bool chance(double p) override { return d_.chance(p); }
    long long scaled(double lo, double hi) override { return d_.scaled(lo, hi); }
    std::string pick(const std::vector<std::string>& among) override { return d_.pick(among); }
    long long duration_ms() const override { return d_.run().duration_ms; }
    int clients() const override { return d_.run().clients; }
    long long within_run(const Json& f, long long ms) const override { return lockbench::sim::within_run(d_, f, ms); }
    int node() override { return draw_node(d_, aim_); }
    // In a story the cut leaves the client a bare majority to lock (a minority cut).
    std::vector<int> cut_nodes(const Json& f) override {
        const std::vector<int> nodes = draw_node_set(d_, aim_.correlated && d_.run().nodes >= 3);
        if (f.contains("client") && f.at("client") == aim_.client) aim_.cut = nodes;
        return nodes;
    }

private:
    Draw& d_;
    Aim& aim_;
};

Json draw_fault(Draw& d, Kind kind, Aim& aim) {
    Json f = Json::object();
    draw_when(d, f, aim, kind.shape->needs_point, kind.shape->node_fault, kind.shape->cuts_nodes);
    f["fault"] = kind.kind->name;
    ShapeDraw shape(d, aim);
    kind.shape->draw(shape, f);
    return f;
}

}  // namespace

Json draw_budget_schedule(const Json& source, const std::string& run, std::uint64_t seed, int budget) {
    const Scenario parsed = parse_scenario(source, "<scenario>");
    const RunSpec& spec = *std::ranges::find_if(parsed.runs, [&](const RunSpec& r) { return r.name == run; });
    const Run shape = describe_run(spec);
    Draw d(seed, shape);
    Aim aim;
    aim.correlated = d.chance(0.5);
    aim.client = static_cast<int>(d.uniform(0, shape.clients - 1));
    aim.occurrence = static_cast<int>(d.uniform(1, 3));
    Json faults = Json::array();
    std::vector<Kind> kinds = draw_kinds(d, budget);
    // A cut drawn first, so that a correlated node fault can keep off the nodes it cut.
    std::ranges::stable_partition(kinds, [](Kind k) { return k.shape->cuts_nodes; });
    for (Kind k : kinds) faults.push_back(draw_fault(d, k, aim));
    Json s = one_run_scenario(source, parsed, run);
    s["runs"][0]["faults"] = faults;
    s["seed"] = d.rng()() >> 12;  // 52 bits: an exact JSON number
    s["name"] = parsed.name + "-" + std::to_string(seed);
    return s;
}

namespace {

// "the TTL" or "the lease", as the run's lock calls its time scale.
struct Scale {
    long long ms = 500;
    std::string word = "the TTL";
};

std::string where(const Json& f) {
    if (f.contains("point")) return " at " + f.at("point").get<std::string>();
    return f.contains("at_ms") ? " at a time" : "";
}

// A fault as the search's classes name it: its kind's words (fault_kind.h), where it starts.
std::string fault_token(const Json& f, const Scale& scale, int nodes, bool keeps_data) {
    const FaultKind* kind = find_fault_kind(f.value("fault", std::string("?")));
    if (!kind) return f.value("fault", std::string("?")) + where(f);
    return kind->words(f, FaultWords{.scale_ms = scale.ms, .scale_word = scale.word, .nodes = nodes, .keeps_data = keeps_data,
                                     .where = where(f)});
}

// How a fault stands to those that landed before it: on the client one of them names, on a
// node a link of that client's cut it from, or left it.
std::string relation(const Json& faults, const std::vector<std::size_t>& order, std::size_t position) {
    const Json& f = faults.at(order.at(position));
    if (!f.contains("client")) return "";
    std::string out;
    for (std::size_t p = 0; p < position; ++p) {
        const Json& g = faults.at(order.at(p));
        if (!g.contains("client") || g.at("client") != f.at("client")) continue;
        if (out.empty()) out = ", same client";
        if (f.contains("node") && g.contains("nodes"))
            out += std::ranges::count(g.at("nodes"), f.at("node")) ? ", on a node it was cut from" : ", on a node it was not cut from";
    }
    return out;
}

}  // namespace

std::string failure_class(const Json& scenario, const std::vector<std::size_t>& landed) {
    const Scenario parsed = parse_scenario(scenario, "<schedule>");
    const RunSpec& run = parsed.runs.at(0);
    const Json& faults = scenario.at("runs").at(0).at("faults");
    const Json& params = run.params.json();
    Scale scale;
    if (params.contains("ttl_ms")) scale.ms = params.at("ttl_ms").get<long long>();
    else if (params.contains("lease_ms")) scale = {params.at("lease_ms").get<long long>(), "the lease"};
    const int nodes = run.nodes;
    const bool keeps_data = run.persistence != Persistence::none;
    std::vector<std::size_t> order;
    for (std::size_t i : landed)
        if (i < faults.size() && !std::ranges::count(order, i)) order.push_back(i);
    for (std::size_t i = 0; i < faults.size(); ++i)
        if (!std::ranges::count(order, i)) order.push_back(i);
    std::string out;
    for (std::size_t p = 0; p < order.size(); ++p)
        out += (out.empty() ? "" : " + ") + fault_token(faults.at(order[p]), scale, nodes, keeps_data) + relation(faults, order, p);
    return out.empty() ? "no fault" : out;
}

}  // namespace lockbench::sim
