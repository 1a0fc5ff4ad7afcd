// lockbench_bench: how fast one client can take and give back a lock, and how fast the
// checker reads a history. Google Benchmark; the binary starts its own redis-servers.
//
//   cycle/<algorithm>   one lock cycle (try_acquire, then release, empty critical section)
//                       through the registry's algorithm and a LiveEnv, one client, every
//                       iteration checking that the acquire succeeded. The names are the
//                       CLI's: setnx, getset, token-lua, token-lua+fence, redlock, reentrant.
//                       Redlock runs over five nodes (LiveEnv::fan_out), the others over one.
//   cycle/token-lua+history  the same cycle, also writing the four history lines a worker
//                       writes for it (acquire and release, invoke and ok) to a file: what
//                       recording costs.
//   cycle/bare-hiredis  token-lua's two commands (SET key token NX PX ttl, then EVAL of
//                       kCompareAndDelete) straight through redisCommandArgv, no harness:
//                       the floor the harness is measured against.
//   cycle/redis-py      the same cycle through an external library's adapter (sim/live/external.h),
//   cycle/node-redlock  as a run drives it: redis-py's Lock on node 0; node-redlock over five.
//   cycle/zookeeper     the cycle through the consensus services' lock adapters: kazoo's Lock
//   cycle/zookeeper-3   recipe (adapters/kazoo-lock) on one ZooKeeper server and on an
//   cycle/etcd          ensemble of three; etcd's v3 Lock RPC (adapters/etcd-lock) on one
//   cycle/etcd-3        member and on three. Each service starts once, before its first cycle.
//   start/<service>     how long a fresh service takes to answer (and, for three servers, to
//                       elect a leader), as a run starts it: start/redis, start/zookeeper,
//                       start/zookeeper-3, start/etcd, start/etcd-3 (ms per start).
//   lock/<name>         every external lock file of locks/ (its command, params, service and
//   ready/<name>        pooler, on servers started once): its cycle, and its adapter's start
//                       from spawn to the ready line (ms per start, 5 starts).
//   cycle/echo-python   the same protocol with an adapter that answers at once and touches
//   cycle/echo-node     no Redis (bench/echo_adapter.*): the protocol's own cost per cycle,
//                       in each adapter language (a cycle is two round trips).
//   sim/<algorithm>     the same cycle in the simulator (sim/virtual/sim_env.h): the unchanged
//                       algorithm against a modelled node in virtual time, one fiber, one
//                       core; what a schedule search can afford. Target: token-lua >= 100k/s.
//   explore/<case>      lockbench explore on a catalog case, its fault timing randomised,
//                       stopping at the first violating schedule: seconds_to_violation (the
//                       wall time until the known violation is found; target < 1 s).
//   explore/fenced-10k  10,000 schedules of fenced token-lua on one node that never fails
//                       over, under a GC pause and a delayed write: violations must stay 0;
//                       schedules_per_second. Long (about a minute): --benchmark_filter it.
//   checker/1M-events   check() over a generated valid history of a million client events
//                       (tests/history_gen.h; generated before the timed loop).
//
// Counters: cycles_per_second (lock cycles per wall-clock second) and events_per_second
// (history events checked per second). Targets, read side by side from one run:
// token-lua >= 0.9 x bare-hiredis, redlock >= 0.35 x token-lua, checker >= 5M events/s.
//
// The redis-servers (five, bound to 127.0.0.1 on free ports, no persistence, in a folder from
// make_run_temp_dir()) start the first time a cycle benchmark runs and stop at exit, so
// `--benchmark_filter=checker` starts none. They share the machine's cores with the client,
// which makes every cycle figure partly a measure of the scheduler: compare figures from one
// run only. Each benchmark uses its own key and deletes it before timing.
//
// Build and run (2 cores here, so -j2):
//   cmake -S . -B build && cmake --build build -j2 --target lockbench_bench
//   build/bench/lockbench_bench --benchmark_repetitions=3 --benchmark_min_time=1
//   build/bench/lockbench_bench --benchmark_filter='cycle/(token-lua|bare-hiredis)/'
// Set LOCKBENCH_REDIS_SERVER to use another redis-server binary.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <unistd.h>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/checker.h"
#include "process/process.h"
#include "lockimpl/registry.h"
#include "sim/live/external.h"
#include "sim/live/live_env.h"
#include "sim/harness/compose.h"
#include "sim/harness/explore.h"
#include "sim/virtual/sim_env.h"
#include "sim/engine/lock_file.h"
#include "sim/engine/recorder.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"
#include "tests/history_gen.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;

