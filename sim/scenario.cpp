#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sim/external.h"

namespace lockbench {
namespace {

// A JSON object under validation: every field read is ticked off, and finish() rejects the
// rest, so a typo is an error rather than a silently ignored setting.
class Fields {
public:
    Fields(const nlohmann::json& j, std::string path, const std::string& file)
        : j_(j), path_(std::move(path)), file_(file) {
        if (!j_.is_object()) fail(path_, "expected an object, got " + j_.dump());
    }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw ScenarioError(file_ + ": " + (field.empty() ? "(top level)" : field) + ": " + what);
    }
    std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

    const nlohmann::json* get(const std::string& key) {
        seen_.insert(key);
        auto it = j_.find(key);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    template <typename T, typename Check>
    T value(const std::string& key, T fallback, Check ok, const char* expected) {
        const nlohmann::json* v = get(key);
        if (!v) return fallback;
        if (!ok(*v)) fail(at(key), std::string("expected ") + expected + ", got " + v->dump());
        return v->get<T>();
    }
    long long integer(const std::string& key, long long fallback, long long min) {
        auto v = value<long long>(key, fallback, [](const auto& x) { return x.is_number_integer(); }, "an integer");
        if (v < min) fail(at(key), "expected an integer >= " + std::to_string(min) + ", got " + std::to_string(v));
        return v;
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

Distribution parse_distribution(const nlohmann::json& j, const std::string& path, const std::string& file) {
    const std::string expected =
        "{\"fixed\": MS}, {\"uniform\": [MIN_MS, MAX_MS]} or {\"exponential\": MEAN_MS}";
    const auto bad = [&] { throw ScenarioError(file + ": " + path + ": expected " + expected + ", got " + j.dump()); };
    if (!j.is_object() || j.size() != 1) bad();
    const auto& [kind, v] = *j.items().begin();
    const auto non_negative = [](const nlohmann::json& x) { return x.is_number() && x.get<double>() >= 0; };
    if (kind == "fixed" && non_negative(v)) return {Distribution::Kind::fixed, v.get<double>(), 0};
    if (kind == "exponential" && non_negative(v)) return {Distribution::Kind::exponential, v.get<double>(), 0};
    if (kind == "uniform" && v.is_array() && v.size() == 2 && non_negative(v[0]) && non_negative(v[1]) &&
        v[0].get<double>() <= v[1].get<double>())
        return {Distribution::Kind::uniform, v[0].get<double>(), v[1].get<double>()};
    bad();
    return {};  // not reached: bad() throws
}

Distribution distribution(Fields& f, const std::string& key, Distribution fallback, const std::string& file) {
    const nlohmann::json* v = f.get(key);
    return v ? parse_distribution(*v, f.at(key), file) : fallback;
}

WorkloadSpec parse_workload(const nlohmann::json& j, const std::string& file) {
    Fields f(j, "workload", file);
    WorkloadSpec w;
    w.clients = static_cast<int>(f.integer("clients", w.clients, 1));
    if (w.clients > 64) f.fail("workload.clients", "expected at most 64 clients, got " + std::to_string(w.clients));
    w.duration_ms = f.integer("duration_ms", w.duration_ms, 1);
    if (const nlohmann::json* n = f.get("sections_per_client")) {
        if (!n->is_number_integer() || n->get<long long>() < 1)
            f.fail("workload.sections_per_client", "expected an integer >= 1, got " + n->dump());
        w.sections_per_client = n->get<long long>();
    }
    w.work_ms = distribution(f, "work_ms", w.work_ms, file);
    w.retry_ms = distribution(f, "retry_ms", w.retry_ms, file);
    w.think_ms = distribution(f, "think_ms", w.think_ms, file);
    w.start_stagger_ms = f.integer("start_stagger_ms", 0, 0);
    if (const nlohmann::json* slow = f.get("slow")) {
        Fields s(*slow, "workload.slow", file);
        w.slow_probability = s.value<double>("probability", 0.0, [](const auto& x) {
            return x.is_number() && x.template get<double>() >= 0 && x.template get<double>() <= 1;
        }, "a number from 0 to 1");
        if (!s.get("work_ms")) s.fail("workload.slow.work_ms", "required, expected a distribution");
        w.slow_work_ms = distribution(s, "work_ms", w.slow_work_ms, file);
        s.finish();
    }
    f.finish();
    return w;
}

// Names become folder names: keep them to one harmless path component.
void check_name(Fields& f, const std::string& field, const std::string& name) {
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._+=-]*");
    if (!std::regex_match(name, ok))
        f.fail(field, "expected a name of letters, digits and . _ + = - (not starting with . or -), got \"" + name + "\"");
}

Expectation parse_expectation(const std::string& metric, const nlohmann::json& v, const std::string& path,
                              const std::string& file) {
    const auto& known = expectable_metrics();
    if (std::ranges::count(known, metric) == 0) {
        std::string list;
        for (const auto& m : known) list += (list.empty() ? "" : ", ") + m;
        throw ScenarioError(file + ": " + path + ": unknown metric (known: " + list + ")");
    }
    std::istringstream in(v.is_string() ? v.get<std::string>() : "");
    Expectation e{metric, "", 0};
    in >> e.op >> e.value;
    const std::set<std::string> ops{"==", "!=", "<", "<=", ">", ">="};
    std::string rest;
    if (!v.is_string() || !in || !ops.contains(e.op) || (in >> rest))
        throw ScenarioError(file + ": " + path + ": expected a comparison such as \"== 0\" or \">= 1\", got " + v.dump());
    return e;
}

void parse_link(Fields& f, FaultSpec& s, const WorkloadSpec& w) {
    const std::string mode = f.required_string("mode");
    const std::map<std::string, LinkFault::Kind> modes{{"pass", LinkFault::Kind::pass}, {"delay", LinkFault::Kind::delay},
        {"blackhole", LinkFault::Kind::blackhole}, {"hold", LinkFault::Kind::hold}, {"reset", LinkFault::Kind::reset}};
    if (!modes.contains(mode)) f.fail(f.at("mode"), "expected pass, delay, blackhole, hold or reset, got \"" + mode + "\"");
    s.link.kind = modes.at(mode);
    s.link.latency = std::chrono::milliseconds(f.integer("latency_ms", 0, 0));
    s.link.jitter = std::chrono::milliseconds(f.integer("jitter_ms", 0, 0));
    const bool timed = s.link.latency.count() > 0 || s.link.jitter.count() > 0;
    if (s.link.kind == LinkFault::Kind::delay && !timed)
        f.fail(f.at("latency_ms"), "a delay needs latency_ms or jitter_ms above 0");
    if (s.link.kind != LinkFault::Kind::delay && timed)
        f.fail(f.at("latency_ms"), "latency_ms and jitter_ms belong to mode \"delay\" only");
    const std::string direction = f.string("direction", "both");
    if (direction == "upstream") s.direction = Direction::upstream;
    else if (direction == "downstream") s.direction = Direction::downstream;
    else if (direction != "both") f.fail(f.at("direction"), "expected both, upstream or downstream, got \"" + direction + "\"");
    if (const nlohmann::json* nodes = f.get("nodes")) {
        if (!nodes->is_array()) f.fail(f.at("nodes"), "expected an array of lock node indices, got " + nodes->dump());
        for (const auto& n : *nodes) {
            if (!n.is_number_integer() || n.get<int>() < 0) f.fail(f.at("nodes"), "expected node indices >= 0, got " + n.dump());
            s.link_nodes.push_back(n.get<int>());
        }
    }
    s.link_store = f.value<bool>("store", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    s.link_replication = f.value<bool>("replication", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    if (s.link_nodes.empty() && !s.link_store && !s.link_replication)
        f.fail(f.at("nodes"), "a link fault needs \"nodes\", \"store\" or \"replication\"");
    // Whose paths: every client's ("clients": "all"), the given client's, or at a point the
    // client that reached it; at a time with no client named, everyone's.
    if (f.get("clients")) {
        const std::string clients = f.string("clients", "");
        if (clients != "all") f.fail(f.at("clients"), "expected \"all\" (or leave it out and give \"client\"), got \"" + clients + "\"");
        if (s.client) f.fail(f.at("clients"), "give either \"clients\": \"all\" or \"client\", not both");
    }
    s.all_clients = f.get("clients") != nullptr || (s.at_ms && !s.client);
    if (f.get("duration_ms")) s.duration_ms = f.integer("duration_ms", 0, 1);  // unset: until the run ends
    if (s.at_ms && s.at_ms.value() + s.duration_ms > w.duration_ms)
        f.fail(f.at("duration_ms"), "the fault would end after the run (workload.duration_ms = " + std::to_string(w.duration_ms) + ")");
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
    else f.fail(f.at("fault"), "expected \"pause\", \"kill\", \"gate\", \"clock\", \"link\" or \"crash\", got \"" + kind + "\"");
    const bool by_point = f.get("point") != nullptr, by_time = f.get("at_ms") != nullptr;
    if (by_point == by_time) f.fail(path, "expected exactly one of \"point\" or \"at_ms\"");
    if (by_point) {
        const std::string name = f.string("point", "");
        s.point = parse_point(name);
        if (!s.point) f.fail(f.at("point"), "expected before_acquire, after_acquire, during_acquire, after_seen_expired, before_write, "
                                            "between_setnx_and_expire or before_release, got \"" + name + "\"");
        s.occurrence = static_cast<int>(f.integer("occurrence", 1, 1));
    } else {
        s.at_ms = f.integer("at_ms", 0, 0);
        if (*s.at_ms >= w.duration_ms)
            f.fail(f.at("at_ms"), "the run ends at " + std::to_string(w.duration_ms) + " ms (workload.duration_ms)");
        const bool has_target = f.get("client") || f.get("node") || s.kind == FaultSpec::Kind::link;
        if (!has_target) f.fail(f.at("client"), "required with at_ms: which client");
    }
    if (f.get("client")) {
        s.client = static_cast<int>(f.integer("client", 0, 0));
        if (*s.client >= w.clients)
            f.fail(f.at("client"), "no such client: the workload has " + std::to_string(w.clients) + " (0.." +
                                       std::to_string(w.clients - 1) + ")");
    }
    if (s.kind == FaultSpec::Kind::pause) {
        if (!f.get("duration_ms")) f.fail(f.at("duration_ms"), "required for a pause");
        s.duration_ms = f.integer("duration_ms", 0, 1);
        // At a point its start is unknown; at the least it must fit in the run.
        if (s.at_ms.value_or(0) + s.duration_ms > w.duration_ms)
            f.fail(f.at("duration_ms"), "the pause would end after the run (workload.duration_ms = " +
                                            std::to_string(w.duration_ms) + ")");
    }
    if (s.kind == FaultSpec::Kind::clock) {
        const bool jumps = f.get("jump_ms") != nullptr, drifts = f.get("rate") != nullptr;
        if (!jumps && !drifts) f.fail(path, "a clock fault needs \"jump_ms\", \"rate\" or both");
        s.jump_ms = f.value<long long>("jump_ms", 0, [](const auto& x) { return x.is_number_integer(); }, "an integer");
        if (drifts)
            s.rate = f.value<double>("rate", 1.0, [](const auto& x) { return x.is_number() && x.template get<double>() > 0; },
                                     "a number > 0");
        if (f.get("node")) s.node = static_cast<int>(f.integer("node", 0, 0));
    } else if (s.kind == FaultSpec::Kind::crash) {
        if (!f.get("node")) f.fail(f.at("node"), "required: which lock node crashes");
        s.node = static_cast<int>(f.integer("node", 0, 0));
        if (f.get("restart_after_ms")) s.restart_after_ms = f.integer("restart_after_ms", 0, 0);
        if (s.restart_after_ms && s.at_ms.value_or(0) + *s.restart_after_ms >= w.duration_ms)
            f.fail(f.at("restart_after_ms"), "the restart would come after the run (workload.duration_ms = " +
                                                 std::to_string(w.duration_ms) + ")");
    } else if (f.get("node")) {
        f.fail(f.at("node"), "only a clock or crash fault aims at a node");
    }
    if (s.kind == FaultSpec::Kind::link) parse_link(f, s, w);
    if (s.kind != FaultSpec::Kind::pause && s.kind != FaultSpec::Kind::link && f.get("duration_ms"))
        f.fail(f.at("duration_ms"), "only a pause or a link fault lasts a duration");
    if (s.kind == FaultSpec::Kind::gate) {
        s.count = static_cast<int>(f.integer("count", 2, 2));
        if (s.count > w.clients) f.fail(f.at("count"), "more than the workload's " + std::to_string(w.clients) + " clients");
        s.stagger_ms = f.integer("stagger_ms", 0, 0);
        if (!s.point) f.fail(path, "a gate holds clients at a point: give \"point\"");
        if (s.client) f.fail(f.at("client"), "a gate gathers several clients: it cannot name one");
    }
    f.finish();
    return s;
}

std::vector<FaultSpec> parse_faults(const nlohmann::json& j, const std::string& path, const std::string& file,
                                    const WorkloadSpec& w) {
    if (!j.is_array()) throw ScenarioError(file + ": " + path + ": expected an array of faults, got " + j.dump());
    std::vector<FaultSpec> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(parse_fault(j[i], path + "[" + std::to_string(i) + "]", file, w));
    return out;
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
        f.fail(f.at("algorithm"), "unknown algorithm \"" + algorithm + "\" (known: " + list + ", external)");
    }
    if (algorithm == "external") {
        // A library in another process: its adapter command and the name the results use.
        const nlohmann::json* command = f.get("command");
        if (!command) f.fail(f.at("command"), "required with \"algorithm\": \"external\": the adapter's command, e.g. "
                                              "[\"/usr/bin/python3\", \"adapters/redis_py_lock.py\"]");
        if (!command->is_array() || command->empty() ||
            !std::ranges::all_of(*command, [](const auto& a) { return a.is_string() && !a.template get<std::string>().empty(); }))
            f.fail(f.at("command"), "expected a non-empty array of non-empty strings, got " + command->dump());
        r.command = command->get<std::vector<std::string>>();
        if (!f.get("name")) f.fail(f.at("name"), "required with \"algorithm\": \"external\" (e.g. \"redis-py\")");
    } else if (f.get("command")) {
        f.fail(f.at("command"), "only an \"external\" algorithm runs a command");
    }
    std::string error;
    const nlohmann::json* params = f.get("params");
    if (!resolve_params(r.algorithm->params, params ? *params : nlohmann::json::object(), r.params, error))
        f.fail(f.at("params") + error.substr(0, error.find(':')), error.substr(error.find(':') + 2));
    r.nodes = static_cast<int>(f.integer("nodes", r.algorithm->default_nodes, 1));
    if (r.nodes > 16) f.fail(f.at("nodes"), "expected at most 16 nodes, got " + std::to_string(r.nodes));
    r.name = f.string("name", default_run_name(algorithm, r.algorithm->params, r.params));
    check_name(f, f.at("name"), r.name);
    const nlohmann::json* own = f.get("faults");
    r.faults_source = own ? *own : scenario_faults;
    r.faults = parse_faults(r.faults_source, own ? f.at("faults") : "faults", file, w);
    for (size_t i = 0; i < r.faults.size(); ++i) {
        const std::string at = (own ? f.at("faults") : std::string("faults")) + "[" + std::to_string(i) + "]";
        const std::string has = "no such node: this run has " + std::to_string(r.nodes) + " lock node(s)";
        if (r.faults[i].node && *r.faults[i].node >= r.nodes) f.fail(at + ".node", has);
        for (int n : r.faults[i].link_nodes)
            if (n >= r.nodes) f.fail(at + ".nodes", has + ", got " + std::to_string(n));
    }
    const std::string topology = f.string("topology", "plain");
    if (topology != "plain" && topology != "sentinel")
        f.fail(f.at("topology"), "expected \"plain\" or \"sentinel\", got \"" + topology + "\"");
    r.sentinel = topology == "sentinel";
    if (r.sentinel && r.nodes != 1) f.fail(f.at("topology"), "a sentinel topology has one lock node (a master), not " + std::to_string(r.nodes));
    for (size_t i = 0; i < r.faults.size(); ++i)
        if (r.faults[i].link_replication && !r.sentinel)
            f.fail((own ? f.at("faults") : std::string("faults")) + "[" + std::to_string(i) + "].replication",
                   "there is a replication link only with \"topology\": \"sentinel\"");
    r.check_lease_before_write =
        f.value<bool>("check_lease_before_write", false, [](const auto& x) { return x.is_boolean(); }, "true or false");
    const std::string persistence = f.string("persistence", "none");
    if (persistence == "aof-always") r.persistence = Persistence::aof_always;
    else if (persistence == "aof-everysec") r.persistence = Persistence::aof_everysec;
    else if (persistence != "none")
        f.fail(f.at("persistence"), "expected none, aof-always or aof-everysec, got \"" + persistence + "\"");
    if (const nlohmann::json* expect = f.get("expect")) {
        Fields e(*expect, f.at("expect"), file);
        for (const auto& [metric, v] : expect->items()) {
            e.get(metric);
            r.expect.push_back(parse_expectation(metric, v, f.at("expect") + "." + metric, file));
        }
        e.finish();
    }
    f.finish();
    return r;
}

}  // namespace

const std::vector<std::string>& expectable_metrics() {
    static const std::vector<std::string> metrics = {
        "acquire_attempts", "acquired", "released", "sections_completed",
        "mutual_exclusion_violations", "fenced_overlaps", "lost_updates", "stale_writes_accepted",
        "stale_writes_rejected", "foreign_releases", "unavailable_ms", "longest_unavailable_ms",
        "faults_injected"};
    return metrics;
}

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
    s.seed = static_cast<std::uint64_t>(f.integer("seed", 1, 0));
    s.lock_key = f.string("lock_key", s.lock_key);
    if (f.get("base_port")) {
        s.base_port = static_cast<int>(f.integer("base_port", 0, 1024));
        if (*s.base_port > 65000) f.fail("base_port", "expected an integer from 1024 to 65000, got " + std::to_string(*s.base_port));
    }
    if (const nlohmann::json* client = f.get("client")) {
        Fields c(*client, "client", file);
        s.command_timeout_ms = c.integer("command_timeout_ms", s.command_timeout_ms, 1);
        s.connect_timeout_ms = c.integer("connect_timeout_ms", s.connect_timeout_ms, 1);
        c.finish();
    }
    if (const nlohmann::json* w = f.get("workload")) s.workload = parse_workload(*w, file);
    if (const nlohmann::json* e = f.get("explore")) {
        Fields x(*e, "explore", file);
        if (const nlohmann::json* fixed = x.get("fixed")) {
            static const std::regex path(
                R"((seed|workload\.start_stagger_ms|faults\.(\d+|\*)\.(occurrence|client|node|nodes|duration_ms|jump_ms|at_ms|restart_after_ms)))");
            if (!fixed->is_array()) x.fail(x.at("fixed"), "expected an array of field paths, got " + fixed->dump());
            for (const auto& p : *fixed) {
                if (!p.is_string() || !std::regex_match(p.get<std::string>(), path))
                    x.fail(x.at("fixed"), "expected paths like \"faults.0.at_ms\", \"faults.*.client\", "
                                    "\"workload.start_stagger_ms\" or \"seed\", got " + p.dump());
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
            f.fail(path + ".name", "\"" + s.runs.back().name + "\" is used by an earlier run; give one of them another \"name\"");
    }
    f.finish();
    return s;
}

Scenario load_scenario(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw ScenarioError(file.string() + ": cannot open");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw ScenarioError(file.string() + ": not valid JSON: " + e.what());
    }
    return parse_scenario(j, file.string());
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
