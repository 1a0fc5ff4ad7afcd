#include "sim/engine/scenario.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/metrics.h"
#include "analysis/verdict.h"
#include "sim/engine/fault_kind.h"
#include "sim/engine/json_input.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {

const AlgorithmInfo& external_algorithm() {
    static const AlgorithmInfo info{
        "external",
        "a third-party lock library in an adapter process (adapters/, docs/adapters.md)",
        1,
        {{"ttl_ms", ParamSpec::Type::integer, 500, "the lease asked of the library", {}, 1},
         {"fence", ParamSpec::Type::boolean, false, "the store checks the library's fencing token (its answer's fence)"},
         {"probe_key_ttl", ParamSpec::Type::boolean, false,
          "after each acquire the client reads the key's PTTL on the nodes the adapter named (history: key_ttl_ms)"}},
        // Any other parameter is the library's own, passed to the adapter as given (LOCKBENCH_PARAMS).
        nullptr};
    return info;
}

std::vector<std::string> points_reached(const AlgorithmInfo& algorithm, const nlohmann::json& params) {
    std::vector<std::string> p{"before_acquire"};
    if (algorithm.acquire_points)
        for (Point own : algorithm.acquire_points(params)) p.push_back(point_name(own));
    for (const char* later : {"after_acquire", "before_write", "before_release"}) p.push_back(later);
    return p;
}

const std::vector<FailureClass>& failure_class_table() {
    static const std::vector<FailureClass> table{
        {"baseline", "no fault"},
        {"gc-pause", "GC pause"},
        {"delayed-write", "delayed write"},
        {"held-replies", "held replies"},
        {"client-clock-skew", "client clock skew"},
        {"node-clock-jump", "node clock jump"},
        {"restart-empty", "restart without data"},
        {"failover", "failover"},
        {"slow-holder", "slow holder"},
        {"discovered", "discovered"},  // the cases promoted from a search and kept (scenarios/discovered/)
    };
    return table;
}

const std::vector<std::string>& failure_classes() {
    static const std::vector<std::string> codes = [] {
        std::vector<std::string> out;
        for (const FailureClass& c : failure_class_table()) out.push_back(c.code);
        return out;
    }();
    return codes;
}

using namespace scenario_parse;

namespace scenario_parse {

WorkloadSpec parse_workload(const nlohmann::json& j, const std::string& file, const std::string& path) {
    Fields f(j, path, file);
    WorkloadSpec w;
    w.clients = static_cast<int>(f.integer("clients", w.clients, 1, 64));
    w.duration_ms = f.integer("duration_ms", w.duration_ms, 1, kMaxDurationMs, "at most one hour");
    if (f.get("sections_per_client")) w.sections_per_client = f.integer("sections_per_client", 1, 1, kMaxLong);
    if (f.get("until_sections")) w.until_sections = f.integer("until_sections", 1, 1, kMaxLong);
    w.work_ms = distribution(f, "work_ms", w.work_ms, file, w.duration_ms);
    w.retry_ms = distribution(f, "retry_ms", w.retry_ms, file, w.duration_ms);
    w.think_ms = distribution(f, "think_ms", w.think_ms, file, w.duration_ms);
    // The last client starts (clients - 1) × the stagger after the first: within the run.
    const long long stagger_max = w.clients > 1 ? (w.duration_ms - 1) / (w.clients - 1) : w.duration_ms;
    w.start_stagger_ms = f.integer("start_stagger_ms", 0, 0, stagger_max,
                                   "the last client must start within the run: " + run_ends(w));
    if (const nlohmann::json* after = f.get("start_after")) {
        Fields a(*after, path + ".start_after", file);
        StartAfter s;
        s.client = static_cast<int>(a.integer("client", 0, 0, w.clients - 1,
                                              "one of the workload's " + std::to_string(w.clients) + " clients"));
        const std::string point = a.string("point", "after_acquire");
        const std::optional<Point> p = parse_point(point);
        if (!p) a.fail(a.at("point"), "expected a point (before_acquire, after_acquire, ...), got " + quoted_excerpt(point));
        s.point = *p;
        if (!a.get("max_ms")) a.fail(path + ".start_after.max_ms", "required: the longest the others wait");
        s.max_ms = a.integer("max_ms", 0, 1, w.duration_ms, run_ends(w));
        a.finish();
        w.start_after = s;
    }
    if (const nlohmann::json* slow = f.get("slow")) {
        Fields s(*slow, path + ".slow", file);
        w.slow_probability = s.number("probability", 0.0, 0, 1);
        if (!s.get("work_ms")) s.fail(path + ".slow.work_ms", "required, expected a distribution");
        w.slow_work_ms = distribution(s, "work_ms", w.slow_work_ms, file, w.duration_ms);
        s.finish();
    }
    f.finish();
    return w;
}

ClientTimeouts parse_client(const nlohmann::json& j, const std::string& path, const std::string& file,
                            ClientTimeouts t) {
    Fields c(j, path, file);
    t.command_ms = c.integer("command_timeout_ms", t.command_ms, 1, kMaxDurationMs, "at most one hour");
    t.connect_ms = c.integer("connect_timeout_ms", t.connect_ms, 1, kMaxDurationMs, "at most one hour");
    t.store_ms = c.integer("store_timeout_ms", t.store_ms, 1, kMaxDurationMs, "at most one hour");
    c.finish();
    return t;
}

// Names become folder names: keep them to one harmless path component.
void check_name(Fields& f, const std::string& field, const std::string& name) {
    // '@' joins a lock's name and a case's variant in a run's name: "token-lua@aof-always".
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._+=@-]{0,199}");
    if (name.size() > 200 || !std::regex_match(name, ok))
        f.fail(field, "expected a name of at most 200 letters, digits and . _ + = @ - (not starting with . or -), got " + quoted_excerpt(name));
}

