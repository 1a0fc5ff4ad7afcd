#include "sim/engine/scenario.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/metrics.h"

namespace lockbench {

const AlgorithmInfo& external_algorithm() {
    static const AlgorithmInfo info{
        "external",
        "a third-party lock library in an adapter process (adapters/, README: External locks)",
        1,
        {{"ttl_ms", ParamSpec::Type::integer, 500, "the lease asked of the library", {}, 1},
         {"fence", ParamSpec::Type::boolean, false, "the store checks the library's fencing token (its answer's fence)"}},
        nullptr};
    return info;
}
namespace {

// A string from the file, quoted and cut for a message.
std::string quoted_excerpt(const std::string& text) { return excerpt(nlohmann::json(text)); }

// A JSON object under validation: every field read is ticked off, and finish() rejects the
// rest, so a typo is an error rather than a silently ignored setting. Numbers are read only
// through integer() and number(), which check the value as written against its range.
class Fields {
public:
    Fields(const nlohmann::json& j, std::string path, const std::string& file)
        : j_(j), path_(std::move(path)), file_(file) {
        if (!j_.is_object()) fail(path_, "expected an object, got " + excerpt(j_));
    }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw ScenarioError(file_ + ": " + (field.empty() ? "(top level)" : field) + ": " + what);
    }
    std::string at(const std::string& key) const {
        return path_.empty() ? excerpt_text(key) : path_ + "." + excerpt_text(key);
    }

