// "link": what happens to the bytes on some paths (faults/link_fault.h): delayed, dropped
// (blackhole), held and delivered late in order, or reset; on the paths of one client or of
// all to some lock nodes ("nodes"), to the protected store, on the master→replica link, or
// between a server and its peers. For duration_ms, or until the run ends.
#include <map>

#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;
using scenario_parse::quoted_excerpt;
using scenario_parse::run_ends;

void parse_mode(Fields& f, FaultSpec& s, const WorkloadSpec& w) {
    const std::string mode = f.required_string("mode");
    const std::map<std::string, LinkFault::Kind> modes{{"pass", LinkFault::Kind::pass}, {"delay", LinkFault::Kind::delay},
        {"blackhole", LinkFault::Kind::blackhole}, {"hold", LinkFault::Kind::hold}, {"reset", LinkFault::Kind::reset}};
    if (!modes.contains(mode)) f.fail(f.at("mode"), "expected pass, delay, blackhole, hold or reset, got " + quoted_excerpt(mode));
    s.link.kind = modes.at(mode);
    s.link.latency = std::chrono::milliseconds(f.integer("latency_ms", 0, 0, w.duration_ms, run_ends(w)));
    s.link.jitter = std::chrono::milliseconds(f.integer("jitter_ms", 0, 0, w.duration_ms, run_ends(w)));
    const bool timed = s.link.latency.count() > 0 || s.link.jitter.count() > 0;
    if (s.link.kind == LinkFault::Kind::delay && !timed) f.fail(f.at("latency_ms"), "a delay needs latency_ms or jitter_ms above 0");
    if (s.link.kind != LinkFault::Kind::delay && timed) f.fail(f.at("latency_ms"), "latency_ms and jitter_ms belong to mode \"delay\" only");
    const std::string direction = f.string("direction", "both");
    if (direction == "upstream") s.direction = Direction::upstream;
    else if (direction == "downstream") s.direction = Direction::downstream;
    else if (direction != "both") f.fail(f.at("direction"), "expected both, upstream or downstream, got " + quoted_excerpt(direction));
}

// Which paths: lock nodes, the store, the replication link, a server's peers; and whose.
void parse_paths(Fields& f, FaultSpec& s) {
    if (const nlohmann::json* nodes = f.get("nodes"); nodes && *nodes == "all") {
        s.link_all_nodes = true;
    } else if (nodes) {
        if (!nodes->is_array())
            f.fail(f.at("nodes"), "expected an array of lock node indices, \"all\", or in a case \"one\", \"minority\" or "
                                  "\"majority\", got " + excerpt(*nodes));
        for (const auto& n : *nodes) {
            const auto index = integer_within(n, 0, scenario_parse::kMaxNodes - 1);
            if (!index) f.fail(f.at("nodes"), "expected node indices from 0 to " + std::to_string(scenario_parse::kMaxNodes - 1) + ", got " + excerpt(n));
            s.link_nodes.push_back(static_cast<int>(*index));
        }
    }
    const auto flag = [&](const char* key) {
        return f.value<bool>(key, false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    };
    s.link_store = flag("store");
    s.link_replication = flag("replication");
    s.link_peers = flag("peers");
    if (s.link_peers != (f.get("node") != nullptr))
        f.fail(f.at("node"), s.link_peers ? "required with \"peers\": the server cut off from its peers"
                                          : "a link fault aims at a node only with \"peers\": true");
    if (s.link_peers) s.node = scenario_parse::parse_fault_node(f);
    if (s.link_nodes.empty() && !s.link_all_nodes && !s.link_store && !s.link_replication && !s.link_peers)
        f.fail(f.at("nodes"), "a link fault needs \"nodes\", \"store\", \"replication\" or \"peers\"");
    // Whose paths: every client's ("clients": "all"), the given client's, or at a point the
    // client that reached it; at a time with no client named, everyone's.
    if (f.get("clients")) {
        const std::string clients = f.string("clients", "");
        if (clients != "all") f.fail(f.at("clients"), "expected \"all\" (or leave it out and give \"client\"), got " + quoted_excerpt(clients));
        if (s.client) f.fail(f.at("clients"), "give either \"clients\": \"all\" or \"client\", not both");
    }
    s.all_clients = f.get("clients") != nullptr || ((s.at_ms || s.repeats()) && !s.client && s.target == FaultSpec::Target::named);
    if (f.get("clients") && s.target != FaultSpec::Target::named)
        f.fail(f.at("clients"), "give either \"clients\": \"all\" or \"client\", not both");
}

void parse(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string&) {
    parse_mode(f, s, w);
    parse_paths(f, s);
    // Unset: until the run ends. Stated, it ends within the run (at a point its start is
    // unknown); drawn, the schedule cuts each draw to end with the run (ends_by_ms).
    if (!s.duration_drawn_ms)
        s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0), "the fault would end after the run: " + run_ends(w));
    if (s.repeats() && !s.duration_ms && !s.duration_drawn_ms)
        f.fail(f.at("duration_ms"), "required for a repeating link fault: each occurrence heals before the next");
    if (s.until_another_enters && !f.get("duration_ms"))
        f.fail(f.at("duration_ms"), "required with \"until\": how long the link fault lasts at the least");
}

std::string label(const FaultSpec& s) {
    std::string out = " " + describe(s.link);
    for (int n : s.link_nodes) out += " n" + std::to_string(n);
    if (s.link_store) out += " store";
    if (s.link_replication) out += " replication";
    if (s.link_peers) out += " peers of node " + node_text(s.node.value_or(0));
    if (s.duration_drawn_ms) out += " for " + describe_ms(*s.duration_drawn_ms);
    else if (s.duration_ms) out += " for " + std::to_string(s.duration_ms) + " ms";
    return out;
}