std::optional<std::string> parse_failure_class(Fields& f) {
    if (!f.get("failure_class")) return std::nullopt;
    const std::string c = f.string("failure_class", "");
    const auto& known = failure_classes();
    if (std::ranges::find(known, c) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        f.fail(f.at("failure_class"), "expected one of " + list + ", got " + quoted_excerpt(c));
    }
    return c;
}

Expectation parse_expectation(const std::string& metric, const nlohmann::json& v, const std::string& path,
                              const std::string& file) {
    if (metric == "verdict") {   // the run's verdict, in the verdict table's words
        if (!v.is_string() || !parse_verdict(v.get<std::string>()))
            throw ScenarioError(file + ": " + path + ": expected one of " + verdict_word_list() + ", got " + excerpt(v));
        return {metric, "==", 0, v.get<std::string>()};
    }
    const Metric* known = find_metric(metric);
    if (!known || !known->expectable)
        throw ScenarioError(file + ": " + path + ": unknown metric (known: " + expectable_metric_list() + ")");
    std::istringstream in(v.is_string() ? v.get<std::string>() : "");
    Expectation e{metric, "", 0, std::nullopt};
    in >> e.op >> e.value;   // fails on a value beyond a double, such as 1e999
    const std::set<std::string> ops{"==", "!=", "<", "<=", ">", ">="};
    std::string rest;
    if (!v.is_string() || !in || !ops.contains(e.op) || (in >> rest))
        throw ScenarioError(file + ": " + path + ": expected a comparison such as \"== 0\" or \">= 1\", got " + excerpt(v));
    return e;
}

// "explore": {"fixed": [paths]}: what `lockbench explore` leaves as written.
std::vector<std::string> parse_explore_fixed(const nlohmann::json& e, const std::string& file) {
    Fields x(e, "explore", file);
    std::vector<std::string> fixed_paths;
    if (const nlohmann::json* fixed = x.get("fixed")) {
        static const std::regex path(
            R"((seed|workload\.start_stagger_ms|faults\.(\d+|\*)\.(occurrence|client|node|nodes|duration_ms|jump_ms|at_ms|restart_after_ms)))");
        if (!fixed->is_array()) x.fail(x.at("fixed"), "expected an array of field paths, got " + excerpt(*fixed));
        for (const auto& p : *fixed) {
            if (!p.is_string() || !std::regex_match(p.get<std::string>(), path))
                x.fail(x.at("fixed"), "expected paths like \"faults.0.at_ms\", \"faults.*.client\", "
                                "\"workload.start_stagger_ms\" or \"seed\", got " + excerpt(p));
            fixed_paths.push_back(p.get<std::string>());
        }
    }
    x.finish();
    return fixed_paths;
}

}  // namespace scenario_parse

