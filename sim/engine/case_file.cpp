#include "sim/engine/case_file.h"

#include <algorithm>
#include <set>

#include "analysis/metrics.h"
#include "sim/engine/persistence.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {

using namespace scenario_parse;

namespace {

using Json = nlohmann::json;

// The facts a "when" may name (lock_file.h: lock_facts), and the values the enumerated ones take.
const std::vector<std::string>& fact_names() {
    static const std::vector<std::string> names{"fence", "fencing", "renews", "extend", "release", "expiry",
                                                "checks_elapsed", "validity", "replicated", "asks_first", "service", "nodes", "sentinel",
                                                "pgbouncer", "check_lease_before_write", "resource_check", "algorithm", "lock"};
    return names;
}

void check_when_value(Fields& f, const std::string& key, const Json& v) {
    static const std::map<std::string, std::vector<std::string>> choices{
        {"release", {"token", "plain", "client-clock"}},
        {"expiry", {"server", "client"}},
        {"service", service_names()},
        {"extend", {"add", "replace"}},
        {"pgbouncer", {"", "transaction", "session"}},
        {"resource_check", {"none", "fence", "token"}}};
    const auto one = [&](const Json& x) {
        if (!x.is_primitive() || x.is_null()) f.fail(f.at(key), "expected a value or an array of values, got " + excerpt(v));
        const auto it = choices.find(key);
        if (it != choices.end() && (!x.is_string() || std::ranges::find(it->second, x.get<std::string>()) == it->second.end()))
            f.fail(f.at(key), "no lock has " + key + " " + excerpt(x));
    };
    if (v.is_array()) {
        if (v.empty()) f.fail(f.at(key), "an empty array matches no lock");
        for (const Json& x : v) one(x);
    } else {
        one(v);
    }
}

Json parse_when(const Json& j, const std::string& path, const std::string& file, const std::vector<std::string>& about) {
    Fields f(j, path, file, Fields::Keys::names);
    for (const auto& [key, v] : j.items()) {
        f.get(key);
        const bool param = key.starts_with("params.") && key.size() > 7;
        if (!param && std::ranges::find(fact_names(), key) == fact_names().end()) {
            std::string list;
            for (const auto& n : fact_names()) list += (list.empty() ? "" : ", ") + n;
            f.fail(f.at(key), "not a fact of a lock (known: " + list + ", params.NAME)");
        }
        if (key == "lock") {
            // Only a case about some locks names them, and only those.
            const auto named = v.is_array() ? v : Json::array({v});
            for (const Json& n : named)
                if (!n.is_string() || std::ranges::find(about, n.get<std::string>()) == about.end())
                    f.fail(f.at(key), "a prediction names a lock only in a case about it: give the case \"about\": [" +
                                      excerpt(n) + "] (a known bug of that library), or state the prediction by what "
                                      "locks offer");
        }
        check_when_value(f, key, v);
    }
    f.finish();
    return j;
}

Json parse_expect_object(const Json& j, const std::string& path, const std::string& file) {
    Fields e(j, path, file, Fields::Keys::names);
    for (const auto& [metric, v] : j.items()) {
        e.get(metric);
        parse_expectation(metric, v, e.at(metric), file);
    }
    e.finish();
    return j;
}

std::vector<PredictRule> parse_predict(const Json& j, const std::string& path, const std::string& file,
                                       const std::vector<std::string>& about) {
    if (!j.is_array()) throw ScenarioError(file + ": " + path + ": expected an array of predictions, got " + excerpt(j));
    std::vector<PredictRule> rules;
    for (size_t i = 0; i < j.size(); ++i) {
        Fields f(j[i], path + "[" + std::to_string(i) + "]", file);
        PredictRule r;
        if (const Json* when = f.get("when")) r.when = parse_when(*when, f.at("when"), file, about);
        if (const Json* v = f.get("verdict")) {
            if (!v->is_string() || !parse_verdict(v->get<std::string>()))
                f.fail(f.at("verdict"), "expected one of " + verdict_word_list() + ", got " + excerpt(*v));
            r.verdict = parse_verdict(v->get<std::string>());
        }
        if (const Json* e = f.get("expect")) r.expect = parse_expect_object(*e, f.at("expect"), file);
        r.why = f.string("why", "");
        if (!r.verdict && r.expect.empty()) f.fail(f.at("verdict"), "a prediction gives a verdict, figures (\"expect\"), or both");
        f.finish();
        rules.push_back(std::move(r));
    }
    return rules;
}

CaseNeeds parse_needs(const Json& j, const std::string& file) {
    Fields f(j, "needs", file);
    CaseNeeds n;
    if (const Json* s = f.get("service")) {
        const Json names = s->is_array() ? *s : Json::array({*s});
        for (const Json& x : names) {
            const auto service = x.is_string() ? parse_service(x.get<std::string>()) : std::nullopt;
            if (!service)
                f.fail(f.at("service"), "expected a service (" + services_with(nullptr) + ") or an array of them, got " + excerpt(x));
            n.services.push_back(*service);
        }
    }
    if (f.get("nodes")) n.nodes = static_cast<int>(f.integer("nodes", 1, 1, kMaxNodes));
    n.sentinel = f.value<bool>("sentinel", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    n.fence = f.value<bool>("fence", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    n.unreplicated = f.value<bool>("unreplicated", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    n.takes_first = f.value<bool>("takes_first", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    if (f.get("topology")) {
        const std::string t = f.string("topology", "plain");
        if (t != "plain") f.fail(f.at("topology"), "expected \"plain\" (a case that needs Sentinel says \"sentinel\": true), got " + quoted_excerpt(t));
        n.lone_node = true;
    }
    f.finish();
    return n;
}

// The settings a variant (or the case for all its variants) may give a run.
void parse_run_settings(Fields& f, CaseVariant& v, const WorkloadSpec& w, const std::string& file,
                        const std::vector<std::string>& about) {
    if (f.get("ttl_ms")) v.ttl_ms = f.integer("ttl_ms", 1, 1, kMaxDurationMs);
    if (const Json* faults = f.get("faults")) {
        parse_faults(with_node_roles(*faults, 5), f.at("faults"), file, w);  // roles checked as on five nodes
        v.faults = *faults;
    }
    if (const Json* renew = f.get("renew")) {
        parse_renew(*renew, f.at("renew"), file);
        v.renew = *renew;
    }
    if (f.get("resource_check")) {
        const std::string check = f.string("resource_check", "fence");
        if (!parse_resource_check(check))
            f.fail(f.at("resource_check"), "expected \"none\", \"fence\" or \"token\", got " + quoted_excerpt(check));
        v.resource_check = check;
    }
    if (f.get("persistence")) {
        const std::string p = f.string("persistence", "none");
        if (!parse_persistence(p))
            f.fail(f.at("persistence"), "expected none, aof-always or aof-everysec, got " + quoted_excerpt(p));
        v.persistence = p;
    }
    if (const Json* settings = f.get("server_settings")) {
        if (!settings->is_object() || settings->empty() ||
            !std::ranges::all_of(settings->items(), [](const auto& kv) { return kv.value().is_string() || kv.value().is_number_integer(); }))
            f.fail(f.at("server_settings"), "expected an object of a server setting → a string or an integer, got " + excerpt(*settings));
        v.server_settings = *settings;
    }
    if (const Json* e = f.get("expect")) v.expect = parse_expect_object(*e, f.at("expect"), file);
    if (const Json* p = f.get("predict")) v.predict = parse_predict(*p, f.at("predict"), file, about);
}

std::vector<CaseVariant> parse_variants(const Json& j, const WorkloadSpec& w, const std::string& file,
                                        const std::vector<std::string>& about) {
    if (!j.is_array() || j.empty()) throw ScenarioError(file + ": variants: expected a non-empty array, got " + excerpt(j));
    std::vector<CaseVariant> out;
    std::set<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) {
        Fields f(j[i], "variants[" + std::to_string(i) + "]", file);
        CaseVariant v;
        v.name = f.required_string("name");
        check_name(f, f.at("name"), v.name);
        if (!names.insert(v.name).second) f.fail(f.at("name"), quoted_excerpt(v.name) + " is used by an earlier variant");
        v.description = f.string("description", "");
        parse_run_settings(f, v, w, file, about);
        f.finish();
        out.push_back(std::move(v));
    }
    return out;
}

std::vector<std::string> parse_about(Fields& f) {
    const Json* about = f.get("about");
    if (!about) return {};
    if (!about->is_array() || about->empty())
        f.fail(f.at("about"), "expected a non-empty array of lock names, got " + excerpt(*about));
    std::vector<std::string> names;
    for (const Json& n : *about) {
        if (!n.is_string()) f.fail(f.at("about"), "expected lock names, got " + excerpt(n));
        check_name(f, f.at("about"), n.get<std::string>());
        names.push_back(n.get<std::string>());
    }
    return names;
}

Json parse_duration_params(Fields& f) {
    const Json* params = f.get("params");
    if (!params) return Json::object();
    if (!params->is_object()) f.fail(f.at("params"), "expected an object of durations, got " + excerpt(*params));
    for (const auto& [key, v] : params->items()) {
        if (!key.ends_with("_ms"))
            f.fail(f.at("params") + "." + key, "a case sets only durations (parameters ending in _ms); what a lock is "
                                              "made of belongs in its lock file");
        if (!integer_within(v, 0, kMaxDurationMs))
            f.fail(f.at("params") + "." + key, "expected an integer from 0 to " + std::to_string(kMaxDurationMs) + ", got " + excerpt(v));
    }
    return *params;
}

}  // namespace

bool is_case_file(const Json& j) { return j.is_object() && !j.contains("runs"); }

namespace {
// How many of `nodes` a role of a link's "nodes" names; none for what is not a role.
std::optional<int> role_size(const Json& v, int nodes) {
    if (v == "one") return 1;
    if (v == "minority") return (nodes - 1) / 2;
    if (v == "majority") return nodes / 2 + 1;
    return std::nullopt;
}
}  // namespace

Json with_node_roles(const Json& faults, int nodes) {
    if (!faults.is_array()) return faults;
    Json out = faults;
    for (Json& f : out) {
        if (!f.is_object()) continue;
        if (const auto it = f.find("nodes"); it != f.end())
            if (const auto size = role_size(*it, nodes)) {
                Json picked = Json::array();
                for (int n = 0; n < std::max(*size, 1); ++n) picked.push_back(n);
                *it = picked;
            }
        if (const auto it = f.find("node"); it != f.end() && *it == "locked") *it = nodes - 1;
    }
    return out;
}

std::optional<std::string> node_roles_why_not(const Json& faults, int nodes) {
    if (!faults.is_array()) return std::nullopt;
    for (const Json& f : faults)
        if (f.is_object() && f.value("nodes", Json()) == "minority" && nodes < 3)
            return "cuts a minority of the lock nodes; a lock on " + std::to_string(nodes) + " has none to spare";
    return std::nullopt;
}

CaseFile parse_case_file(const Json& j, const std::string& file) {
    Fields f(j, "", file);
    CaseFile c;
    c.path = file;
    c.source = j;
    c.name = f.required_string("name");
    check_name(f, "name", c.name);
    c.description = f.string("description", "");
    c.failure_class = parse_failure_class(f);
    c.remedy = f.string("remedy", "");
    if (!f.get("ttl_ms")) f.fail("ttl_ms", "required: the TTL the case gives every lock, which its durations are written for");
    c.ttl_ms = f.integer("ttl_ms", 1, 1, kMaxDurationMs);
    const std::string scale = f.string("scale", "durations");
    if (scale != "durations" && scale != "ttl") f.fail(f.at("scale"), "expected \"durations\" or \"ttl\", got " + quoted_excerpt(scale));
    c.scale_durations = scale == "durations";
    if (const Json* n = f.get("needs")) c.needs = parse_needs(*n, file);
    if (f.get("ensemble")) {
        c.ensemble = static_cast<int>(f.integer("ensemble", 1, 1, 5));
        if (c.ensemble % 2 == 0) f.fail(f.at("ensemble"), "a " + services_with(&ServiceInfo::consensus, false) + " ensemble has 1, 3 or 5 servers");
    }
    c.about = parse_about(f);
    c.params = parse_duration_params(f);
    c.probe_key_ttl = f.value<bool>("probe_key_ttl", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    c.alone = f.value<bool>("alone", false, [](const Json& x) { return x.is_boolean(); }, "true or false");
    // A case `explore --promote` wrote: where the search found it (kept as written, shown by the report).
    if (const Json* d = f.get("discovered")) {
        if (!d->is_object() || !d->contains("class") || !d->at("class").is_string())
            f.fail(f.at("discovered"), "expected an object with the \"class\" the search found, got " + excerpt(*d));
        c.discovered = *d;
    }
    // What an explicit scenario has too: read the same way (the composed scenario holds them).
    f.integer("seed", 1, 0, kMaxLong);
    f.string("lock_key", "");
    if (f.get("base_port")) f.integer("base_port", 0, 1024, 65000);
    ClientTimeouts timeouts;
    if (const Json* client = f.get("client")) timeouts = parse_client(*client, "client", file, timeouts);
    WorkloadSpec w;
    if (const Json* workload = f.get("workload")) w = parse_workload(*workload, file);
    if (const Json* e = f.get("explore")) parse_explore_fixed(*e, file);
    // The case itself is its first variant, named "".
    CaseVariant base;
    parse_run_settings(f, base, w, file, c.about);
    c.expect = base.expect;
    c.predict = base.predict;
    c.variants.push_back(base);
    if (const Json* variants = f.get("variants")) {
        // The case's settings are every variant's, unless the variant gives its own; a
        // variant's "expect" or "predict", when given, replaces the case's.
        for (CaseVariant v : parse_variants(*variants, w, file, c.about)) {
            if (!v.ttl_ms) v.ttl_ms = base.ttl_ms;
            if (!v.faults) v.faults = base.faults;
            if (!v.renew) v.renew = base.renew;
            if (!v.resource_check) v.resource_check = base.resource_check;
            if (!v.persistence) v.persistence = base.persistence;
            if (!v.server_settings) v.server_settings = base.server_settings;
            const bool own_expect = (*variants)[c.variants.size() - 1].contains("expect");
            const bool own_predict = (*variants)[c.variants.size() - 1].contains("predict");
            if (!own_expect) v.expect = base.expect;
            if (!own_predict) v.predict = base.predict;
            c.variants.push_back(std::move(v));
        }
    }
    f.finish();
    return c;
}

CaseFile load_case_file(const std::filesystem::path& file) {
    return parse_case_file(read_input_json(file), file.string());
}

std::string variant_label(const std::string& case_name, const std::string& variant) {
    return variant.empty() ? case_name : case_name + "+" + variant;
}

std::string run_name(const std::string& lock, const std::string& variant) {
    return variant.empty() ? lock : lock + "@" + variant;
}

bool matches(const Json& when, const Json& facts) {
    for (const auto& [key, want] : when.items()) {
        const Json* have = nullptr;
        if (key.starts_with("params.")) {
            const Json& params = facts.at("params");
            const std::string name = key.substr(7);
            if (!params.contains(name)) return false;
            have = &params.at(name);
        } else {
            have = &facts.at(key);
        }
        const Json wanted = want.is_array() ? want : Json::array({want});
        // An array fact (extend) matches when it holds one of the values.
        const bool hit = std::ranges::any_of(wanted, [&](const Json& w) {
            return have->is_array() ? std::ranges::find(*have, w) != have->end() : *have == w;
        });
        if (!hit) return false;
    }
    return true;
}

}  // namespace lockbench
