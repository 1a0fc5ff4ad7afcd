// A fault object of a scenario, checked field by field (docs/faults.md: the fault table): what it
// does, where or when it fires, whom it strikes, and whether it repeats.
// What a kind reads of its own, and what it may be given, is its entry's (fault_kind.h).
#include <algorithm>

#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench::scenario_parse {

// A fault's node: an index, or "leader" / "follower" (whichever server leads, or the first
// that does not, when the fault fires; the run checks that its service has a leader).
int parse_fault_node(Fields& f) {
    const nlohmann::json* node = f.get("node");
    if (node && node->is_string()) {
        const std::string role = node->get<std::string>();
        if (role == "leader") return kLeaderNode;
        if (role == "follower") return kFollowerNode;
        f.fail(f.at("node"), "expected a node index, \"leader\" or \"follower\" (in a case also \"locked\"), got " + quoted_excerpt(role));
    }
    return static_cast<int>(f.integer("node", 0, 0, kMaxNodes - 1));
}

namespace {

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
void check_repeat(Fields& f, const FaultSpec& s, const FaultKind& k) {
    if (!s.repeats()) return;
    if (k.no_repeat)
        f.fail(f.at("every_ms"), "only " + kind_nouns([](const FaultKind& x) { return !x.no_repeat; }) + " repeats (" + k.no_repeat + ")");
    if (s.at_ms && *s.at_ms >= *s.until_ms)
        f.fail(f.at("at_ms"), "the first occurrence must come before until_ms (" + std::to_string(*s.until_ms) + ")");
    if (s.node && s.target != FaultSpec::Target::named) f.fail(f.at("client"), "a fault on a node aims at no client");
}

// "until": "another-enters" with "max_ms": a gate at a point, or a pause or a link fault
// with a duration, that ends only once another client has entered a section (at most max_ms).
// "until": "leader" with "max_ms": a gate that holds until a server of the service leads.
void parse_until(Fields& f, FaultSpec& s, const WorkloadSpec& w, const FaultKind& k) {
    if (!f.get("until")) {
        if (f.get("max_ms")) f.fail(f.at("max_ms"), "only a fault with \"until\" has a max_ms");
        if (f.get("lease_live")) f.fail(f.at("lease_live"), "only a fault with \"until\" waits for another to enter");
        if (f.get("taken_first")) f.fail(f.at("taken_first"), "only a fault with \"until\" waits for another to enter");
        if (f.get("keep_holder_ms")) {  // kept after the fault's end: the first to enter then
            if (!k.lasts || !f.get("duration_ms") || s.repeats())
                f.fail(f.at("keep_holder_ms"), "only a fault with \"until\", or one that lasts duration_ms once, has a holder to keep");
            s.keep_holder_ms = f.integer("keep_holder_ms", 0, 1, w.duration_ms, run_ends(w));
        }
        return;
    }
    const std::string until = f.string("until", "");
    if (until == "leader") {
        if (!k.waits_for_leader)
            f.fail(f.at("until"), "only " + kind_nouns([](const FaultKind& x) { return x.waits_for_leader; }) + " waits until a server leads");
        for (const char* field : {"lease_live", "taken_first", "keep_holder_ms", "client", "count", "stagger_ms"})
            if (f.get(field)) f.fail(f.at(field), "a gate until a leader holds whichever client reaches its point first");
        s.until_leader = true;
        if (!f.get("max_ms")) f.fail(f.at("max_ms"), "required with \"until\": the longest the gate holds");
        s.max_ms = f.integer("max_ms", 0, 1, w.duration_ms, run_ends(w));
        return;
    }
    if (until != "another-enters")
        f.fail(f.at("until"), "expected \"another-enters\" or \"leader\", got " + quoted_excerpt(until));
    if (!k.waits_for_another)
        f.fail(f.at("until"), "only " + kind_nouns([](const FaultKind& x) { return x.waits_for_another; }) + " lasts until another client enters");
    if (s.repeats()) f.fail(f.at("until"), "a repeating fault ends by its own drawn length, not \"until\"");
    s.until_another_enters = true;
    s.lease_live = f.value<bool>("lease_live", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    s.taken_first = f.value<bool>("taken_first", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    if (!f.get("max_ms")) f.fail(f.at("max_ms"), "required with \"until\": the longest the fault lasts");
    s.max_ms = f.integer("max_ms", 0, 1, w.duration_ms, run_ends(w));
    if (f.get("keep_holder_ms")) {
        if (!f.get("client")) f.fail(f.at("client"), "required with \"keep_holder_ms\": the client whose acquire the holder waits for");
        s.keep_holder_ms = f.integer("keep_holder_ms", 0, 1, w.duration_ms, run_ends(w));
    }
    if (k.lasts && f.get("duration_ms") && f.get("duration_ms")->is_number_integer() && f.get("duration_ms")->get<long long>() > s.max_ms)
        f.fail(f.at("max_ms"), "expected at least duration_ms (" + std::to_string(f.get("duration_ms")->get<long long>()) + ")");
}

const FaultKind& parse_kind(Fields& f) {
    const std::string name = f.required_string("fault");
    if (const FaultKind* k = find_fault_kind(name)) return *k;
    std::string names;
    for (const FaultKind* k : fault_kinds()) names += std::string(names.empty() ? "" : ", ") + "\"" + k->name + "\"";
    f.fail(f.at("fault"), "expected one of " + names + ", got " + quoted_excerpt(name));
}

// A field another kind reads and this one does not: which kinds read it.
void check_own_fields(Fields& f, const nlohmann::json& j, const FaultKind& k) {
    for (const auto& [key, _] : j.items()) {
        if (std::ranges::find_if(k.own_fields, [&](const char* x) { return key == x; }) != k.own_fields.end()) continue;
        std::string owners;
        for (const FaultKind* other : fault_kinds())
            if (std::ranges::find_if(other->own_fields, [&](const char* x) { return key == x; }) != other->own_fields.end())
                owners += std::string(owners.empty() ? "" : " or ") + other->noun;
        if (!owners.empty()) f.fail(f.at(key), "only " + owners + " has it; this is " + k.noun);
    }
    if (j.contains("node") && !k.aims_at_node && !k.reads_node)
        f.fail(f.at("node"), "only " + kind_nouns([](const FaultKind& x) { return x.aims_at_node || x.reads_node; }) + " aims at a node");
    if (j.contains("duration_ms") && !k.lasts)
        f.fail(f.at("duration_ms"), "only " + kind_nouns([](const FaultKind& x) { return x.lasts; }) + " lasts a duration");
}

FaultSpec parse_fault(const nlohmann::json& j, const std::string& path, const std::string& file,
                      const WorkloadSpec& w) {
    Fields f(j, path, file);
    FaultSpec s;
    const FaultKind& k = parse_kind(f);
    s.kind = k.kind;
    check_own_fields(f, j, k);
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
        const bool has_target = f.get("client") || f.get("node") || k.reads_node;
        if (!has_target) f.fail(f.at("client"), std::string("required with ") + (s.repeats() ? "every_ms" : "at_ms") + ": which client");
    }
    if (f.get("client") && s.target == FaultSpec::Target::named) {
        s.client = static_cast<int>(
            f.integer("client", 0, 0, w.clients - 1, "no such client: the workload has " + std::to_string(w.clients)));
    }
    parse_until(f, s, w, k);
    if (k.aims_at_node && f.get("node")) s.node = parse_fault_node(f);
    if (k.parse) k.parse(f, s, w, path);
    check_repeat(f, s, k);
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