namespace {

// "server_settings", "pgbouncer" and "server": how a server starts, for a service that takes them.
void parse_server_settings(Fields& f, RunSpec& r) {
    const nlohmann::json* settings = f.get("server_settings");
    const nlohmann::json* pgbouncer = f.get("pgbouncer");
    if (f.get("server")) {
        if (!service_info(r.service).server_program)
            f.fail(f.at("server"), "applies to a " + services_with(&ServiceInfo::server_program) + " service only");
        const std::string program = f.string("server", "");
        if (program.empty() || program.front() != '/' || has_unprintable(program))
            f.fail(f.at("server"), "expected the absolute path of the servers' program, got " + quoted_excerpt(program));
        r.server = program;
    }
    if (service_info(r.service).needs_program && r.server.empty())
        f.fail(f.at("service"), std::string("a ") + service_name(r.service) + " run names the program its servers run (\"server\", an absolute path): lockbench has none of its own");
    if (settings && !service_info(r.service).server_settings)
        f.fail(f.at("server_settings"), "applies to a " + services_with(&ServiceInfo::server_settings) + " service only");
    if (pgbouncer && !service_info(r.service).pooler)
        f.fail(f.at("pgbouncer"), "applies to a " + services_with(&ServiceInfo::pooler) + " service only");
    if (settings) {
        static const std::regex setting_name("[a-z_][a-z0-9_.]{0,62}");
        if (!settings->is_object()) f.fail(f.at("server_settings"), "expected an object of setting → value, got " + excerpt(*settings));
        for (const auto& [name, value] : settings->items()) {
            const std::string at = f.at("server_settings") + "." + name;
            if (!std::regex_match(name, setting_name)) f.fail(at, std::string("not a ") + service_info(r.service).title + " setting's name");
            if (std::ranges::find(service_info(r.service).reserved_settings, name) != service_info(r.service).reserved_settings.end())
                f.fail(at, "lockbench sets it itself (where the server listens, its folders, how clients log in)");
            if (value.is_string()) r.server_settings[name] = value.get<std::string>();
            else if (value.is_number_integer()) r.server_settings[name] = std::to_string(value.get<long long>());
            else f.fail(at, "expected a string (\"2s\") or an integer, got " + excerpt(value));
        }
    }
    if (pgbouncer) {
        r.pgbouncer = f.string("pgbouncer", "");
        if (r.pgbouncer != "transaction" && r.pgbouncer != "session")
            f.fail(f.at("pgbouncer"), "expected PgBouncer's pool mode, \"transaction\" or \"session\", got " +
                                      quoted_excerpt(r.pgbouncer));
    }
}

// "service": which servers the run locks on, and what its entry (service.h) allows: only an
// external adapter locks on a service lockbench's own algorithms do not speak, a fault by role
// (leader, follower) needs a service that has a leader, the number of servers is the
// service's, a Redis node's topology and persistence apply to Redis alone. What else a fault
// cannot reach on a service is its kind's (fault_kind.h: why_not), checked once the topology is read.
void parse_run_service(Fields& f, RunSpec& r, const std::string& algorithm, const std::string& faults_at) {
    const std::string name = f.string("service", "redis");
    const std::optional<Service> service = parse_service(name);
    if (!service) f.fail(f.at("service"), "expected " + services_with(nullptr) + ", got " + quoted_excerpt(name));
    r.service = *service;
    const ServiceInfo& info = service_info(r.service);
    parse_server_settings(f, r);
    for (size_t i = 0; i < r.faults.size(); ++i)
        if (r.faults[i].node && *r.faults[i].node < 0 && !info.has_leader)
            f.fail(faults_at + "[" + std::to_string(i) + "].node", std::string(info.plural) + " have no leader: a fault by role needs \"service\" " +
                                                                   services_with(&ServiceInfo::has_leader));
    if (!info.own_algorithms && algorithm != "external")
        f.fail(f.at("service"), "lockbench's own algorithms speak " + services_with(&ServiceInfo::own_algorithms, false) + "; on " + name +
                                " use an external adapter (\"algorithm\": \"external\", docs/adapters.md)");
    if (const auto why = servers_refused(info, r.nodes)) f.fail(f.at("nodes"), *why);
    if (!info.node_options)
        for (const char* redis_only : {"topology", "persistence"})
            if (f.get(redis_only)) f.fail(f.at(redis_only), std::string("applies to Redis nodes only, not to ") + name);
}

// Every node a fault names exists in this run.
void check_fault_nodes(Fields& f, const RunSpec& r, const std::string& faults_at) {
    for (size_t i = 0; i < r.faults.size(); ++i) {
        const std::string at = faults_at + "[" + std::to_string(i) + "]";
        const std::string has = "no such node: this run has " + std::to_string(r.nodes) + " lock node(s)";
        if (r.faults[i].node && *r.faults[i].node >= r.nodes) f.fail(at + ".node", has);
        if (r.faults[i].node == kFollowerNode && r.nodes == 1) f.fail(at + ".node", "a single server has no follower");
        for (int n : r.faults[i].link_nodes)
            if (n >= r.nodes) f.fail(at + ".nodes", has + ", got " + std::to_string(n));
    }
}

}  // namespace

