#include "sim/harness/compose.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "analysis/metrics.h"
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace fs = std::filesystem;

namespace lockbench {

namespace {

using Json = nlohmann::json;
using scenario_parse::parse_faults;
using scenario_parse::parse_workload;

// ---- the lock's time: the TTL it takes, and how far the case's durations stretch --------------

// The TTL `lock` runs a case written for `ttl_ms` with: the case's, raised to the lock's least
// TTL and, for a lock that takes whole seconds, to the next whole second.
long long lock_ttl_ms(const LockFile& lock, long long ttl_ms) {
    long long t = std::max(ttl_ms, lock.min_ttl_ms);
    if (lock.whole_seconds) t = (t + 999) / 1000 * 1000;
    return t;
}

// Every duration field a case, its faults and its renewal may hold, scaled by k.
Json scaled(const Json& v, double k) {
    if (v.is_number_integer()) return static_cast<long long>(std::llround(static_cast<double>(v.get<long long>()) * k));
    if (v.is_number()) return std::round(v.get<double>() * k * 1000.0) / 1000.0;
    if (v.is_object() && v.size() == 1) {   // a distribution: {"fixed": MS}, {"uniform": [A, B]}, {"exponential": MEAN}
        Json out = v;
        for (auto& [kind, x] : out.items()) {
            if (x.is_array())
                for (auto& e : x) e = scaled(e, k);
            else
                x = scaled(x, k);
        }
        return out;
    }
    return v;
}

void scale_fields(Json& j, std::initializer_list<const char*> fields, double k) {
    for (const char* f : fields)
        if (j.contains(f)) j[f] = scaled(j[f], k);
}

Json scaled_workload(Json w, double k) {
    scale_fields(w, {"duration_ms", "start_stagger_ms", "work_ms", "retry_ms", "think_ms"}, k);
    if (w.contains("start_after")) scale_fields(w["start_after"], {"max_ms"}, k);
    if (w.contains("slow")) scale_fields(w["slow"], {"work_ms"}, k);
    return w;
}

// "<= 600" → "<= 2000" for a metric in milliseconds.
std::string scaled_comparison(const std::string& metric, const std::string& comparison, double k) {
    if (k == 1 || !metric.ends_with("_ms")) return comparison;
    std::istringstream in(comparison);
    std::string op;
    double value = 0;
    in >> op >> value;
    std::ostringstream out;
    out << op << ' ' << std::llround(value * k);
    return out.str();
}

// ---- what a cell expects ----------------------------------------------------------------------

// Adds `more` to `into`; a metric given two different comparisons is the case file's mistake.
void add_expect(Json& into, const Json& more, double k, const CaseFile& c, const LockFile& lock) {
    for (const auto& [metric, cmp] : more.items()) {
        const Json value = metric == "verdict" ? cmp : Json(scaled_comparison(metric, cmp.get<std::string>(), k));
        if (into.contains(metric) && into.at(metric) != value)
            throw ScenarioError(c.path + ": for " + lock.label() + " the case expects " + metric + " " +
                                into.at(metric).dump() + " and " + value.dump() + ": state its predictions so that "
                                "no lock matches two that disagree");
        into[metric] = value;
    }
}

// The variant's predictions (the case's, unless it gives its own) whose "when" the lock's facts
// match, the store's check as the variant sets it where it does (a variant that checks nothing
// is not a lock whose token the store checks).
std::vector<const PredictRule*> matching_rules(const CaseVariant& v, const LockFile& lock) {
    Json facts = lock_facts(lock);
    if (v.resource_check) {
        facts["resource_check"] = *v.resource_check;
        facts["fence"] = *v.resource_check == "token" || (*v.resource_check == "fence" && lock.fenced());
    }
    std::vector<const PredictRule*> out;
    for (const PredictRule& r : v.predict)
        if (matches(r.when, facts)) out.push_back(&r);
    return out;
}

Json cell_expect(const CaseFile& c, const CaseVariant& v, const LockFile& lock, double k, Expectations which) {
    Json expect = Json::object();
    add_expect(expect, v.expect, k, c, lock);
    const std::vector<const PredictRule*> rules =
        which == Expectations::with_predictions ? matching_rules(v, lock) : std::vector<const PredictRule*>{};
    // One verdict: the lock's own record for this case (or its class) stands over the case's
    // prediction, and with it over the figures of a prediction whose verdict it overrides (a
    // rule's figures describe its verdict); "any" checks no verdict and none of those figures.
    const RecordedOutcome* recorded = recorded_outcome(lock, c.name, v.name, c.failure_class);
    for (const PredictRule* r : rules) {
        const bool overridden = recorded && r->verdict && (!recorded->verdict || *recorded->verdict != *r->verdict);
        if (!overridden) add_expect(expect, r->expect, k, c, lock);
    }
    if (recorded) {
        if (recorded->verdict) expect["verdict"] = verdict_word(*recorded->verdict);
        else expect.erase("verdict");
        return expect;
    }
    for (const PredictRule* r : rules)
        if (r->verdict) {
            expect["verdict"] = verdict_word(*r->verdict);
            break;
        }
    return expect;
}

// ---- whether a cell exists --------------------------------------------------------------------

int cell_nodes(const CaseFile& c, const LockFile& lock) {
    return replicated(lock.service) && c.ensemble > 0 ? c.ensemble : lock.nodes;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

std::string services_text(const std::vector<Service>& services) {
    std::vector<std::string> names;
    for (Service s : services) names.emplace_back(service_name(s));
    return or_list(names);
}

// The case's own workload, parsed (its faults' bounds depend on it).
WorkloadSpec case_workload(const CaseFile& c) {
    return c.source.contains("workload") ? parse_workload(c.source.at("workload"), c.path) : WorkloadSpec{};
}

// A renewal policy that renews within the run (one whose period outlasts it only makes the
// holder abandon a lease the lock says it lost).
bool renews_within_run(const RenewSpec& r, const WorkloadSpec& w) {
    return r.period_ms() < static_cast<double>(w.duration_ms);
}

std::optional<std::string> why_not_by_needs(const CaseFile& c, const LockFile& lock, LockChoice choice) {
    if (!c.about.empty() && std::ranges::find(c.about, lock.name) == c.about.end())
        return "about " + join(c.about) + " only (a case that names the locks it is about)";
    if (choice == LockChoice::catalog && lock.joins == Joins::none)
        return "joins no case of the catalog (\"joins\": \"none\"): its verdict runs it";
    if (choice == LockChoice::catalog && lock.joins == Joins::named && std::ranges::find(c.about, lock.name) == c.about.end())
        return "joins only the cases that name it (\"joins\": \"named\")";
    const CaseNeeds& n = c.needs;
    if (!n.services.empty() && std::ranges::find(n.services, lock.service) == n.services.end())
        return "needs a lock on " + services_text(n.services) + "; " + lock.name + " locks on " + service_name(lock.service);
    if (n.nodes && cell_nodes(c, lock) != *n.nodes)
        return "needs " + std::to_string(*n.nodes) + (*n.nodes == 1 ? " lock node" : " lock nodes") + "; " + lock.name +
               " runs on " + std::to_string(cell_nodes(c, lock));
    if (n.sentinel && !lock.sentinel)
        return "needs a lock that finds its master through Sentinel; " + lock.name + " cannot";
    if (n.lone_node && lock.needs_replica)
        return "needs a lock on lone nodes; " + lock.name + " runs on a master with a replica, followed through Sentinel";
    if (n.fence && !lock.fenced())
        return "needs a fencing token the store checks; " + lock.name + " has none checked";
    if (n.unreplicated && lock.offers.replicated)
        return "needs a lock the master grants alone; " + lock.name +
               " waits for a replica to acknowledge (WAIT), which the case holds back: it grants nothing for a failover to lose";
    if (n.takes_first && lock.offers.asks_first)
        return "needs a lock whose acquire's first request takes it; " + lock.name +
               " asks first (offers.asks_first: it writes only once a first request is answered), so holding its first answer holds no grant";
    return std::nullopt;
}

std::optional<std::string> why_not_by_faults(const CaseFile& c, const CaseVariant& v, const std::vector<FaultSpec>& faults,
                                              const LockFile& lock, const WorkloadSpec& w) {
    const int nodes = cell_nodes(c, lock);
    const std::vector<std::string> points = points_reached(*lock.algorithm, lock.params);
    if (w.start_after && std::ranges::find(points, point_name(w.start_after->point)) == points.end())
        return std::string("starts the others once client ") + std::to_string(w.start_after->client) + " reaches " +
               point_name(w.start_after->point) + ", which " + lock.name + " never passes";
    for (const FaultSpec& f : faults) {
        if (f.point && std::ranges::find(points, point_name(*f.point)) == points.end())
            return std::string("arms a fault at ") + point_name(*f.point) + ", which " + lock.name + " never passes";
        if (f.node && *f.node >= nodes)
            return "strikes lock node " + std::to_string(*f.node) + "; " + lock.name + " has " + std::to_string(nodes);
        for (int n : f.link_nodes)
            if (n >= nodes) return "cuts lock node " + std::to_string(n) + "; " + lock.name + " has " + std::to_string(nodes);
        if (f.node && *f.node < 0 && !service_info(lock.service).has_leader)
            return std::string("strikes a server by its role (leader, follower), which ") + service_info(lock.service).plural +
                   " do not have";
        if (const FaultKind& k = fault_kind(f.kind); k.why_not)
            if (auto why = k.why_not(f, FaultLanding{lock.service, lock.sentinel, nodes,
                                                      parse_persistence(v.persistence.value_or("none")).value_or(Persistence::none)}))
                return why;
    }
    return std::nullopt;
}

std::optional<std::string> why_not_by_policy(const CaseFile& c, const CaseVariant& v,
                                              const std::vector<FaultSpec>& faults, const LockFile& lock,
                                              const WorkloadSpec& w) {
    const auto renewing = [&](const std::optional<Json>& policy) {
        return policy && renews_within_run(scenario_parse::parse_renew(*policy, "renew", c.path), w);
    };
    // The case's renewal (the application's), for a lock that does not renew on its own.
    if (renewing(v.renew)) {
        if (lock.offers.renews) return "renews its lease on its own; the case's renewal (the application's) would double it";
        const std::string mode = scenario_parse::parse_renew(*v.renew, "renew", c.path).replace ? "replace" : "add";
        if (std::ranges::find(lock.offers.extend, mode) == lock.offers.extend.end())
            return "renews by " + mode + "; " + lock.name + " cannot (its extend: " +
                   (lock.offers.extend.empty() ? std::string("none") : join(lock.offers.extend)) + ")";
    }
    const bool watchdog = lock.algorithm->background_task && lock.algorithm->background_task(lock.params);
    const bool background = renewing(v.renew) || renewing(lock.renew) || watchdog;
    if (std::ranges::any_of(faults, &FaultSpec::background) && !background)
        return "pauses a client's background renewal alone; " + lock.name + " has none lockbench runs";
    if (v.resource_check == "token" && lock.algorithm->one_token_per_client)  // a lock's own "token" is refused when parsed
        return "the store checks the lock's token, the same for every lease of one client in " + lock.algorithm->name;
    if (v.persistence && *v.persistence != "none" && !service_info(lock.service).node_options)
        return "sets a " + services_with(&ServiceInfo::node_options, false) + " node's persistence; " + lock.name + " is on " +
               service_name(lock.service);
    if (v.server_settings && !service_info(lock.service).server_settings)
        return "sets a " + services_with(&ServiceInfo::server_settings, false) + " server's settings; " + lock.name + " is on " +
               service_name(lock.service);
    return std::nullopt;
}

// ---- the run a cell makes ---------------------------------------------------------------------

Json cell_params(const CaseFile& c, const LockFile& lock, long long ttl_ms, double k) {
    Json params = lock.params;
    params[lock.ttl_param] = ttl_ms;
    for (const auto& [name, v] : c.params.items())   // a duration the case sets, for a lock that has it
        if (std::ranges::any_of(lock.algorithm->params, [&](const ParamSpec& p) { return p.name == name; }))
            params[name] = scaled(v, k);
    if (c.probe_key_ttl && lock.algorithm == &external_algorithm()) params["probe_key_ttl"] = true;
    return params;
}

Json cell_run(const CaseFile& c, const CaseVariant& v, const LockFile& lock, Expectations which) {
    const long long ttl = v.ttl_ms.value_or(c.ttl_ms);
    const long long own_ttl = lock_ttl_ms(lock, ttl);
    const double k = c.scale_durations ? static_cast<double>(own_ttl) / static_cast<double>(ttl) : 1.0;
    Json run = {{"name", run_name(lock.name, v.name)},
                {"lock", lock.name},
                {"lock_file", lock.path},
                {"algorithm", lock.algorithm->name},
                {"params", cell_params(c, lock, own_ttl, k)},
                {"service", service_name(lock.service)},
                {"nodes", cell_nodes(c, lock)},
                {"faults", scaled_faults(with_node_roles(v.faults.value_or(Json::array()), cell_nodes(c, lock)), k)},
                {"expect", cell_expect(c, v, lock, k, which)}};
    if (!v.name.empty()) run["variant"] = v.name;
    if (!lock.command.empty()) {
        run["command"] = lock.command;
        run["cwd"] = lock.dir.string();
    }
    if (c.needs.sentinel || lock.needs_replica) run["topology"] = "sentinel";
    if (v.persistence) run["persistence"] = *v.persistence;
    if (v.server_settings && service_info(lock.service).server_settings) run["server_settings"] = *v.server_settings;
    if (!lock.pgbouncer.empty()) run["pgbouncer"] = lock.pgbouncer;
    if (!lock.server.empty()) run["server"] = lock.server.string();
    if (lock.check_lease_before_write) run["check_lease_before_write"] = true;
    if (const std::optional<Json>& policy = v.renew ? v.renew : lock.renew) {
        Json renew = *policy;
        scale_fields(renew, {"every_ms", "ttl_ms"}, k);
        run["renew"] = renew;
    }
    if (v.resource_check) run["resource_check"] = *v.resource_check;  // the case's, over the lock's
    else if (lock.token_checked) run["resource_check"] = "token";
    if (k != 1) {   // the case in the lock's time
        run["workload"] = scaled_workload(c.source.value("workload", Json::object()), k);
        Json client = c.source.value("client", Json::object());
        scale_fields(client, {"command_timeout_ms", "connect_timeout_ms", "store_timeout_ms"}, k);
        if (!client.empty() || c.source.contains("client")) run["client"] = client;
        else run["client"] = {{"command_timeout_ms", std::llround(200 * k)}, {"connect_timeout_ms", std::llround(200 * k)},
                              {"store_timeout_ms", std::llround(1000 * k)}};
    }
    return run;
}

// The explicit scenario's own fields: the case's, without what only a case has.
Json scenario_head(const CaseFile& c) {
    Json s = Json::object();
    for (const char* key : {"name", "description", "failure_class", "seed", "lock_key", "base_port", "client", "workload", "explore", "alone"})
        if (c.source.contains(key)) s[key] = c.source.at(key);
    s["runs"] = Json::array();
    return s;
}

bool names_file(const std::string& asked) {
    return asked.ends_with(".json") || asked.find('/') != std::string::npos;
}

}  // namespace

// The durations every fault may hold, then its kind's own (fault_kind.h).
Json scaled_faults(Json faults, double k) {
    for (Json& f : faults) {
        scale_fields(f, {"at_ms", "duration_ms", "every_ms", "until_ms", "max_ms", "keep_holder_ms"}, k);
        const FaultKind* kind = f.is_object() && f.contains("fault") && f.at("fault").is_string()
                                    ? find_fault_kind(f.at("fault").get<std::string>()) : nullptr;
        if (kind)
            for (const char* field : kind->lease_scaled)
                if (f.contains(field)) f[field] = scaled(f[field], k);
    }
    return faults;
}

std::optional<std::string> why_not(const CaseFile& c, const CaseVariant& v, const LockFile& lock, LockChoice choice) {
    const WorkloadSpec w = case_workload(c);
    if (auto why = why_not_by_needs(c, lock, choice)) return why;
    // The variant's faults, as they fall on this lock's nodes (a role names a server), parsed once.
    const int nodes = cell_nodes(c, lock);
    if (auto why = node_roles_why_not(v.faults.value_or(Json::array()), nodes)) return why;
    const std::vector<FaultSpec> faults =
        parse_faults(with_node_roles(v.faults.value_or(Json::array()), nodes), "faults", c.path, w);
    if (auto why = why_not_by_faults(c, v, faults, lock, w)) return why;
    return why_not_by_policy(c, v, faults, lock, w);
}

Composed compose(const CaseFile& c, const std::vector<LockFile>& locks, LockChoice choice, Expectations which) {
    Composed out;
    Json source = scenario_head(c);
    for (const CaseVariant& v : c.variants)
        for (const LockFile& lock : locks) {
            if (const auto why = why_not(c, v, lock, choice)) {
                out.not_applicable.push_back({c.name, v.name, c.failure_class, lock.name, *why});
                continue;
            }
            source["runs"].push_back(cell_run(c, v, lock, which));
        }
    if (source.at("runs").empty()) {  // no cell: nothing to parse ("runs": [] is refused by the parser)
        out.scenario.name = c.name;
        out.scenario.path = c.path;
        out.scenario.source = std::move(source);
    } else {
        out.scenario = parse_scenario(source, c.path);
    }
    return out;
}

std::optional<std::pair<Verdict, std::string>> predicted_verdict(const CaseVariant& v, const LockFile& lock) {
    for (const PredictRule* r : matching_rules(v, lock))
        if (r->verdict) return std::pair{*r->verdict, r->why};
    return std::nullopt;
}

Json lock_run(const LockFile& lock, long long ttl_ms, int clients) {
    CaseFile alone;
    alone.name = "alone";
    alone.path = lock.path;
    alone.ttl_ms = ttl_ms;
    alone.source = {{"workload", {{"clients", clients}}}};
    alone.variants.emplace_back();
    Json run = cell_run(alone, alone.variants.front(), lock, Expectations::record_only);
    run.erase("expect");
    return run;
}

Scenario scenario_from_source(const Json& source, const std::string& file, const std::vector<LockFile>& locks,
                              LockChoice choice, std::vector<NotApplicable>* not_applicable) {
    if (!is_case_file(source)) return parse_scenario(source, file);
    Composed composed = compose(parse_case_file(source, file), locks, choice);
    if (not_applicable)
        not_applicable->insert(not_applicable->end(), composed.not_applicable.begin(), composed.not_applicable.end());
    return std::move(composed.scenario);
}

Scenario scenario_for_file(const fs::path& file, const std::vector<LockFile>& locks, LockChoice choice,
                           std::vector<NotApplicable>* not_applicable) {
    const Json read = read_input_json(file);
    Scenario s = scenario_from_source(read, file.string(), locks, choice, not_applicable);
    // A scenario file's "runs": [] is its own field's fault (parse_scenario names it); a case's
    // empty runs are the locks it does not apply to.
    if (s.runs.empty())
        throw ScenarioError(file.string() + ": applies to none of the locks asked for" +
                            (not_applicable && !not_applicable->empty() ? " (" + not_applicable->front().lock + ": " +
                                                                               not_applicable->front().why + ")"
                                                                         : std::string()));
    return s;
}

LockSelection select_locks(const fs::path& locks_dir, const std::vector<std::string>& asked) {
    if (asked.empty()) {
        if (!fs::is_directory(locks_dir)) throw ScenarioError(locks_dir.string() + ": no locks folder; name lock files with --lock");
        return {load_lock_folder(locks_dir), LockChoice::catalog};
    }
    LockSelection out{{}, LockChoice::asked};
    std::set<std::string> names;
    for (const std::string& a : asked) {
        const fs::path file = names_file(a) ? fs::path(a) : locks_dir / (a + ".json");
        if (!names_file(a) && !fs::exists(file)) {
            // The names that look alike (one holding the other, or the same first word), not
            // all 55: `lockbench list` names them all.
            std::vector<std::string> like;
            std::size_t known = 0;
            const std::string word = a.substr(0, a.find_first_of("-+"));
            if (fs::is_directory(locks_dir))
                for (const LockFile& l : load_lock_folder(locks_dir)) {
                    ++known;
                    const bool alike = l.name.find(a) != std::string::npos || a.find(l.name) != std::string::npos ||
                                       (word.size() >= 3 && l.name.starts_with(word));
                    if (alike && like.size() < 8) like.push_back(l.name);
                }
            throw ScenarioError("--lock " + excerpt_text(a) + ": no lock of that name in " + locks_dir.string() +
                                (like.empty() ? std::string() : " (like it: " + join(like) + ")") + "; `lockbench list` names all " +
                                std::to_string(known) + "; give a lock file's path to run one of your own");
        }
        LockFile lock = load_lock_file(file);
        if (!names.insert(lock.name).second) continue;
        out.locks.push_back(std::move(lock));
    }
    return out;
}

void check_recorded_keys(const std::vector<LockFile>& locks, const std::vector<CaseFile>& cases) {
    std::set<std::string> known(failure_classes().begin(), failure_classes().end());
    for (const CaseFile& c : cases) {
        known.insert(c.name);
        for (const CaseVariant& v : c.variants)
            known.insert(variant_label(c.name, v.name));
    }
    for (const LockFile& lock : locks)
        for (const auto& [key, _] : lock.expected)
            if (!known.contains(key))
                throw ScenarioError(lock.path + ": expected." + key + ": names no failure class, case or case variant "
                                    "of the catalog");
}

}  // namespace lockbench