// etcd's peer URLs must be the same cluster-wide, so its peer links are not proxied (pause or
// kill a member as the minority stand-in).
std::optional<std::string> why_not(const FaultSpec& s, const FaultLanding& at) {
    if (s.link_peers && !service_info(at.service).peers_proxied)
        return "cuts a server's links to its peers, which only " + services_with(&ServiceInfo::peers_proxied, false) +
               "'s go through lockbench's proxies";
    if (s.link_peers && at.nodes == 1) return "cuts a server's links to its peers, which a single server does not have";
    if (s.link_replication && !at.sentinel)
        return "holds the master→replica link, which needs a lock that follows its master through Sentinel";
    return std::nullopt;
}

bool fire(FaultFiring& on) {
    on.set_links(false);
    on.log("start");
    if (on.spec().duration_ms || on.spec().duration_drawn_ms) on.lasts();
    return true;
}

void end(FaultFiring& on) {
    on.set_links(true);
    on.ended();
    on.log("end");
}

bool stays(const FaultSpec& s) { return !s.duration_ms && !s.duration_drawn_ms; }  // set for good: healed at the run's end

void needs(const FaultSpec& s, WorldNeeds& n) {
    if (!s.link_nodes.empty() || s.link_store) n.proxies = true;
    if (s.link_peers) n.peer_proxies = true;
    if (s.link.kind == LinkFault::Kind::blackhole || s.link.kind == LinkFault::Kind::reset) n.loses_messages = true;
    n.delay_ms = std::max(n.delay_ms, static_cast<long long>((s.link.latency + s.link.jitter).count()));
}

// By what it does to a request: cut (blackhole, reset: the client times out or fails), held
// (delivered late, in order: upstream a late request, downstream a late reply) or delayed;
// its target; where it starts. Exact (the search's coverage): its mode and direction as given.
std::string words(const nlohmann::json& f, const FaultWords& w) {
    const std::string mode = f.value("mode", std::string("?"));
    std::string t = mode == "hold" ? "link held" : mode == "delay" ? "link delayed" : "link cut";
    if (w.exact) t = "link " + mode + (f.contains("direction") ? " " + f.at("direction").get<std::string>() : "");
    else if (mode == "hold" && f.contains("direction")) t += f.at("direction") == "upstream" ? " (requests)" : " (replies)";
    if (mode == "delay") t += w.than(f.value("latency_ms", 0LL), "more", "less");
    t += f.contains("client") || f.contains("point") ? " from a client" : " from every client";
    std::vector<std::string> to;
    if (f.contains("nodes")) {
        const std::size_t cut = f.at("nodes").is_array() ? f.at("nodes").size() : static_cast<std::size_t>(w.nodes);  // "all"
        to.push_back(std::to_string(cut) + " of " + std::to_string(w.nodes) + " lock nodes");
    }
    if (f.value("store", false)) to.push_back("the store");
    if (f.value("replication", false)) to.push_back("the replica");
    if (f.value("peers", false)) to.push_back("its peers");
    for (std::size_t i = 0; i < to.size(); ++i) t += (i ? " and " : " to ") + to[i];
    return t + w.where;
}

// A mode, a direction, the paths, a length (a quarter of the time: until the run ends).
void draw_mode(FaultDraw& d, nlohmann::json& f, bool replication) {
    f["mode"] = replication ? std::string("hold") : d.pick({"blackhole", "hold", "reset", "delay"});
    if (f["mode"] == "delay") f["latency_ms"] = std::min(d.scaled(-3, 1), d.duration_ms());  // a delay the run can hold
    if (!replication && d.chance(0.5)) f["direction"] = d.chance(0.5) ? "upstream" : "downstream";
}

void draw_length(FaultDraw& d, nlohmann::json& f) {
    if (!d.chance(0.25)) f["duration_ms"] = d.within_run(f, d.scaled(-2, 1.6));
}

void draw_lock(FaultDraw& d, nlohmann::json& f) {
    draw_mode(d, f, false);
    f["nodes"] = d.cut_nodes(f);
    draw_length(d, f);
}

void draw_store(FaultDraw& d, nlohmann::json& f) {
    draw_mode(d, f, false);
    f["store"] = true;
    draw_length(d, f);
}

void draw_replication(FaultDraw& d, nlohmann::json& f) {
    draw_mode(d, f, true);
    f["replication"] = true;
    draw_length(d, f);
}

}  // namespace

const FaultKind& link_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::link,
        .name = "link",
        .noun = "a link fault",
        .reads_node = true,
        .lasts = true,
        .waits_for_another = true,
        .own_fields = {"mode", "latency_ms", "jitter_ms", "direction", "nodes", "store", "replication", "peers", "clients"},
        .parse = parse,
        .label = label,
        .lease_scaled = {"latency_ms", "jitter_ms"},
        .why_not = why_not,
        .fire = fire,
        .end = end,
        .stays = stays,
        .needs = needs,
        .words = words,
        .shapes = {{.name = "lock link", .cuts_nodes = true, .draw = draw_lock},
                   {.name = "store link", .draw = draw_store},
                   // No Sentinel failover without Sentinel.
                   {.name = "replication link", .offered = [](const SearchRun& r) { return r.sentinel; }, .draw = draw_replication}},
    };
    return entry;
}

}  // namespace lockbench
