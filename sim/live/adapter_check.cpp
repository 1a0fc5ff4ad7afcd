#include "sim/live/adapter_check.h"

#include <algorithm>
#include <optional>

namespace lockbench {
namespace {

using Json = nlohmann::json;

std::string shown(const Json& j) {
    const std::string text = j.dump();
    return text.size() <= 160 ? text : text.substr(0, 157) + "...";
}

// The fields an "ok" answer may hold, each with the protocol's type; a node index names a node.
void check_fields(const std::string& step, const Json& answer, int nodes, std::vector<std::string>& failures) {
    const auto bad = [&](const std::string& what) { failures.push_back(step + ": " + what + " in " + shown(answer)); };
    if (answer.contains("token") && !answer.at("token").is_string()) bad("\"token\" is not a string");
    if (answer.contains("fence") && !answer.at("fence").is_number_integer()) bad("\"fence\" is not an integer");
    if (answer.contains("validity_ms") && !answer.at("validity_ms").is_number()) bad("\"validity_ms\" is not a number");
    // The key the library stored, where it is not lockbench's own: what the TTL probe reads.
    if (answer.contains("key") && !(answer.at("key").is_string() && !answer.at("key").get<std::string>().empty()))
        bad("\"key\" is not a non-empty string");
    for (const char* list : {"nodes", "removed_on"}) {
        if (!answer.contains(list)) continue;
        const Json& v = answer.at(list);
        if (!v.is_array() || !std::ranges::all_of(v, [&](const Json& n) {
                return n.is_number_integer() && n.get<int>() >= 0 && n.get<int>() < nodes;
            }))
            bad(std::string("\"") + list + "\" is not a list of lock node indices (0 to " + std::to_string(nodes - 1) + ")");
    }
}

// One step: the request, and the answer the step wants (ok true or false), or nothing if
// the adapter broke (it is gone: the steps after it cannot run).
std::optional<Json> step(ExternalLock& adapter, const std::string& name, const Json& request, std::optional<bool> want_ok,
                         int nodes, std::vector<std::string>& failures) {
    Json answer;
    try {
        answer = adapter.request(request);
    } catch (const AdapterError& e) {
        failures.push_back(name + ": " + e.what());
        return std::nullopt;
    }
    if (want_ok && answer.at("ok").get<bool>() != *want_ok)
        failures.push_back(name + ": expected {\"ok\": " + (*want_ok ? "true" : "false") + ", ...}, got " + shown(answer));
    if (answer.at("ok").get<bool>()) check_fields(name, answer, nodes, failures);
    else if (!answer.contains("error") || !answer.at("error").is_string())
        failures.push_back(name + ": an {\"ok\": false} answer says why in \"error\" (a string); got " + shown(answer));
    return answer;
}

void check_ready(const std::string& who, const ExternalLock& adapter, const AdapterCheckPlan& plan,
                 std::vector<std::string>& failures) {
    const Json& said = adapter.described();
    for (const char* field : {"library", "algorithm"})
        if (!said.contains(field))
            failures.push_back("ready (" + who + "): no \"" + field + "\" string in its ready line (the library's name "
                               "and installed version; what it does, in one line)");
    if (!said.contains("fencing")) {
        failures.push_back("ready (" + who + "): no \"fencing\" boolean in its ready line");
    } else if (said.at("fencing").get<bool>() != plan.fencing) {
        failures.push_back("ready (" + who + "): says \"fencing\": " + said.at("fencing").dump() +
                           ", the lock file's offers say " + (plan.fencing ? "true" : "false"));
    }
}

// An answer's token where the library stored it: at the key the answer names, or else at
// lockbench's, on a majority of the nodes (a string's value or a hash's field). The servers
// denying it means the answer names the wrong key or token, and the lock server's word on a
// lease (after a refused write) and the TTL probe would read another key. A layout the check
// cannot read (a sorted set's member) or nodes that do not answer say nothing.
void check_token_stored(Env& nodes, const Json& answer, const std::string& our_key, std::vector<std::string>& failures) {
    if (!answer.at("ok").get<bool>() || !answer.contains("token") || !answer.at("token").is_string()) return;
    Lease lease;
    lease.token = answer.at("token").get<std::string>();
    const std::string key = answer.contains("key") && answer.at("key").is_string() ? answer.at("key").get<std::string>() : our_key;
    std::vector<NodeId> every;
    for (int i = 0; i < nodes.node_count(); ++i) every.push_back(NodeId{i});
    if (token_held(nodes, key, lease, every, nodes.node_count() / 2 + 1, std::chrono::seconds(1)) == std::optional(false))
        failures.push_back("acquire (client 0, the lock free): its token " + answer.at("token").dump() + " is not at the key " +
                           key + " on a majority of the nodes; an answer names the key the library stored (\"key\") "
                           "where it is not lockbench's, and the value it stored there (\"token\")");
}

}  // namespace

std::vector<std::string> hold_to_protocol(ExternalLock& a, ExternalLock& b, const AdapterCheckPlan& plan) {
    std::vector<std::string> failures;
    check_ready("client 0", a, plan, failures);
    check_ready("client 1", b, plan, failures);
    const Json acquire = {{"op", "acquire"}, {"key", plan.key}, {"ttl_ms", plan.ttl_ms}, {"wait_ms", 0}};
    const Json release = {{"op", "release"}, {"key", plan.key}};
    const auto first = step(a, "acquire (client 0, the lock free)", acquire, true, plan.nodes, failures);
    if (!first) return failures;
    if (plan.redis_nodes) check_token_stored(*plan.redis_nodes, *first, plan.key, failures);
    const auto both = step(b, "acquire (client 1, while client 0 holds the lock)", acquire,
                           plan.excludes ? std::optional(false) : std::nullopt, plan.nodes, failures);
    if (!both) return failures;
    if (!plan.excludes && both->at("ok").get<bool>()) {
        failures.push_back(std::string(kFindingPrefix) + "client 1 got the lock while client 0 held it (" + shown(*both) +
                           "): this lock does not exclude here; its verdict shows how often");
        if (!step(b, "release (client 1, which got it too)", release, std::nullopt, plan.nodes, failures)) return failures;
        if (!step(a, "release (client 0)", release, std::nullopt, plan.nodes, failures)) return failures;
    } else if (!step(a, "release (client 0)", release, true, plan.nodes, failures)) {
        return failures;
    }
    const auto second = step(b, "acquire (client 1, the lock free again)", acquire, true, plan.nodes, failures);
    if (!second) return failures;
    if (plan.fencing) {
        const bool both = first->contains("fence") && second->contains("fence") && first->at("fence").is_number_integer() &&
                          second->at("fence").is_number_integer();
        if (!both)
            failures.push_back("fence: the lock file says it hands out fencing tokens, but an acquire answered none");
        else if (second->at("fence").get<long long>() <= first->at("fence").get<long long>())
            failures.push_back("fence: the second holder's token " + second->at("fence").dump() + " is not above the first's " +
                               first->at("fence").dump());
    }
    for (const std::string& mode : plan.extend) {
        const Json extend = {{"op", "extend"}, {"key", plan.key}, {"ttl_ms", plan.ttl_ms}, {"replace", mode == "replace"}};
        if (!step(b, "extend (client 1, " + mode + ", as its lock file offers)", extend, true, plan.nodes, failures))
            return failures;
    }
    if (!step(b, "an unknown op", {{"op", "lockbench-adapter-check"}, {"key", plan.key}}, false, plan.nodes, failures))
        return failures;
    if (!step(b, "release (client 1)", release, true, plan.nodes, failures)) return failures;
    // A kept adapter's resets (docs/adapters.md): at a run's end, then for another run. One that
    // cannot reset says so ({"ok": false}) and is started anew for every run; one that can must
    // then serve the next run as it served this one.
    const auto closed = step(b, "reset (client 1, at its run's end)", {{"op", "reset"}}, std::nullopt, plan.nodes, failures);
    if (!closed || !closed->at("ok").get<bool>()) return failures;
    const auto again = step(b, "reset (client 1, for another run)", {{"op", "reset"}, {"env", b.environment()}}, true,
                            plan.nodes, failures);
    if (!again || !again->at("ok").get<bool>()) return failures;
    if (again->value("library", std::string()) != b.described().value("library", std::string()))
        failures.push_back("reset (client 1, for another run): its answer names the library " +
                           again->value("library", std::string("(none)")) + ", its ready line " +
                           b.described().value("library", std::string("(none)")));
    if (!step(b, "acquire (client 1, after its reset)", acquire, true, plan.nodes, failures)) return failures;
    step(b, "release (client 1, after its reset)", release, true, plan.nodes, failures);
    return failures;
}

}  // namespace lockbench