constexpr int kNodes = 5;                       // Redlock's default; node 0 serves the rest
constexpr Duration kCommandTimeout = std::chrono::milliseconds(200);
constexpr long long kCheckerEvents = 1'000'000;

// The redis-servers, started once per process on first use and stopped at exit. Started
// from the main thread (Google Benchmark runs single-threaded benchmarks there), as
// ChildProcess requires for its parent-death signal.
class Cluster {
public:
    static Cluster& get() {
        static Cluster cluster;
        return cluster;
    }

    // The first `count` nodes, as LiveEnv endpoints.
    std::vector<Endpoint> endpoints(int count) const {
        std::vector<Endpoint> out;
        for (int i = 0; i < count; ++i) out.push_back({"127.0.0.1", nodes_[static_cast<size_t>(i)].port()});
        return out;
    }

    ~Cluster() {
        for (RedisNode& n : nodes_) n.stop();  // SIGTERM and wait; the destructor would SIGKILL
        nodes_.clear();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

private:
    Cluster() : dir_(make_run_temp_dir()) {
        nodes_.reserve(kNodes);
        for (int i = 0; i < kNodes; ++i)
            nodes_.emplace_back(RedisNodeConfig{"lock" + std::to_string(i), std::nullopt, Persistence::none, {}},
                                dir_);
    }

    fs::path dir_;
    std::vector<RedisNode> nodes_;
};

// One benchmark's lock under test, with the environment it runs in.
struct LockUnderTest {
    std::unique_ptr<LiveEnv> env;
    std::unique_ptr<Lock> lock;
};

// Builds the algorithm from the registry, as the CLI would, and clears its keys. Throws on
// a misspelt name or parameter: that is a bug in this file.
LockUnderTest make_lock(const std::string& algorithm, const nlohmann::json& given, const std::string& key) {
    const AlgorithmInfo* info = find_algorithm(algorithm);
    if (!info) throw std::runtime_error("no algorithm " + algorithm);
    Params params;
    std::string error;
    if (!resolve_params(info->params, given, params, error))
        throw std::runtime_error(algorithm + ": " + error);
    LiveEnvConfig config;
    config.nodes = Cluster::get().endpoints(info->default_nodes);
    LockUnderTest out{std::make_unique<LiveEnv>(std::move(config)),
                      info->make(params, LockContext{key, 0, kCommandTimeout})};
    // Also opens the connections, so that connecting is not timed.
    out.env->fan_out({"DEL", key, key + ":fence"}, kCommandTimeout, std::nullopt);
    return out;
}

void set_cycle_rate(benchmark::State& state) {
    state.counters["cycles_per_second"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// cycle/<algorithm>: acquire then release, nothing in between.
void bm_cycle(benchmark::State& state, const std::string& name, const std::string& algorithm,
              const nlohmann::json& given, bool record = false) {
    LockUnderTest t;
    try {
        t = make_lock(algorithm, given, "lockbench:bench:" + name);
    } catch (const std::exception& e) {  // redis-server missing, or a misspelt parameter
        state.SkipWithError(e.what());
        return;
    }
    const fs::path history = fs::temp_directory_path() / ("lockbench-bench-history-" + std::to_string(getpid()));
    std::optional<Recorder> rec;
    if (record) rec.emplace(history.string(), 0);
    for (auto _ : state) {
        if (rec) rec->line("acquire", "invoke").num("depth", 1).commit();
        const AcquireResult acquired = t.lock->try_acquire(*t.env);
        if (acquired.outcome != Outcome::ok || !acquired.lease) {
            state.SkipWithError(("acquire " + std::string(outcome_name(acquired.outcome)) + ": " +
                                 acquired.detail).c_str());
            break;
        }
        if (rec) rec->line("acquire", "ok").num("depth", 1).str("lease", "c0.1").str("token", acquired.lease->token).nodes(1).commit();
        if (rec) rec->line("release", "invoke").str("lease", "c0.1").num("depth", 1).commit();
        const ReleaseResult released = t.lock->release(*t.env, *acquired.lease);
        if (rec) rec->line("release", "ok").str("lease", "c0.1").num("depth", 1).nodes(1).commit();
        if (released.outcome != Outcome::ok) {
            state.SkipWithError(("release: " + released.detail).c_str());
            break;
        }
    }
    set_cycle_rate(state);
    rec.reset();
    fs::remove(history);
}

// ZooKeeper and etcd services of some sizes, each started the first time a benchmark asks
// for it; at exit they stop and their folder goes.
class Services {
public:
    static LockService& get(Service which, int size, const std::string& pgbouncer = "") {
        static Services services;
        auto& s = services.started_[{which, size, pgbouncer}];
        if (!s) {
            ServiceConfig config{size, services.dir_ / (std::string(service_name(which)) + std::to_string(size) + pgbouncer)};
            config.pgbouncer = pgbouncer;
            s = start_service(which, config);
        }
        return *s;
    }
    ~Services() {
        started_.clear();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

private:
    fs::path dir_ = make_run_temp_dir();
    std::map<std::tuple<Service, int, std::string>, std::unique_ptr<LockService>> started_;
};

// Where an adapter finds the servers: the first `nodes` Redis nodes, or a service's servers.
std::string adapter_addresses(std::optional<Service> which, int nodes) {
    std::string addresses;
    const auto add = [&](int port) { addresses += (addresses.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port); };
    if (which)
        for (const LockServer* s : Services::get(*which, nodes).servers()) add(s->port());
    else
        for (const Endpoint& e : Cluster::get().endpoints(nodes)) add(e.port);
    return addresses;
}

// cycle/<library>: the cycle through an adapter process, as a run's client drives it.
void bm_external(benchmark::State& state, const std::string& name, std::vector<std::string> command, int nodes,
                 std::optional<Service> which = std::nullopt) {
    LockUnderTest t;
    try {
        const std::string key = "lockbench:bench:" + name;
        LiveEnvConfig config;
        config.nodes = Cluster::get().endpoints(which ? 1 : nodes);  // the key is cleared on the Redis nodes
        t.env = std::make_unique<LiveEnv>(std::move(config));
        t.env->fan_out({"DEL", key}, kCommandTimeout, std::nullopt);
        const std::string addresses = adapter_addresses(which, nodes);
        AdapterSpec spec{name, std::move(command), LOCKBENCH_SOURCE_DIR,
                         {{"LOCKBENCH_NODES", addresses}, {"LOCKBENCH_KEY", key}, {"LOCKBENCH_CLIENT", "0"},
                          {"LOCKBENCH_TTL_MS", "500"}, {"LOCKBENCH_PARAMS", "{}"},
                          // A consensus service's answer may wait out an election: the
                          // catalog gives its runs a 500 ms command timeout.
                          {"LOCKBENCH_COMMAND_TIMEOUT_MS", which ? "500" : "200"},
                          {"LOCKBENCH_OP_TIMEOUT_MS", which ? "5000" : "2000"},
                          {"LOCKBENCH_CONNECT_TIMEOUT_MS", "1000"}},
                         std::chrono::milliseconds(which ? 5000 : 2000), {}};
        t.lock = std::make_unique<ExternalLock>(std::move(spec), key, 500);
    } catch (const std::exception& e) {  // node or a library missing: scripts/setup installs them
        state.SkipWithError(e.what());
        return;
    }
    for (auto _ : state) {
        const AcquireResult acquired = t.lock->try_acquire(*t.env);
        if (acquired.outcome != Outcome::ok || !acquired.lease) {
            state.SkipWithError(("acquire " + std::string(outcome_name(acquired.outcome)) + ": " + acquired.detail).c_str());
            break;
        }
        if (t.lock->release(*t.env, *acquired.lease).outcome != Outcome::ok) {
            state.SkipWithError("release failed");
            break;
        }
    }
    set_cycle_rate(state);
}

// What a lock file's adapter is given, as a run's client 0 gets it, on the servers this
// benchmark binary keeps (the lock's key cleared first on the Redis nodes).
struct LockBench {
    std::unique_ptr<LiveEnv> env;
    AdapterSpec spec;
};

LockBench lock_bench(const LockFile& lock) {
    const std::optional<Service> which = service_info(lock.service).run_starts_nodes ? std::nullopt : std::optional(lock.service);
    const std::string key = "lockbench:bench:" + lock.name;
    LiveEnvConfig config;
    config.nodes = Cluster::get().endpoints(which ? 1 : lock.nodes);
    auto env = std::make_unique<LiveEnv>(std::move(config));
    env->fan_out({"DEL", key}, kCommandTimeout, std::nullopt);
    std::string addresses;
    std::map<std::string, std::string> service_env;
    if (which) {
        LockService& service = Services::get(*which, lock.nodes, lock.pgbouncer);
        for (const LockServer* s : service.servers()) addresses += (addresses.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
        service_env = service.client_env();
    } else {
        addresses = adapter_addresses(std::nullopt, lock.nodes);
    }
    nlohmann::json params = lock.params;
    params[lock.ttl_param] = 1000;  // whole seconds too
    AdapterSpec spec{lock.name, lock.command, lock.dir,
                     {{"LOCKBENCH_NODES", addresses}, {"LOCKBENCH_KEY", key}, {"LOCKBENCH_CLIENT", "0"},
                      {"LOCKBENCH_TTL_MS", "1000"}, {"LOCKBENCH_PARAMS", params.dump()},
                      {"LOCKBENCH_COMMAND_TIMEOUT_MS", which ? "500" : "200"},
                      {"LOCKBENCH_OP_TIMEOUT_MS", which ? "5000" : "2000"},
                      {"LOCKBENCH_CONNECT_TIMEOUT_MS", "1000"},
                      {"LOCKBENCH_KIT", (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "kit").string()}},
                     std::chrono::milliseconds(which ? 5000 : 2000), {}, lock.fenced()};
    for (const auto& [name, value] : service_env) spec.env[name] = value;
    return {std::move(env), std::move(spec)};
}

// lock/<name>: a lock file's cycle through its adapter; ready/<name>: its adapter's start, from
// spawn to its ready line (each start a fresh process, as every client of a run is).
void bm_lock_file(benchmark::State& state, const LockFile& lock, bool start_only) {
    try {
        LockBench b = lock_bench(lock);
        if (start_only) {
            for (auto _ : state) ExternalLock started(b.spec, "lockbench:bench:" + lock.name, 1000);
            return;
        }
        ExternalLock adapter(b.spec, "lockbench:bench:" + lock.name, 1000);
        for (auto _ : state) {
            const AcquireResult acquired = adapter.try_acquire(*b.env);
            if (acquired.outcome != Outcome::ok || !acquired.lease) {
                state.SkipWithError(("acquire " + std::string(outcome_name(acquired.outcome)) + ": " + acquired.detail).c_str());
                break;
            }
            if (adapter.release(*b.env, *acquired.lease).outcome != Outcome::ok) {
                state.SkipWithError("release failed");
                break;
            }
        }
        set_cycle_rate(state);
    } catch (const std::exception& e) {  // a library or a server missing: scripts/setup installs them
        state.SkipWithError(e.what());
    }
}

// start/<service>: a fresh service until it answers (an ensemble: until it has a leader).
void bm_start(benchmark::State& state, std::optional<Service> which, int size) {
    const fs::path dir = make_run_temp_dir();
    int round = 0;
    try {
        for (auto _ : state) {
            const fs::path here = dir / std::to_string(round++);
            std::unique_ptr<RedisNode> node;
            std::unique_ptr<LockService> s;
            if (!which) node = std::make_unique<RedisNode>(RedisNodeConfig{"lock0", std::nullopt, Persistence::none, {}}, here);
            else s = start_service(*which, {size, here});
            state.PauseTiming();  // stopping it is not starting it
            node.reset();
            s.reset();
            state.ResumeTiming();
        }
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
}

// sim/<algorithm>: the cycle inside a simulated world; the benchmark's loop runs in the fiber.
void bm_sim_cycle(benchmark::State& state, const std::string& algorithm, const nlohmann::json& given) {
    const AlgorithmInfo* info = find_algorithm(algorithm);
    Params params;
    std::string error;
    if (!info || !resolve_params(info->params, given, params, error)) {
        state.SkipWithError(("no algorithm " + algorithm + " " + error).c_str());
        return;
    }
    sim::World world(1);
    sim::Net net(world, 20'000, 80'000);
    std::vector<std::size_t> targets;
    for (int i = 0; i < info->default_nodes; ++i) {
        net.add_node("lock" + std::to_string(i), false);
        targets.push_back(static_cast<std::size_t>(i));
    }
    sim::Process process;
    sim::SimEnv env(net, process, targets, nullptr);
    const auto lock = info->make(params, LockContext{"lockbench:bench:sim", 0, kCommandTimeout});
    long long cycles = 0;
    sim::VTime end = sim::kWorldStart;
    world.spawn("bench", [&] {
        for (auto _ : state) {
            const AcquireResult acquired = lock->try_acquire(env);
            if (acquired.outcome != Outcome::ok || !acquired.lease) {
                state.SkipWithError(("acquire: " + acquired.detail).c_str());
                break;
            }
            lock->release(env, *acquired.lease);
            ++cycles;
        }
        end = world.now();
    });
    world.run(std::numeric_limits<long long>::max());
    set_cycle_rate(state);
    state.counters["virtual_ms_per_cycle"] =
        cycles ? static_cast<double>(end - sim::kWorldStart) / 1e6 / static_cast<double>(cycles) : 0.0;
}

// explore/<case>: the search, as `lockbench explore --first`, timed until the violation.
// A case of the catalog is searched against the one lock named `run` (locks/RUN.json).
void bm_explore(benchmark::State& state, const fs::path& scenario, const std::string& run, long long schedules,
                bool first) {
    const fs::path out = make_run_temp_dir();
    long long found = 0, schedules_run = 0;
    double to_violation = 0, wall = 0;
    const nlohmann::json file = read_input_json(scenario);
    std::vector<LockFile> locks;
    if (is_case_file(file)) locks.push_back(load_lock_file(fs::path(LOCKBENCH_SOURCE_DIR) / "locks" / (run + ".json")));
    const nlohmann::json source = scenario_from_source(file, scenario.string(), locks, LockChoice::asked).source;
    for (auto _ : state) {
        sim::ExploreOptions o{scenario, source, {run}, schedules, 1, out, false, first};
        const nlohmann::json r = sim::explore(o);
        found += r.at("violations_found").get<long long>();
        schedules_run += r.at("schedules_run").get<long long>();
        wall += r.at("wall_s").get<double>();
        const auto& first_s = r.at("runs").at(run).at("first_violation_s");
        to_violation = first_s.is_null() ? -1 : first_s.get<double>();
    }
    fs::remove_all(out);
    state.counters["violations_found"] = static_cast<double>(found);
    state.counters["seconds_to_violation"] = to_violation;
    state.counters["schedules_per_second"] = wall > 0 ? static_cast<double>(schedules_run) / wall : 0;
}

// One node, fenced, never failing over: a GC pause and a delayed write around a short lease.
const char* const kFencedSingleNode = R"({
  "name": "fenced-single-node", "seed": 1,
  "workload": {"clients": 3, "duration_ms": 400, "work_ms": {"uniform": [1, 3]}, "retry_ms": {"uniform": [1, 3]}},
  "faults": [
    {"fault": "pause", "point": "before_write", "occurrence": 3, "duration_ms": 150},
    {"fault": "link", "point": "before_write", "occurrence": 5, "mode": "hold", "direction": "upstream", "store": true, "duration_ms": 150}
  ],
  "runs": [{"algorithm": "token-lua", "name": "token-lua+fence", "params": {"ttl_ms": 100, "fence": true}}]
})";

// ---- cycle/bare-hiredis: the same two commands as token-lua, no harness -------------------

using HiredisReply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

// Older hiredis declares argv as const char** although it only reads it.
HiredisReply run_argv(redisContext* c, const std::vector<const char*>& argv, const std::vector<size_t>& lens) {
    void* raw = redisCommandArgv(c, static_cast<int>(argv.size()), const_cast<const char**>(argv.data()),
                                 lens.data());
    return HiredisReply(static_cast<redisReply*>(raw), freeReplyObject);
}

void bm_bare_hiredis(benchmark::State& state) {
    Endpoint node;
    try {
        node = Cluster::get().endpoints(1).front();
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    std::unique_ptr<redisContext, decltype(&redisFree)> c(redisConnect(node.host.c_str(), node.port), redisFree);
    if (!c || c->err) {
        state.SkipWithError("connect failed");
        return;
    }
    const std::string key = "lockbench:bench:bare-hiredis";
    const std::string ttl = "500";   // token-lua's default ttl_ms
    char token[33];                  // 32 hex digits, as token-lua's random_hex(env, 16)
    std::vector<const char*> set = {"SET", key.c_str(), token, "NX", "PX", ttl.c_str()};
    std::vector<size_t> set_lens = {3, key.size(), 32, 2, 2, ttl.size()};
    std::vector<const char*> del = {"EVAL", kCompareAndDelete, "1", key.c_str(), token};
    std::vector<size_t> del_lens = {4, std::char_traits<char>::length(kCompareAndDelete), 1, key.size(), 32};
    run_argv(c.get(), {"DEL", key.c_str()}, {3, key.size()});
    unsigned long long n = 0;
    for (auto _ : state) {
        std::snprintf(token, sizeof token, "%016llx%016llx", 0x5eedULL, ++n);  // unique per cycle
        const HiredisReply acquired = run_argv(c.get(), set, set_lens);
        if (!acquired || acquired->type != REDIS_REPLY_STATUS) {
            state.SkipWithError("SET NX did not answer OK");
            break;
        }
        const HiredisReply released = run_argv(c.get(), del, del_lens);
        if (!released || released->type != REDIS_REPLY_INTEGER || released->integer != 1) {
            state.SkipWithError("compare-and-delete did not delete");
            break;
        }
    }
    set_cycle_rate(state);
}

// ---- checker/1M-events -------------------------------------------------------------------

void bm_checker(benchmark::State& state) {
    const RunHistory h = histgen::generate_history(8, kCheckerEvents, 1);
    if (check(h).safety.mutual_exclusion_violations != 0) {
        state.SkipWithError("the generated history is not clean");
        return;
    }
    for (auto _ : state) {
        CheckResult r = check(h);
        benchmark::DoNotOptimize(r);
    }
    state.counters["events_per_second"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * static_cast<double>(h.events.size()),
        benchmark::Counter::kIsRate);
}

// Every cycle benchmark uses wall time: the client mostly waits on sockets, and CPU time
// would leave the waiting out of the rate.
// cycle/<service> and start/<service>: ZooKeeper's and etcd's locks, one server or three.
void register_service_benchmarks() {
    struct OnService {
        const char* name;
        Service service;
        int size;
    };
    const std::vector<OnService> services = {{"zookeeper", Service::zookeeper, 1}, {"zookeeper-3", Service::zookeeper, 3},
                                             {"etcd", Service::etcd, 1}, {"etcd-3", Service::etcd, 3}};
    for (const OnService& c : services) {
        const std::vector<std::string> command = {
            "/usr/bin/python3", c.service == Service::zookeeper ? "adapters/kazoo-lock/adapter.py" : "adapters/etcd-lock/adapter.py"};
        benchmark::RegisterBenchmark((std::string("cycle/") + c.name).c_str(), [c, command](benchmark::State& s) {
            bm_external(s, c.name, command, c.size, c.service);
        })->UseRealTime();
    }
    benchmark::RegisterBenchmark("start/redis", [](benchmark::State& s) { bm_start(s, std::nullopt, 1); })
        ->UseRealTime()->Iterations(5)->Unit(benchmark::kMillisecond);
    for (const OnService& c : services)
        benchmark::RegisterBenchmark((std::string("start/") + c.name).c_str(),
                                     [c](benchmark::State& s) { bm_start(s, c.service, c.size); })
            ->UseRealTime()->Iterations(3)->Unit(benchmark::kMillisecond);
}

void register_benchmarks() {
    struct Cycle {
        const char* name;            // as the CLI spells it
        const char* algorithm;
        nlohmann::json params;
    };
    const std::vector<Cycle> cycles = {
        {"setnx", "setnx", nlohmann::json::object()},
        {"getset", "getset", nlohmann::json::object()},
        {"token-lua", "token-lua", nlohmann::json::object()},
        {"token-lua+fence", "token-lua", {{"fence", true}}},
        {"redlock", "redlock", nlohmann::json::object()},
        {"reentrant", "reentrant", nlohmann::json::object()},
    };
    benchmark::RegisterBenchmark("cycle/bare-hiredis", bm_bare_hiredis)->UseRealTime();
    for (const Cycle& c : cycles) {
        benchmark::RegisterBenchmark((std::string("cycle/") + c.name).c_str(),
                                     [c](benchmark::State& s) { bm_cycle(s, c.name, c.algorithm, c.params); })
            ->UseRealTime();
    }
    benchmark::RegisterBenchmark("cycle/token-lua+history", [](benchmark::State& s) {
        bm_cycle(s, "token-lua+history", "token-lua", nlohmann::json::object(), true);
    })->UseRealTime();
    struct External {
        const char* name;
        std::vector<std::string> command;
        int nodes;
    };
    const std::vector<External> externals = {
        {"redis-py", {"/usr/bin/python3", "adapters/redis_py_lock.py"}, 1},
        {"node-redlock", {"node", "adapters/node-redlock/adapter.js"}, 5},
        {"echo-python", {"/usr/bin/python3", "bench/echo_adapter.py"}, 1},
        {"echo-node", {"node", "bench/echo_adapter.js"}, 1},
    };
    for (const External& e : externals)
        benchmark::RegisterBenchmark((std::string("cycle/") + e.name).c_str(),
                                     [e](benchmark::State& s) { bm_external(s, e.name, e.command, e.nodes); })
            ->UseRealTime();
    register_service_benchmarks();
    // Every external lock of locks/, by its file: nothing here names a library.
    for (const LockFile& lock : load_lock_folder(fs::path(LOCKBENCH_SOURCE_DIR) / "locks")) {
        if (lock.command.empty()) continue;
        benchmark::RegisterBenchmark(("lock/" + lock.name).c_str(), [lock](benchmark::State& s) { bm_lock_file(s, lock, false); })
            ->UseRealTime();
        benchmark::RegisterBenchmark(("ready/" + lock.name).c_str(), [lock](benchmark::State& s) { bm_lock_file(s, lock, true); })
            ->UseRealTime()->Iterations(5)->Unit(benchmark::kMillisecond);
    }
    for (const Cycle& c : cycles)
        benchmark::RegisterBenchmark((std::string("sim/") + c.name).c_str(),
                                     [c](benchmark::State& s) { bm_sim_cycle(s, c.algorithm, c.params); })
            ->UseRealTime();
    const fs::path scenarios = fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios";
    struct Case {
        const char* name;
        const char* scenario;
        const char* run;
    };
    for (const Case& c : std::vector<Case>{{"gc-pause/token-lua", "gc-pause", "token-lua"},
                                           {"gc-pause/redlock", "gc-pause", "redlock"},
                                           {"redlock-clock-jump", "redlock-clock-jump", "redlock"},
                                           {"failover-lost-lock", "failover-lost-lock", "token-lua"},
                                           {"acquire-pause/no-check", "acquire-pause", "redlock+no-validity-check"}})
        benchmark::RegisterBenchmark((std::string("explore/") + c.name).c_str(),
                                     [c, scenarios](benchmark::State& s) {
                                         bm_explore(s, scenarios / (std::string(c.scenario) + ".json"), c.run, 1000, true);
                                     })
            ->UseRealTime()->Iterations(3)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("explore/fenced-10k", [](benchmark::State& s) {
        const fs::path file = make_run_temp_dir() / "fenced-single-node.json";
        std::ofstream(file) << kFencedSingleNode;
        bm_explore(s, file, "token-lua+fence", 10000, false);
        fs::remove_all(file.parent_path());
    })->UseRealTime()->Iterations(1)->Unit(benchmark::kSecond);
    benchmark::RegisterBenchmark("checker/1M-events", bm_checker)->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace lockbench

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    lockbench::install_cleanup_on_signals();  // Ctrl-C still stops the redis-servers
    lockbench::register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
