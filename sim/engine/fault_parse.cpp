// A fault object of a scenario, checked field by field (docs/faults.md: the fault table): what it
// does, where or when it fires, whom it strikes, and whether it repeats.
#include <algorithm>

#include "sim/engine/scenario_fields.h"

namespace lockbench::scenario_parse {
namespace {

// A fault's node: an index, or "leader" / "follower" (whichever server leads, or the first
// that does not, when the fault fires; the run checks that its service has a leader).
int parse_node(Fields& f) {
    const nlohmann::json* node = f.get("node");
    if (node && node->is_string()) {
        const std::string role = node->get<std::string>();
        if (role == "leader") return kLeaderNode;
        if (role == "follower") return kFollowerNode;
        f.fail(f.at("node"), "expected a node index, \"leader\" or \"follower\" (in a case also \"locked\"), got " + quoted_excerpt(role));
    }
    return static_cast<int>(f.integer("node", 0, 0, kMaxNodes - 1));
}

// A pause's "task": the whole client (the default) or only its background tasks. A lock
// server has no background task of the client's: a node pause cannot take it.
void parse_task(Fields& f, FaultSpec& s) {
    if (!f.get("task")) return;
    const std::string task = f.string("task", "client");
    if (s.kind != FaultSpec::Kind::pause) f.fail(f.at("task"), "only a pause stops a task; give \"fault\": \"pause\"");
    if (task != "client" && task != "background")
        f.fail(f.at("task"), "expected \"client\" or \"background\", got " + quoted_excerpt(task));
    if (task == "background" && f.get("node"))
        f.fail(f.at("task"), "a background task is a client's: a pause of a node cannot name one");
    s.background = task == "background";
}

void parse_link(Fields& f, FaultSpec& s, const WorkloadSpec& w) {
    const std::string mode = f.required_string("mode");
    const std::map<std::string, LinkFault::Kind> modes{{"pass", LinkFault::Kind::pass}, {"delay", LinkFault::Kind::delay},
        {"blackhole", LinkFault::Kind::blackhole}, {"hold", LinkFault::Kind::hold}, {"reset", LinkFault::Kind::reset}};
    if (!modes.contains(mode)) f.fail(f.at("mode"), "expected pass, delay, blackhole, hold or reset, got " + quoted_excerpt(mode));
    s.link.kind = modes.at(mode);
    s.link.latency = std::chrono::milliseconds(f.integer("latency_ms", 0, 0, w.duration_ms, run_ends(w)));
    s.link.jitter = std::chrono::milliseconds(f.integer("jitter_ms", 0, 0, w.duration_ms, run_ends(w)));
    const bool timed = s.link.latency.count() > 0 || s.link.jitter.count() > 0;
    if (s.link.kind == LinkFault::Kind::delay && !timed)
        f.fail(f.at("latency_ms"), "a delay needs latency_ms or jitter_ms above 0");
    if (s.link.kind != LinkFault::Kind::delay && timed)
        f.fail(f.at("latency_ms"), "latency_ms and jitter_ms belong to mode \"delay\" only");
    const std::string direction = f.string("direction", "both");
    if (direction == "upstream") s.direction = Direction::upstream;
    else if (direction == "downstream") s.direction = Direction::downstream;
    else if (direction != "both") f.fail(f.at("direction"), "expected both, upstream or downstream, got " + quoted_excerpt(direction));
    if (const nlohmann::json* nodes = f.get("nodes"); nodes && *nodes == "all") {
        s.link_all_nodes = true;
    } else if (nodes) {
        if (!nodes->is_array())
            f.fail(f.at("nodes"), "expected an array of lock node indices, \"all\", or in a case \"one\", \"minority\" or "
                                  "\"majority\", got " + excerpt(*nodes));
        for (const auto& n : *nodes) {
            const auto index = integer_within(n, 0, kMaxNodes - 1);
            if (!index) f.fail(f.at("nodes"), "expected node indices from 0 to " + std::to_string(kMaxNodes - 1) + ", got " + excerpt(n));
            s.link_nodes.push_back(static_cast<int>(*index));
        }
    }
    s.link_store = f.value<bool>("store", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    s.link_replication = f.value<bool>("replication", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    s.link_peers = f.value<bool>("peers", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    if (s.link_peers != (f.get("node") != nullptr))
        f.fail(f.at("node"), s.link_peers ? "required with \"peers\": the server cut off from its peers"
                                          : "a link fault aims at a node only with \"peers\": true");
    if (s.link_peers) s.node = parse_node(f);
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
    // Unset: until the run ends. Stated, it ends within the run (at a point its start is
    // unknown); drawn, the schedule cuts each draw to end with the run (ends_by_ms).
    if (!s.duration_drawn_ms) s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                              "the fault would end after the run: " + run_ends(w));
}

// The repeating nemesis's fields: "every_ms" (a number or a distribution), "until_ms",
// "client": "random" or "holder", and "duration_ms" as a distribution. The rest of the fault
// is read as for a fault at a time (at_ms optional: one interval in).
void parse_repeat(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string& file) {
    const nlohmann::json* every = f.get("every_ms");
    const nlohmann::json* client = f.get("client");
    const nlohmann::json* duration = f.get("duration_ms");
    if (!every) {
        if (f.get("until_ms")) f.fail(f.at("until_ms"), "only a repeating fault (every_ms) has an end");
        if (client && client->is_string()) f.fail(f.at("client"), "\"random\" and \"holder\" aim a repeating fault: give every_ms");
        if (duration && duration->is_object()) f.fail(f.at("duration_ms"), "a drawn length belongs to a repeating fault: give every_ms");
        return;
    }
    if (f.get("point")) f.fail(f.at("point"), "a repeating fault (every_ms) fires at times, not at a point");
    // At least 1 ms between occurrences: an interval of 0 would fire again at the same instant.
    if (every->is_object())
        s.every_ms = parse_distribution(*every, f.at("every_ms"), file, w.duration_ms, 1, "an interval is at least 1 ms");
    else s.every_ms = Distribution{Distribution::Kind::fixed, static_cast<double>(f.integer("every_ms", 1, 1, w.duration_ms, run_ends(w))), 0};
    s.until_ms = f.integer("until_ms", w.duration_ms, 1, w.duration_ms, run_ends(w));
    if (client && client->is_string()) {
        const std::string target = client->get<std::string>();
        if (target == "random") s.target = FaultSpec::Target::random;
        else if (target == "holder") s.target = FaultSpec::Target::holder;
        else f.fail(f.at("client"), "expected a client index, \"random\" or \"holder\", got " + quoted_excerpt(target));
    }
    if (duration && duration->is_object()) {
        s.duration_drawn_ms = parse_distribution(*duration, f.at("duration_ms"), file, w.duration_ms);
        s.ends_by_ms = w.duration_ms;
    }
}

// Which faults may repeat, and how: each occurrence must end before it can strike again.
void check_repeat(Fields& f, const FaultSpec& s) {
    if (!s.repeats()) return;
    if (s.kind == FaultSpec::Kind::kill || s.kind == FaultSpec::Kind::gate)
        f.fail(f.at("every_ms"), "only a pause, link or crash fault repeats (a kill or a gate happens once)");
    if (s.kind == FaultSpec::Kind::clock)
        f.fail(f.at("every_ms"), "a clock fault does not repeat: a jump never ends, so each occurrence would add to the last");
    if (s.at_ms && *s.at_ms >= *s.until_ms)
        f.fail(f.at("at_ms"), "the first occurrence must come before until_ms (" + std::to_string(*s.until_ms) + ")");
    if (s.kind == FaultSpec::Kind::link && !s.duration_ms && !s.duration_drawn_ms)
        f.fail(f.at("duration_ms"), "required for a repeating link fault: each occurrence heals before the next");
    if (s.kind == FaultSpec::Kind::crash && !s.restart_after_ms)
        f.fail(f.at("restart_after_ms"), "required for a repeating crash: the node comes back before the next");
    if (s.node && s.target != FaultSpec::Target::named) f.fail(f.at("client"), "a fault on a node aims at no client");
}

// "until": "another-enters" with "max_ms": a gate at a point, or a pause or a link fault
// with a duration, that ends only once another client has entered a section (at most max_ms).
// "until": "leader" with "max_ms": a gate that holds until a server of the service leads.
void parse_until(Fields& f, FaultSpec& s, const WorkloadSpec& w) {
    if (!f.get("until")) {
        if (f.get("max_ms")) f.fail(f.at("max_ms"), "only a fault with \"until\" has a max_ms");
        if (f.get("lease_live")) f.fail(f.at("lease_live"), "only a fault with \"until\" waits for another to enter");
        if (f.get("keep_holder_ms")) f.fail(f.at("keep_holder_ms"), "only a fault with \"until\" has another client to keep");
        return;
    }
    const std::string until = f.string("until", "");
    if (until == "leader") {
        if (s.kind != FaultSpec::Kind::gate) f.fail(f.at("until"), "only a gate waits until a server leads");
        for (const char* field : {"lease_live", "keep_holder_ms", "client", "count", "stagger_ms"})
            if (f.get(field)) f.fail(f.at(field), "a gate until a leader holds whichever client reaches its point first");
        s.until_leader = true;
        if (!f.get("max_ms")) f.fail(f.at("max_ms"), "required with \"until\": the longest the gate holds");
        s.max_ms = f.integer("max_ms", 0, 1, w.duration_ms, run_ends(w));
        return;
    }
    if (until != "another-enters")
        f.fail(f.at("until"), "expected \"another-enters\" or \"leader\", got " + quoted_excerpt(until));
    if (s.kind != FaultSpec::Kind::gate && s.kind != FaultSpec::Kind::link && s.kind != FaultSpec::Kind::pause)
        f.fail(f.at("until"), "only a gate, a pause or a link fault lasts until another client enters");
    if (s.repeats()) f.fail(f.at("until"), "a repeating fault ends by its own drawn length, not \"until\"");
    s.until_another_enters = true;
    s.lease_live = f.value<bool>("lease_live", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    if (!f.get("max_ms")) f.fail(f.at("max_ms"), "required with \"until\": the longest the fault lasts");
    s.max_ms = f.integer("max_ms", 0, 1, w.duration_ms, run_ends(w));
    if (f.get("keep_holder_ms")) {
        if (!f.get("client")) f.fail(f.at("client"), "required with \"keep_holder_ms\": the client whose acquire the holder waits for");
        s.keep_holder_ms = f.integer("keep_holder_ms", 0, 1, w.duration_ms, run_ends(w));
    }
    if (s.kind == FaultSpec::Kind::link && !f.get("duration_ms"))
        f.fail(f.at("duration_ms"), "required with \"until\": how long the link fault lasts at the least");
    if (s.kind != FaultSpec::Kind::gate && f.get("duration_ms") && f.get("duration_ms")->is_number_integer() &&
        f.get("duration_ms")->get<long long>() > s.max_ms)
        f.fail(f.at("max_ms"), "expected at least duration_ms (" + std::to_string(f.get("duration_ms")->get<long long>()) + ")");
}

FaultSpec::Kind parse_kind(Fields& f) {
    const std::string kind = f.required_string("fault");
    const std::map<std::string, FaultSpec::Kind> kinds{{"pause", FaultSpec::Kind::pause}, {"kill", FaultSpec::Kind::kill},
        {"gate", FaultSpec::Kind::gate}, {"clock", FaultSpec::Kind::clock}, {"link", FaultSpec::Kind::link},
        {"crash", FaultSpec::Kind::crash}};
    if (!kinds.contains(kind))
        f.fail(f.at("fault"), "expected \"pause\", \"kill\", \"gate\", \"clock\", \"link\" or \"crash\", got " + quoted_excerpt(kind));
    return kinds.at(kind);
}

// What each kind reads of its own: a clock's jump and rate, a crash's node and restart, a
// paused node, a gate's count and stagger.
void parse_kind_fields(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string& path) {
    if (s.kind == FaultSpec::Kind::clock) {
        const bool jumps = f.get("jump_ms") != nullptr, drifts = f.get("rate") != nullptr;
        if (!jumps && !drifts) f.fail(path, "a clock fault needs \"jump_ms\", \"rate\" or both");
        s.jump_ms = f.integer("jump_ms", 0, -kMaxJumpMs, kMaxJumpMs, "a year either way");
        if (drifts) {
            s.rate = f.number("rate", 1.0, 0, kMaxRate);
            if (*s.rate == 0) f.fail(f.at("rate"), "expected a number above 0 (seconds per second), got 0");
        }
        if (f.get("node")) s.node = parse_node(f);
    } else if (s.kind == FaultSpec::Kind::crash) {
        if (!f.get("node")) f.fail(f.at("node"), "required: which lock node crashes");
        s.node = parse_node(f);
        if (f.get("restart_after_ms"))
            s.restart_after_ms = f.integer("restart_after_ms", 0, 0, w.duration_ms - 1 - s.at_ms.value_or(0),
                                           "the restart would come after the run: " + run_ends(w));
    } else if (s.kind == FaultSpec::Kind::pause && f.get("node")) {
        s.node = parse_node(f);  // a lock server stops, not a client
        if (f.get("client") && (s.at_ms || s.repeats())) f.fail(f.at("client"), "a pause of a node at a time names no client");
    } else if (f.get("node") && s.kind != FaultSpec::Kind::link) {
        f.fail(f.at("node"), "only a pause, clock, crash or peer link fault aims at a node");
    }
    if (s.kind == FaultSpec::Kind::link) parse_link(f, s, w);
    if (s.kind == FaultSpec::Kind::gate) {
        if (!s.point) f.fail(path, "a gate holds clients at a point: give \"point\"");
        if (s.until_leader) {
            // one client, whichever reaches the point first (parse_until)
        } else if (s.until_another_enters) {
            if (!s.client) f.fail(f.at("client"), "required with \"until\": the client held");
            if (f.get("count")) f.fail(f.at("count"), "a gate with \"until\" holds one client");
        } else {
            s.count = static_cast<int>(
                f.integer("count", 2, 2, w.clients, "at most the workload's " + std::to_string(w.clients) + " clients"));
            s.stagger_ms = f.integer("stagger_ms", 0, 0, w.duration_ms, run_ends(w));
            if (s.client) f.fail(f.at("client"), "a gate gathers several clients: it cannot name one");
        }
    }
}

FaultSpec parse_fault(const nlohmann::json& j, const std::string& path, const std::string& file,
                      const WorkloadSpec& w) {
    Fields f(j, path, file);
    FaultSpec s;
    s.kind = parse_kind(f);
    parse_repeat(f, s, w, file);
    const bool by_point = f.get("point") != nullptr, by_time = f.get("at_ms") != nullptr;
    if (by_point == by_time && !s.repeats()) f.fail(path, "expected exactly one of \"point\" or \"at_ms\"");
    if (by_point) {
        const std::string name = f.string("point", "");
        s.point = parse_point(name);
        if (!s.point) f.fail(f.at("point"), "expected before_acquire, after_acquire, during_acquire, after_seen_expired, before_write, "
                                            "between_setnx_and_expire or before_release, got " + quoted_excerpt(name));
        s.occurrence = static_cast<int>(f.integer("occurrence", 1, 1, kMaxOccurrence));
    } else {
        if (by_time) s.at_ms = f.integer("at_ms", 0, 0, w.duration_ms - 1, run_ends(w));
        const bool has_target = f.get("client") || f.get("node") || s.kind == FaultSpec::Kind::link;
        if (!has_target) f.fail(f.at("client"), std::string("required with ") + (s.repeats() ? "every_ms" : "at_ms") + ": which client");
    }
    if (f.get("client") && s.target == FaultSpec::Target::named) {
        s.client = static_cast<int>(
            f.integer("client", 0, 0, w.clients - 1, "no such client: the workload has " + std::to_string(w.clients)));
    }
    if (s.kind == FaultSpec::Kind::pause) {
        if (!f.get("duration_ms")) f.fail(f.at("duration_ms"), "required for a pause");
        // At a point its start is unknown; at the least it must fit in the run.
        if (!s.duration_drawn_ms) s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                                                            "the pause would end after the run: " + run_ends(w));
    }
    parse_task(f, s);
    parse_until(f, s, w);
    parse_kind_fields(f, s, w, path);
    if (s.kind != FaultSpec::Kind::pause && s.kind != FaultSpec::Kind::link && f.get("duration_ms"))
        f.fail(f.at("duration_ms"), "only a pause or a link fault lasts a duration");
    check_repeat(f, s);
    f.finish();
    return s;
}

}  // namespace

std::vector<FaultSpec> parse_faults(const nlohmann::json& j, const std::string& path, const std::string& file,
                                    const WorkloadSpec& w) {
    if (!j.is_array()) throw ScenarioError(file + ": " + path + ": expected an array of faults, got " + excerpt(j));
    std::vector<FaultSpec> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(parse_fault(j[i], path + "[" + std::to_string(i) + "]", file, w));
    return out;
}

}  // namespace lockbench::scenario_parse