    const nlohmann::json* get(const std::string& key) {
        seen_.insert(key);
        auto it = j_.find(key);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    template <typename T, typename Check>
    T value(const std::string& key, T fallback, Check ok, const char* expected) {
        const nlohmann::json* v = get(key);
        if (!v) return fallback;
        if (!ok(*v)) fail(at(key), std::string("expected ") + expected + ", got " + excerpt(*v));
        return v->get<T>();
    }
    // An integer within [min, max]; `why` says where a bound comes from (the run's length).
    long long integer(const std::string& key, long long fallback, long long min, long long max,
                      const std::string& why = "") {
        const nlohmann::json* v = get(key);
        if (!v) return fallback;
        if (const auto x = integer_within(*v, min, max)) return *x;
        fail(at(key), "expected " + range_text("an integer", static_cast<double>(min), static_cast<double>(max)) +
                          (why.empty() ? "" : " (" + why + ")") + ", got " + excerpt(*v));
    }
    double number(const std::string& key, double fallback, double min, double max) {
        const nlohmann::json* v = get(key);
        if (!v) return fallback;
        if (const auto x = number_within(*v, min, max)) return *x;
        fail(at(key), "expected " + range_text("a number", min, max) + ", got " + excerpt(*v));
    }
    std::string string(const std::string& key, std::string fallback) {
        return value<std::string>(key, fallback, [](const auto& x) { return x.is_string(); }, "a string");
    }
    std::string required_string(const std::string& key) {
        if (!get(key)) fail(at(key), "required, expected a string");
        return string(key, "");
    }
    void finish() const {
        for (const auto& [key, _] : j_.items())
            if (!seen_.contains(key)) fail(at(key), "unknown field");
    }

private:
    const nlohmann::json& j_;
    std::string path_;
    const std::string& file_;
    std::set<std::string> seen_;
};

constexpr long long kMaxLong = std::numeric_limits<long long>::max();
constexpr long long kMaxNodes = 16;                       // lock nodes in a run
constexpr long long kMaxOccurrence = 1'000'000'000;       // reaches of a point: an int with room
constexpr long long kMaxJumpMs = 365LL * 24 * 3'600'000;  // a clock step: a year either way
constexpr double kMaxRate = 1000;                         // a skewed clock's seconds per second

// "workload.duration_ms is 3000": why a time or a duration has its bound.
std::string run_ends(const WorkloadSpec& w) { return "workload.duration_ms is " + std::to_string(w.duration_ms); }

// Every value a distribution names (the fixed value, both bounds, the mean) is a finite
// number of milliseconds within the run, so that no draw is infinite or outlasts it absurdly.
Distribution parse_distribution(const nlohmann::json& j, const std::string& path, const std::string& file,
                                long long run_ms) {
    const std::string expected = "{\"fixed\": MS}, {\"uniform\": [MIN_MS, MAX_MS]} or {\"exponential\": MEAN_MS}, "
                                 "each from 0 to " + std::to_string(run_ms) + " (workload.duration_ms)";
    const auto bad = [&] { throw ScenarioError(file + ": " + path + ": expected " + expected + ", got " + excerpt(j)); };
    if (!j.is_object() || j.size() != 1) bad();
    const auto& [kind, v] = *j.items().begin();
    const auto ms = [&](const nlohmann::json& x) { return number_within(x, 0, static_cast<double>(run_ms)); };
    if (kind == "fixed" && ms(v)) return {Distribution::Kind::fixed, *ms(v), 0};
    if (kind == "exponential" && ms(v)) return {Distribution::Kind::exponential, *ms(v), 0};
    if (kind == "uniform" && v.is_array() && v.size() == 2 && ms(v[0]) && ms(v[1]) && *ms(v[0]) <= *ms(v[1]))
        return {Distribution::Kind::uniform, *ms(v[0]), *ms(v[1])};
    bad();
    return {};  // not reached: bad() throws
}

Distribution distribution(Fields& f, const std::string& key, Distribution fallback, const std::string& file,
                          long long run_ms) {
    const nlohmann::json* v = f.get(key);
    return v ? parse_distribution(*v, f.at(key), file, run_ms) : fallback;
}

WorkloadSpec parse_workload(const nlohmann::json& j, const std::string& file) {
    Fields f(j, "workload", file);
    WorkloadSpec w;
    w.clients = static_cast<int>(f.integer("clients", w.clients, 1, 64));
    w.duration_ms = f.integer("duration_ms", w.duration_ms, 1, kMaxDurationMs, "at most one hour");
    if (f.get("sections_per_client")) w.sections_per_client = f.integer("sections_per_client", 1, 1, kMaxLong);
    w.work_ms = distribution(f, "work_ms", w.work_ms, file, w.duration_ms);
    w.retry_ms = distribution(f, "retry_ms", w.retry_ms, file, w.duration_ms);
    w.think_ms = distribution(f, "think_ms", w.think_ms, file, w.duration_ms);
    // The last client starts (clients - 1) × the stagger after the first: within the run.
    const long long stagger_max = w.clients > 1 ? (w.duration_ms - 1) / (w.clients - 1) : w.duration_ms;
    w.start_stagger_ms = f.integer("start_stagger_ms", 0, 0, stagger_max,
                                   "the last client must start within the run: " + run_ends(w));
    if (const nlohmann::json* slow = f.get("slow")) {
        Fields s(*slow, "workload.slow", file);
        w.slow_probability = s.number("probability", 0.0, 0, 1);
        if (!s.get("work_ms")) s.fail("workload.slow.work_ms", "required, expected a distribution");
        w.slow_work_ms = distribution(s, "work_ms", w.slow_work_ms, file, w.duration_ms);
        s.finish();
    }
    f.finish();
    return w;
}

// Names become folder names: keep them to one harmless path component.
void check_name(Fields& f, const std::string& field, const std::string& name) {
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}");
    if (name.size() > 200 || !std::regex_match(name, ok))
        f.fail(field, "expected a name of at most 200 letters, digits and . _ + = - (not starting with . or -), got " + quoted_excerpt(name));
}

Expectation parse_expectation(const std::string& metric, const nlohmann::json& v, const std::string& path,
                              const std::string& file) {
    const Metric* known = find_metric(metric);
    if (!known || !known->expectable)
        throw ScenarioError(file + ": " + path + ": unknown metric (known: " + expectable_metric_list() + ")");
    std::istringstream in(v.is_string() ? v.get<std::string>() : "");
    Expectation e{metric, "", 0};
    in >> e.op >> e.value;   // fails on a value beyond a double, such as 1e999
    const std::set<std::string> ops{"==", "!=", "<", "<=", ">", ">="};
    std::string rest;
    if (!v.is_string() || !in || !ops.contains(e.op) || (in >> rest))
        throw ScenarioError(file + ": " + path + ": expected a comparison such as \"== 0\" or \">= 1\", got " + excerpt(v));
    return e;
}

// A fault's node: an index, or "leader" / "follower" (whichever server leads, or the first
// that does not, when the fault fires; the run checks that its service has a leader).
int parse_node(Fields& f) {
    const nlohmann::json* node = f.get("node");
    if (node && node->is_string()) {
        const std::string role = node->get<std::string>();
        if (role == "leader") return kLeaderNode;
        if (role == "follower") return kFollowerNode;
        f.fail(f.at("node"), "expected a node index, \"leader\" or \"follower\", got " + quoted_excerpt(role));
    }
    return static_cast<int>(f.integer("node", 0, 0, kMaxNodes - 1));
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
    if (const nlohmann::json* nodes = f.get("nodes")) {
        if (!nodes->is_array()) f.fail(f.at("nodes"), "expected an array of lock node indices, got " + excerpt(*nodes));
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
    if (s.link_nodes.empty() && !s.link_store && !s.link_replication && !s.link_peers)
        f.fail(f.at("nodes"), "a link fault needs \"nodes\", \"store\", \"replication\" or \"peers\"");
    // Whose paths: every client's ("clients": "all"), the given client's, or at a point the
    // client that reached it; at a time with no client named, everyone's.
    if (f.get("clients")) {
        const std::string clients = f.string("clients", "");
        if (clients != "all") f.fail(f.at("clients"), "expected \"all\" (or leave it out and give \"client\"), got " + quoted_excerpt(clients));
        if (s.client) f.fail(f.at("clients"), "give either \"clients\": \"all\" or \"client\", not both");
    }
    s.all_clients = f.get("clients") != nullptr || (s.at_ms && !s.client);
    // Unset: until the run ends. Set, it ends within the run (at a point its start is unknown).
    s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                              "the fault would end after the run: " + run_ends(w));
}

FaultSpec parse_fault(const nlohmann::json& j, const std::string& path, const std::string& file,
                      const WorkloadSpec& w) {
    Fields f(j, path, file);
    FaultSpec s;
    const std::string kind = f.required_string("fault");
    if (kind == "pause") s.kind = FaultSpec::Kind::pause;
    else if (kind == "kill") s.kind = FaultSpec::Kind::kill;
    else if (kind == "gate") s.kind = FaultSpec::Kind::gate;
    else if (kind == "clock") s.kind = FaultSpec::Kind::clock;
    else if (kind == "link") s.kind = FaultSpec::Kind::link;
    else if (kind == "crash") s.kind = FaultSpec::Kind::crash;
    else f.fail(f.at("fault"), "expected \"pause\", \"kill\", \"gate\", \"clock\", \"link\" or \"crash\", got " + quoted_excerpt(kind));
    const bool by_point = f.get("point") != nullptr, by_time = f.get("at_ms") != nullptr;
    if (by_point == by_time) f.fail(path, "expected exactly one of \"point\" or \"at_ms\"");
    if (by_point) {
        const std::string name = f.string("point", "");
        s.point = parse_point(name);
        if (!s.point) f.fail(f.at("point"), "expected before_acquire, after_acquire, during_acquire, after_seen_expired, before_write, "
                                            "between_setnx_and_expire or before_release, got " + quoted_excerpt(name));
        s.occurrence = static_cast<int>(f.integer("occurrence", 1, 1, kMaxOccurrence));
    } else {
        s.at_ms = f.integer("at_ms", 0, 0, w.duration_ms - 1, run_ends(w));
        const bool has_target = f.get("client") || f.get("node") || s.kind == FaultSpec::Kind::link;
        if (!has_target) f.fail(f.at("client"), "required with at_ms: which client");
    }
    if (f.get("client")) {
        s.client = static_cast<int>(
            f.integer("client", 0, 0, w.clients - 1, "no such client: the workload has " + std::to_string(w.clients)));
    }
    if (s.kind == FaultSpec::Kind::pause) {
        if (!f.get("duration_ms")) f.fail(f.at("duration_ms"), "required for a pause");
        // At a point its start is unknown; at the least it must fit in the run.
        s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                                  "the pause would end after the run: " + run_ends(w));
    }
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
        if (f.get("client") && s.at_ms) f.fail(f.at("client"), "a pause of a node at a time names no client");
    } else if (f.get("node") && s.kind != FaultSpec::Kind::link) {
        f.fail(f.at("node"), "only a pause, clock, crash or peer link fault aims at a node");
    }
    if (s.kind == FaultSpec::Kind::link) parse_link(f, s, w);
    if (s.kind != FaultSpec::Kind::pause && s.kind != FaultSpec::Kind::link && f.get("duration_ms"))
        f.fail(f.at("duration_ms"), "only a pause or a link fault lasts a duration");
    if (s.kind == FaultSpec::Kind::gate) {
        s.count = static_cast<int>(
            f.integer("count", 2, 2, w.clients, "at most the workload's " + std::to_string(w.clients) + " clients"));
        s.stagger_ms = f.integer("stagger_ms", 0, 0, w.duration_ms, run_ends(w));
        if (!s.point) f.fail(path, "a gate holds clients at a point: give \"point\"");
        if (s.client) f.fail(f.at("client"), "a gate gathers several clients: it cannot name one");
    }
    f.finish();
    return s;
}