// "renew": {"every_ms": P | "fraction": f, "ttl_ms": T, "mode": "add" | "replace",
// "on_failure": "stop" | "retry", "abandon": false}.
RenewSpec scenario_parse::parse_renew(const nlohmann::json& j, const std::string& path, const std::string& file) {
    Fields f(j, path, file);
    RenewSpec r;
    r.ttl_ms = f.integer("ttl_ms", 0, 1, kMaxDurationMs);
    if (!f.get("ttl_ms")) f.fail(f.at("ttl_ms"), "required: each renewal's T, in ms");
    if (f.get("every_ms")) r.every_ms = f.integer("every_ms", 0, 1, kMaxDurationMs);
    if (f.get("fraction")) r.fraction = f.number("fraction", 0, 0.01, 100);
    if (r.every_ms.has_value() == r.fraction.has_value())
        f.fail(f.at("every_ms"), "give exactly one of every_ms (the period) and fraction (the period as a share of ttl_ms)");
    if (r.period_ms() < 1) f.fail(f.at("fraction"), "the period (fraction * ttl_ms) must be at least 1 ms");
    if (r.period_ms() > kMaxDurationMs)  // as every_ms: a fraction of an hour-long ttl_ms could make it 100 hours
        f.fail(f.at("fraction"), "the period (fraction * ttl_ms) must be at most 3600000 ms (an hour), got " +
                                     std::to_string(std::llround(r.period_ms())) + " ms");
    const std::string mode = f.string("mode", "add");
    if (mode != "add" && mode != "replace") f.fail(f.at("mode"), "expected \"add\" or \"replace\", got " + quoted_excerpt(mode));
    r.replace = mode == "replace";
    const std::string on_failure = f.string("on_failure", "stop");
    if (on_failure != "stop" && on_failure != "retry")
        f.fail(f.at("on_failure"), "expected \"stop\" or \"retry\", got " + quoted_excerpt(on_failure));
    r.retry = on_failure == "retry";
    r.abandon = f.value<bool>("abandon", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    f.finish();
    return r;
}

namespace {

// A background pause reaches the tasks lockbench runs through Env::background (a built-in
// algorithm's watchdog, the worker's renewal policy); an external library's own threads
// (etcd's keepalive, a watchdog in Java) are out of its reach.
// A run with neither has no background task, and a pause of one would do nothing while it
// counted as injected: a built-in algorithm says whether it runs one (AlgorithmInfo's
// background_task: reentrant's watchdog).
void check_background_faults(Fields& f, const RunSpec& r, const std::string& faults_at) {
    const bool watchdog =
        r.command.empty() && r.algorithm->background_task && r.algorithm->background_task(r.params.json());
    for (size_t i = 0; i < r.faults.size(); ++i) {
        if (!r.faults[i].background || r.renew) continue;
        const std::string at = faults_at + "[" + std::to_string(i) + "].task";
        if (!r.command.empty())
            f.fail(at, "an external library's own background tasks cannot be paused alone (only a built-in algorithm's, or a \"renew\" policy's)");
        if (!watchdog)
            f.fail(at, "this run has no background task to pause: give it a \"renew\" policy (or reentrant's watchdog)");
    }
}

// An algorithm whose every lease of one client carries one token (reentrant's hash field): a
// check on it cannot tell that client's stale lease from its new one.
void check_resource_check(Fields& f, const RunSpec& r) {
    if (r.resource_check == ResourceCheck::token && r.command.empty() && r.algorithm->one_token_per_client)
        f.fail(f.at("resource_check"), "\"token\" cannot check " + r.algorithm->name +
                                           ", whose token is the same for every lease of one client: use \"fence\" "
                                           "or \"none\"");
}

// "resource_check": what the protected store refuses (store.h); "fence", today's check, by default.
ResourceCheck parse_run_resource_check(Fields& f) {
    const std::string name = f.string("resource_check", "fence");
    const std::optional<ResourceCheck> check = parse_resource_check(name);
    if (!check) f.fail(f.at("resource_check"), "expected \"none\", \"fence\" or \"token\", got " + quoted_excerpt(name));
    return *check;
}

// A library in another process ("external"): its adapter command; it must name its run too.
std::vector<std::string> parse_command(Fields& f, const std::string& algorithm) {
    const nlohmann::json* command = f.get("command");
    if (algorithm != "external") {
        if (command) f.fail(f.at("command"), "only an \"external\" algorithm runs a command");
        return {};
    }
    if (!command) f.fail(f.at("command"), "required with \"algorithm\": \"external\": the adapter's command, e.g. "
                                          "[\"/usr/bin/python3\", \"adapters/redis_py_lock.py\"]");
    if (!command->is_array() || command->empty() ||
        !std::ranges::all_of(*command, [](const auto& a) { return a.is_string() && !a.template get<std::string>().empty(); }))
        f.fail(f.at("command"), "expected a non-empty array of non-empty strings, got " + excerpt(*command));
    if (!f.get("name")) f.fail(f.at("name"), "required with \"algorithm\": \"external\" (e.g. \"redis-py\")");
    return command->get<std::vector<std::string>>();
}

// "table_row": the library table's row a case's variant of a library's run goes in; a name.
std::optional<std::string> parse_table_row(Fields& f) {
    if (!f.get("table_row")) return std::nullopt;
    const std::string row = f.string("table_row", "");
    check_name(f, f.at("table_row"), row);
    return row;
}

// "cwd": where an adapter's command runs (a case × lock cell's: its lock file's folder).
std::filesystem::path parse_cwd(Fields& f, const RunSpec& r) {
    if (!f.get("cwd")) return {};
    const std::string cwd = f.string("cwd", "");
    if (r.command.empty()) f.fail(f.at("cwd"), "only an \"external\" run's command has a folder to run in");
    if (cwd.empty() || cwd.front() != '/') f.fail(f.at("cwd"), "expected an absolute folder, got " + quoted_excerpt(cwd));
    return cwd;
}

// A run's own "workload" and "client" (a case scaled for a whole-second lock), or the scenario's.
void parse_run_workload(Fields& f, RunSpec& r, const Scenario& s, const std::string& file) {
    const nlohmann::json* workload = f.get("workload");
    r.workload = workload ? parse_workload(*workload, file, f.at("workload")) : s.workload;
    r.workload_source = workload ? *workload : s.source.value("workload", nlohmann::json::object());
    const nlohmann::json* client = f.get("client");
    r.timeouts = client ? parse_client(*client, f.at("client"), file, s.timeouts) : s.timeouts;
}

// The lock file a run tests, when a case × lock cell made it: its name, file and variant.
void parse_lock_identity(Fields& f, RunSpec& r) {
    for (auto [key, into] : {std::pair{"lock", &r.lock}, std::pair{"variant", &r.variant}}) {
        if (!f.get(key)) continue;
        *into = f.string(key, "");
        check_name(f, f.at(key), **into);
    }
    if (f.get("lock_file")) r.lock_file = f.string("lock_file", "");
}

RunSpec parse_run(const nlohmann::json& j, const std::string& path, const std::string& file, const Scenario& s,
                  const nlohmann::json& scenario_faults) {
    Fields f(j, path, file);
    RunSpec r;
    const std::string algorithm = f.required_string("algorithm");
    r.algorithm = algorithm == "external" ? &external_algorithm() : find_algorithm(algorithm);
    if (!r.algorithm) {
        std::string list;
        for (const auto& a : algorithms()) list += (list.empty() ? "" : ", ") + a.name;
        f.fail(f.at("algorithm"), "unknown algorithm " + quoted_excerpt(algorithm) + " (known: " + list + ", external)");
    }
    r.command = parse_command(f, algorithm);
    r.cwd = parse_cwd(f, r);
    std::string error;
    const nlohmann::json* params = f.get("params");
    // An external run's other parameters are the library's own: the adapter reads them as given.
    if (!resolve_params(r.algorithm->params, params ? *params : nlohmann::json::object(), r.params, error,
                        algorithm == "external"))
        f.fail(f.at("params") + error.substr(0, error.find(':')), error.substr(error.find(':') + 2));
    if (algorithm == "external") check_adapter_launch(f, r);
    r.nodes = static_cast<int>(f.integer("nodes", r.algorithm->default_nodes, 1, kMaxNodes));
    r.name = f.string("name", default_run_name(algorithm, r.algorithm->params, r.params));
    check_name(f, f.at("name"), r.name);
    r.table_row = parse_table_row(f);
    parse_lock_identity(f, r);
    parse_run_workload(f, r, s, file);
    const nlohmann::json* own = f.get("faults");
    r.faults_source = own ? *own : scenario_faults;
    r.faults = parse_faults(r.faults_source, own ? f.at("faults") : "faults", file, r.workload);
    for (FaultSpec& fault : r.faults)
        if (fault.link_all_nodes)
            for (int n = 0; n < r.nodes; ++n) fault.link_nodes.push_back(n);
    const std::string faults_at = own ? f.at("faults") : std::string("faults");
    parse_run_service(f, r, algorithm, faults_at);
    check_fault_nodes(f, r, faults_at);
    const std::string topology = f.string("topology", "plain");
    if (topology != "plain" && topology != "sentinel")
        f.fail(f.at("topology"), "expected \"plain\" or \"sentinel\", got " + quoted_excerpt(topology));
    r.sentinel = topology == "sentinel";
    if (r.sentinel && r.nodes != 1) f.fail(f.at("topology"), "a sentinel topology has one lock node (a master), not " + std::to_string(r.nodes));
    const std::string persistence = f.string("persistence", "none");
    if (const auto p = parse_persistence(persistence)) r.persistence = *p;
    else f.fail(f.at("persistence"), "expected none, aof-always or aof-everysec, got " + quoted_excerpt(persistence));
    // What each fault's kind cannot reach on this service, topology and persistence (fault_kind.h).
    for (size_t i = 0; i < r.faults.size(); ++i)
        if (const FaultKind& k = fault_kind(r.faults[i].kind); k.why_not)
            if (const auto why = k.why_not(r.faults[i], FaultLanding{r.service, r.sentinel, r.nodes, r.persistence}))
                f.fail(faults_at + "[" + std::to_string(i) + "]", "this fault " + *why + " (here: " + service_name(r.service) +
                                                                  (r.sentinel ? " through Sentinel" : "") + ", " + std::to_string(r.nodes) +
                                                                  (r.nodes == 1 ? " server)" : " servers)"));
    r.check_lease_before_write =
        f.value<bool>("check_lease_before_write", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    if (const nlohmann::json* renew = f.get("renew")) r.renew = parse_renew(*renew, f.at("renew"), file);
    check_background_faults(f, r, faults_at);
    r.resource_check = parse_run_resource_check(f);
    check_resource_check(f, r);
    if (const nlohmann::json* expect = f.get("expect")) {
        Fields e(*expect, f.at("expect"), file, Fields::Keys::names);
        for (const auto& [metric, v] : expect->items()) {
            e.get(metric);
            r.expect.push_back(parse_expectation(metric, v, e.at(metric), file));
            // Those figures exist only where the client probed the key: elsewhere they would read 0.
            const Metric* m = find_metric(metric);
            if (m && m->group == MetricGroup::validity && !(algorithm == "external" && r.params.flag("probe_key_ttl")))
                e.fail(e.at(metric), "needs an external run with \"params\": {\"probe_key_ttl\": true}");
            if (metric == "failover_to_entry_ms" && !r.sentinel)
                e.fail(e.at(metric), "needs a run on \"topology\": \"sentinel\" (a Sentinel failover to count from)");
        }
        e.finish();
    }
    f.finish();
    r.source = j;
    if (!r.source.contains("workload")) r.source["workload"] = r.workload_source;
    if (!r.source.contains("client") && s.source.contains("client")) r.source["client"] = s.source.at("client");
    if (!r.source.contains("faults")) r.source["faults"] = r.faults_source;
    return r;
}

}  // namespace

bool Expectation::holds(double actual) const {
    if (op == "==") return actual == value;
    if (op == "!=") return actual != value;
    if (op == "<") return actual < value;
    if (op == "<=") return actual <= value;
    if (op == ">") return actual > value;
    return actual >= value;
}

std::string Expectation::text() const {
    std::ostringstream out;
    if (word) return metric + " " + op + " " + *word;
    out << metric << ' ' << op << ' ' << value;
    return out.str();
}

Scenario parse_scenario(const nlohmann::json& j, const std::string& file) {
    Fields f(j, "", file);
    Scenario s;
    s.path = file;
    s.source = j;
    s.name = f.required_string("name");
    check_name(f, "name", s.name);
    s.description = f.string("description", "");
    s.failure_class = parse_failure_class(f);
    s.seed = static_cast<std::uint64_t>(f.integer("seed", 1, 0, kMaxLong));
    s.lock_key = f.string("lock_key", s.lock_key);
    if (f.get("base_port")) s.base_port = static_cast<int>(f.integer("base_port", 0, 1024, 65000));
    if (const nlohmann::json* client = f.get("client")) s.timeouts = parse_client(*client, "client", file, s.timeouts);
    if (const nlohmann::json* w = f.get("workload")) s.workload = parse_workload(*w, file);
    if (const nlohmann::json* e = f.get("explore")) s.explore_fixed = parse_explore_fixed(*e, file);
    s.alone = f.value<bool>("alone", false, [](const nlohmann::json& x) { return x.is_boolean(); }, "true or false");
    const nlohmann::json* faults = f.get("faults");
    const nlohmann::json scenario_faults = faults ? *faults : nlohmann::json::array();
    const nlohmann::json* runs = f.get("runs");
    if (!runs || !runs->is_array() || runs->empty())
        f.fail("runs", "required, expected a non-empty array of runs");
    std::set<std::string> names;
    for (size_t i = 0; i < runs->size(); ++i) {
        const std::string path = "runs[" + std::to_string(i) + "]";
        s.runs.push_back(parse_run((*runs)[i], path, file, s, scenario_faults));
        if (!names.insert(s.runs.back().name).second)
            f.fail(path + ".name", quoted_excerpt(s.runs.back().name) + " is used by an earlier run; give one of them another \"name\"");
    }
    // A fixed path names a fault by its index in a run's faults (the scenario's, or a run's own).
    std::size_t most_faults = 0;
    for (const RunSpec& r : s.runs) most_faults = std::max(most_faults, r.faults.size());
    for (const std::string& p : s.explore_fixed) {
        if (!p.starts_with("faults.") || p[7] == '*') continue;
        std::size_t index = 0;  // digits, by the path's pattern; too many to parse name no fault either
        const auto [end, ec] = std::from_chars(p.data() + 7, p.data() + p.size(), index);
        if (ec != std::errc() || index >= most_faults)
            f.fail("explore.fixed", quoted_excerpt(p) + " names no fault: the runs have " + std::to_string(most_faults));
    }
    f.finish();
    return s;
}

namespace {

// The file as JSON, refusing in one line what would otherwise end in an exception text, a
// crash, a hang or a silent misreading (json_input.h: not a regular file, over 1 MiB, not
// JSON, nested over 64 levels, a key given twice).
nlohmann::json read_scenario_json(const std::filesystem::path& file, const std::string& kind) {
    try {
        return read_json_input(file, {.max_bytes = 1 << 20, .max_depth = 64, .kind = kind});
    } catch (const JsonInputError& e) {
        throw ScenarioError(e.what());
    }
}

}  // namespace

nlohmann::json read_input_json(const std::filesystem::path& file, const std::string& kind) {
    return read_scenario_json(file, kind);
}

Scenario load_scenario(const std::filesystem::path& file) {
    return parse_scenario(read_scenario_json(file, "scenario file"), file.string());
}

RunSpec parse_standalone_run(const nlohmann::json& run, const std::string& what) {
    Scenario none;
    none.source = nlohmann::json::object();
    return parse_run(run, "run", what, none, nlohmann::json::array());
}

namespace {
bool chosen(const RunSpec& r, const std::string& name) {
    return r.name == name || r.algorithm->name == name || r.lock == name;
}
}  // namespace

void select_runs(Scenario& s, const std::vector<std::string>& names) {
    if (names.empty()) return;
    for (const auto& n : names) {
        const bool known = std::ranges::any_of(s.runs, [&](const RunSpec& r) { return chosen(r, n); });
        if (!known) throw ScenarioError(s.path + ": --algorithm " + n + ": no run of that algorithm, lock or name in this scenario");
    }
    std::erase_if(s.runs, [&](const RunSpec& r) {
        return std::ranges::none_of(names, [&](const std::string& n) { return chosen(r, n); });
    });
}

}  // namespace lockbench