std::vector<FaultSpec> parse_faults(const nlohmann::json& j, const std::string& path, const std::string& file,
                                    const WorkloadSpec& w) {
    if (!j.is_array()) throw ScenarioError(file + ": " + path + ": expected an array of faults, got " + excerpt(j));
    std::vector<FaultSpec> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(parse_fault(j[i], path + "[" + std::to_string(i) + "]", file, w));
    return out;
}

// "service": which servers the run locks on. ZooKeeper and etcd speak their own protocols:
// only an external adapter locks there, and Redis's topology and persistence do not apply.
// A fault by role (leader, follower) needs a service that has a leader; a peer link fault
// needs ZooKeeper (etcd's peer URLs are the same cluster-wide: pause or kill a member
// instead); etcd's clock cannot be moved (Go reads the kernel's clock, not libc's).
void parse_run_service(Fields& f, RunSpec& r, const std::string& algorithm, const std::string& faults_at) {
    const std::string name = f.string("service", "redis");
    const std::optional<Service> service = parse_service(name);
    if (!service) f.fail(f.at("service"), "expected \"redis\", \"zookeeper\" or \"etcd\", got " + quoted_excerpt(name));
    r.service = *service;
    if (r.service == Service::redis) {
        for (size_t i = 0; i < r.faults.size(); ++i)
            if ((r.faults[i].node && *r.faults[i].node < 0) || r.faults[i].link_peers)
                f.fail(faults_at + "[" + std::to_string(i) + "].node",
                       "Redis nodes have no leader and no peer links: this needs \"service\" zookeeper or etcd");
        return;
    }
    if (algorithm != "external")
        f.fail(f.at("service"), "lockbench's own algorithms speak Redis; on " + name + " use an external adapter "
                                "(adapters/kazoo-lock, adapters/etcd-lock)");
    if (r.nodes % 2 == 0 || r.nodes > 5)
        f.fail(f.at("nodes"), "a " + name + " service has 1, 3 or 5 servers, got " + std::to_string(r.nodes));
    for (const char* redis_only : {"topology", "persistence"})
        if (f.get(redis_only)) f.fail(f.at(redis_only), std::string("applies to Redis nodes only, not to ") + name);
    for (size_t i = 0; i < r.faults.size(); ++i) {
        const FaultSpec& fault = r.faults[i];
        const std::string at = faults_at + "[" + std::to_string(i) + "]";
        if (fault.link_peers && r.service == Service::etcd)
            f.fail(at + ".peers", "etcd's peer URLs must be the same cluster-wide, so its peer links are not proxied: "
                                  "pause or kill a member as the minority stand-in");
        if (fault.link_peers && r.nodes == 1) f.fail(at + ".peers", "a single server has no peers");
        if (fault.kind == FaultSpec::Kind::clock && fault.node && r.service == Service::etcd)
            f.fail(at + ".node", "etcd is written in Go, which reads the kernel's clock directly: the clock shim cannot "
                                 "move an etcd server's clock");
    }
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

// "resource_check": what the protected store refuses (store.h); "fence", today's check, by default.
ResourceCheck parse_run_resource_check(Fields& f) {
    const std::string name = f.string("resource_check", "fence");
    const std::optional<ResourceCheck> check = parse_resource_check(name);
    if (!check) f.fail(f.at("resource_check"), "expected \"none\", \"fence\" or \"token\", got " + quoted_excerpt(name));
    return *check;
}

RunSpec parse_run(const nlohmann::json& j, const std::string& path, const std::string& file,
                  const WorkloadSpec& w, const nlohmann::json& scenario_faults) {
    Fields f(j, path, file);
    RunSpec r;
    const std::string algorithm = f.required_string("algorithm");
    r.algorithm = algorithm == "external" ? &external_algorithm() : find_algorithm(algorithm);
    if (!r.algorithm) {
        std::string list;
        for (const auto& a : algorithms()) list += (list.empty() ? "" : ", ") + a.name;
        f.fail(f.at("algorithm"), "unknown algorithm " + quoted_excerpt(algorithm) + " (known: " + list + ", external)");
    }
    if (algorithm == "external") {
        // A library in another process: its adapter command and the name the results use.
        const nlohmann::json* command = f.get("command");
        if (!command) f.fail(f.at("command"), "required with \"algorithm\": \"external\": the adapter's command, e.g. "
                                              "[\"/usr/bin/python3\", \"adapters/redis_py_lock.py\"]");
        if (!command->is_array() || command->empty() ||
            !std::ranges::all_of(*command, [](const auto& a) { return a.is_string() && !a.template get<std::string>().empty(); }))
            f.fail(f.at("command"), "expected a non-empty array of non-empty strings, got " + excerpt(*command));
        r.command = command->get<std::vector<std::string>>();
        if (!f.get("name")) f.fail(f.at("name"), "required with \"algorithm\": \"external\" (e.g. \"redis-py\")");
    } else if (f.get("command")) {
        f.fail(f.at("command"), "only an \"external\" algorithm runs a command");
    }
    std::string error;
    const nlohmann::json* params = f.get("params");
    if (!resolve_params(r.algorithm->params, params ? *params : nlohmann::json::object(), r.params, error))
        f.fail(f.at("params") + error.substr(0, error.find(':')), error.substr(error.find(':') + 2));
    r.nodes = static_cast<int>(f.integer("nodes", r.algorithm->default_nodes, 1, kMaxNodes));
    r.name = f.string("name", default_run_name(algorithm, r.algorithm->params, r.params));
    check_name(f, f.at("name"), r.name);
    const nlohmann::json* own = f.get("faults");
    r.faults_source = own ? *own : scenario_faults;
    r.faults = parse_faults(r.faults_source, own ? f.at("faults") : "faults", file, w);
    const std::string faults_at = own ? f.at("faults") : std::string("faults");
    parse_run_service(f, r, algorithm, faults_at);
    check_fault_nodes(f, r, faults_at);
    const std::string topology = f.string("topology", "plain");
    if (topology != "plain" && topology != "sentinel")
        f.fail(f.at("topology"), "expected \"plain\" or \"sentinel\", got " + quoted_excerpt(topology));
    r.sentinel = topology == "sentinel";
    if (r.sentinel && r.nodes != 1) f.fail(f.at("topology"), "a sentinel topology has one lock node (a master), not " + std::to_string(r.nodes));
    for (size_t i = 0; i < r.faults.size(); ++i)
        if (r.faults[i].link_replication && !r.sentinel)
            f.fail((own ? f.at("faults") : std::string("faults")) + "[" + std::to_string(i) + "].replication",
                   "there is a replication link only with \"topology\": \"sentinel\"");
    r.check_lease_before_write =
        f.value<bool>("check_lease_before_write", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    r.resource_check = parse_run_resource_check(f);
    const std::string persistence = f.string("persistence", "none");
    if (persistence == "aof-always") r.persistence = Persistence::aof_always;
    else if (persistence == "aof-everysec") r.persistence = Persistence::aof_everysec;
    else if (persistence != "none")
        f.fail(f.at("persistence"), "expected none, aof-always or aof-everysec, got " + quoted_excerpt(persistence));
    if (const nlohmann::json* expect = f.get("expect")) {
        Fields e(*expect, f.at("expect"), file);
        for (const auto& [metric, v] : expect->items()) {
            e.get(metric);
            r.expect.push_back(parse_expectation(metric, v, e.at(metric), file));
        }
        e.finish();
    }
    f.finish();
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
    s.seed = static_cast<std::uint64_t>(f.integer("seed", 1, 0, kMaxLong));
    s.lock_key = f.string("lock_key", s.lock_key);
    if (f.get("base_port")) s.base_port = static_cast<int>(f.integer("base_port", 0, 1024, 65000));
    if (const nlohmann::json* client = f.get("client")) {
        Fields c(*client, "client", file);
        s.command_timeout_ms = c.integer("command_timeout_ms", s.command_timeout_ms, 1, kMaxDurationMs, "at most one hour");
        s.connect_timeout_ms = c.integer("connect_timeout_ms", s.connect_timeout_ms, 1, kMaxDurationMs, "at most one hour");
        s.store_timeout_ms = c.integer("store_timeout_ms", s.store_timeout_ms, 1, kMaxDurationMs, "at most one hour");
        c.finish();
    }
    if (const nlohmann::json* w = f.get("workload")) s.workload = parse_workload(*w, file);
    if (const nlohmann::json* e = f.get("explore")) {
        Fields x(*e, "explore", file);
        if (const nlohmann::json* fixed = x.get("fixed")) {
            static const std::regex path(
                R"((seed|workload\.start_stagger_ms|faults\.(\d+|\*)\.(occurrence|client|node|nodes|duration_ms|jump_ms|at_ms|restart_after_ms)))");
            if (!fixed->is_array()) x.fail(x.at("fixed"), "expected an array of field paths, got " + excerpt(*fixed));
            for (const auto& p : *fixed) {
                if (!p.is_string() || !std::regex_match(p.get<std::string>(), path))
                    x.fail(x.at("fixed"), "expected paths like \"faults.0.at_ms\", \"faults.*.client\", "
                                    "\"workload.start_stagger_ms\" or \"seed\", got " + excerpt(p));
                s.explore_fixed.push_back(p.get<std::string>());
            }
        }
        x.finish();
    }
    const nlohmann::json* faults = f.get("faults");
    const nlohmann::json scenario_faults = faults ? *faults : nlohmann::json::array();
    const nlohmann::json* runs = f.get("runs");
    if (!runs || !runs->is_array() || runs->empty())
        f.fail("runs", "required, expected a non-empty array of runs");
    std::set<std::string> names;
    for (size_t i = 0; i < runs->size(); ++i) {
        const std::string path = "runs[" + std::to_string(i) + "]";
        s.runs.push_back(parse_run((*runs)[i], path, file, s.workload, scenario_faults));
        if (!names.insert(s.runs.back().name).second)
            f.fail(path + ".name", quoted_excerpt(s.runs.back().name) + " is used by an earlier run; give one of them another \"name\"");
    }
    f.finish();
    return s;
}

namespace {

// The file as JSON, refusing in one line what would otherwise end in an exception text or a
// crash: a folder, a file of absurd size, nesting deep enough to exhaust the stack of every
// recursive walk over the value afterwards.
nlohmann::json read_scenario_json(const std::filesystem::path& file) {
    constexpr std::uintmax_t kMaxBytes = 1 << 20;
    constexpr int kMaxDepth = 64;
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
        throw ScenarioError(file.string() + ": a folder, not a scenario file (name one of its .json files)");
    const std::uintmax_t bytes = std::filesystem::file_size(file, ec);
    if (!ec && bytes > kMaxBytes)
        throw ScenarioError(file.string() + ": " + std::to_string(bytes) + " bytes; a scenario file is at most 1 MiB");
    std::ifstream in(file);
    if (!in) throw ScenarioError(file.string() + ": cannot open");
    const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxDepth)
            throw ScenarioError(file.string() + ": nested more than " + std::to_string(kMaxDepth) + " levels deep");
        return true;
    };
    try {
        return nlohmann::json::parse(in, limit_depth);
    } catch (const nlohmann::json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 9: ...; last read: '...'"
        const std::string what = e.what();
        throw ScenarioError(file.string() + ": not valid JSON: " + excerpt_text(what.substr(what.find(']') + 2), 160));
    } catch (const std::ios_base::failure& e) {
        throw ScenarioError(file.string() + ": cannot read: " + e.code().message());
    }
}

}  // namespace

Scenario load_scenario(const std::filesystem::path& file) {
    return parse_scenario(read_scenario_json(file), file.string());
}

void select_runs(Scenario& s, const std::vector<std::string>& names) {
    if (names.empty()) return;
    for (const auto& n : names) {
        const bool known = std::ranges::any_of(s.runs, [&](const RunSpec& r) { return r.name == n || r.algorithm->name == n; });
        if (!known) throw ScenarioError(s.path + ": --algorithm " + n + ": no run of that algorithm or name in this scenario");
    }
    std::erase_if(s.runs, [&](const RunSpec& r) {
        return std::ranges::none_of(names, [&](const std::string& n) { return r.name == n || r.algorithm->name == n; });
    });
}

}  // namespace lockbench
