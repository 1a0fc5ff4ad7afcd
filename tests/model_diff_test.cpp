// The simulator's modelled node against the real thing (RapidCheck): generated sequences of
// raw commands, clock steps and whole lock operations (every algorithm's own commands and
// scripts, through its unchanged code, and the store's section scripts) go to a live
// redis-server and to sim::ModelNode side by side, and every reply must be the same.
//
//   algorithm / Store / raw command ──► TeeEnv ──┬─► LiveEnv ──► redis-server (clock shim:
//                                                │                frozen, stepped by `advance`)
//                                                └─► ModelNode at the same millisecond
//
// No real sleep decides a result: the server's wall clock is frozen (rate 0) on a millisecond
// boundary and stepped exactly as the model's, so expiry is compared at equal times.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faults/clock_control.h"
#include "lockimpl/registry.h"
#include "sim/live/live_env.h"
#include "sim/virtual/model_node.h"
#include "sim/live/redis_node.h"
#include "sim/engine/store.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;

// One live server under a frozen clock, shared by every generated case (flushed between).
struct Server {
    fs::path dir = make_run_temp_dir();
    ClockControl clock{dir, "model-diff"};
    std::optional<RedisNode> node;
    std::unique_ptr<LiveEnv> env;
    long long now_ms = 0;  // the server's frozen wall clock

    Server() {
        RedisNodeConfig c;
        c.name = "model-diff";
        c.extra_env = clock.env();
        node.emplace(c, dir);
        env = std::make_unique<LiveEnv>(LiveEnvConfig{{{"127.0.0.1", node->port()}}});
        clock.set_rate(0);
        // Onto a millisecond boundary, so that TIME's microseconds agree with the model's ms.
        const Reply t = env->command(NodeId{0}, {"TIME"}, std::chrono::seconds(2), std::nullopt);
        const long long usec = std::stoll(t.value.elements.at(1).str);
        clock.jump(std::chrono::microseconds(1000 - usec % 1000));
        now_ms = std::stoll(t.value.elements.at(0).str) * 1000 + usec / 1000 + 1;
    }
    ~Server() {
        env.reset();
        node.reset();
        fs::remove_all(dir);
    }
    static Server& get() {
        static Server s;
        return s;
    }
};

std::string describe(const Value& v) {
    switch (v.type) {
        case Value::Type::nil: return "nil";
        case Value::Type::integer: return "(integer) " + std::to_string(v.integer);
        case Value::Type::string: return "\"" + v.str + "\"";
        case Value::Type::status: return "+" + v.str;
        case Value::Type::array: {
            std::string s = "[";
            for (const auto& e : v.elements) s += (s.size() > 1 ? ", " : "") + describe(e);
            return s + "]";
        }
    }
    return "?";
}

std::string describe(const Command& c) {
    std::string s;
    for (const auto& a : c.args) s += (s.empty() ? "" : " ") + (a.size() > 40 ? a.substr(0, 37) + "..." : a);
    return s;
}

// The seam, teed: each command to the live server and to the model, replies compared.
class TeeEnv final : public Env {
public:
    TeeEnv(Server& server, sim::ModelNode& model, std::uint64_t seed) : server_(server), model_(model), rng_(seed) {}

    int node_count() const override { return 1; }
    Reply command(NodeId, const Command& cmd, Duration, std::optional<Point>) override {
        const Reply live = server_.env->command(NodeId{0}, cmd, std::chrono::seconds(2), std::nullopt);
        std::string error;
        const Value modelled = model_.execute(cmd, server_.now_ms, &error);
        RC_ASSERT(live.status == Reply::Status::ok);
        // Errors: the same kind (its first word), not the same text.
        const auto kind = [](const std::string& e) { return e.substr(0, e.find(' ')); };
        if (live.redis_error != !error.empty() || (live.redis_error && kind(live.error) != kind(error))) {
            RC_LOG() << describe(cmd) << ": redis-server says " << (live.redis_error ? live.error : describe(live.value))
                     << ", the model " << (error.empty() ? describe(modelled) : error) << "\n";
            RC_FAIL("the model's reply differs");
        } else if (!live.redis_error && describe(live.value) != describe(modelled)) {
            RC_LOG() << describe(cmd) << ": redis-server says " << describe(live.value) << ", the model "
                     << describe(modelled) << "\n";
            RC_FAIL("the model's reply differs");
        }
        return live;
    }
    std::vector<Reply> fan_out(const Command& cmd, Duration t, std::optional<Point> p) override {
        return {command(NodeId{0}, cmd, t, p)};
    }
    Instant now() override { return Instant{Duration{server_.now_ms * 1'000'000}}; }
    long long wall_ms() override { return server_.now_ms; }
    void sleep(Duration d) override { advance(d.count() / 1'000'000); }
    std::uint64_t random() override { return rng_(); }
    void reach(Point) override {}
    std::unique_ptr<BackgroundTask> background(std::function<void(Env&, StopSignal&)>) override {
        struct None final : BackgroundTask {
            void stop() override {}
        };
        return std::make_unique<None>();  // the watchdog is left out: no thread may race the steps
    }

    void advance(long long ms) {
        server_.clock.jump(std::chrono::milliseconds(ms));
        server_.now_ms += ms;
    }

private:
    Server& server_;
    sim::ModelNode& model_;
    std::mt19937_64 rng_;
};

const std::vector<std::string> kKeys = {"a", "b", "lockbench:lock"};

rc::Gen<Command> raw_command() {
    using namespace rc;
    const auto key = gen::elementOf(kKeys);
    const auto value = gen::elementOf(std::vector<std::string>{"1", "x", "-3", "10", "9223372036854775807"});
    const auto ms = gen::map(gen::inRange(-2, 2500), [](int n) { return std::to_string(n); });
    return gen::oneOf(
        gen::map(gen::tuple(key, value, gen::elementOf(std::vector<std::string>{"", "NX", "XX"}),
                            gen::inRange(0, 1500)),
                 [](const auto& t) {
                     auto [k, v, cond, px] = t;
                     Command c{"SET", k, v};
                     if (!cond.empty()) c.args.push_back(cond);
                     if (px > 0) c.args.insert(c.args.end(), {"PX", std::to_string(px)});
                     return c;
                 }),
        gen::map(gen::tuple(gen::elementOf(std::vector<std::string>{"SETNX", "GETSET"}), key, value),
                 [](const auto& t) { return Command{std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }),
        gen::map(gen::tuple(gen::elementOf(std::vector<std::string>{"GET", "DEL", "EXISTS", "PTTL", "INCR", "LLEN"}), key),
                 [](const auto& t) { return Command{std::get<0>(t), std::get<1>(t)}; }),
        gen::map(gen::tuple(gen::elementOf(std::vector<std::string>{"PEXPIRE", "EXPIRE"}), key, ms),
                 [](const auto& t) { return Command{std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }),
        gen::map(gen::tuple(key, gen::elementOf(std::vector<std::string>{"f", "g"}), gen::inRange(-2, 3)),
                 [](const auto& t) { return Command{"HINCRBY", std::get<0>(t), std::get<1>(t), std::to_string(std::get<2>(t))}; }),
        gen::map(gen::tuple(key, gen::elementOf(std::vector<std::string>{"f", "g"})),
                 [](const auto& t) { return Command{"HEXISTS", std::get<0>(t), std::get<1>(t)}; }),
        gen::map(gen::tuple(key, value), [](const auto& t) { return Command{"RPUSH", std::get<0>(t), std::get<1>(t)}; }),
        gen::just(Command{"TIME"}));
}

// One step: a raw command, a clock step, or a lock operation by one of a few lock objects.
struct Step {
    enum class Kind { raw, advance, acquire, release, section } kind = Kind::raw;
    Command cmd;
    long long ms = 0;   // advance: by how much; section: the store's check (0 none, 1 fence, 2 token)
    int lock = 0;
};

void showValue(const Step& s, std::ostream& os) {
    const char* kinds[] = {"raw", "advance", "acquire", "release", "section"};
    os << kinds[static_cast<int>(s.kind)];
    if (s.kind == Step::Kind::raw) os << " " << describe(s.cmd);
    if (s.kind == Step::Kind::advance) os << " " << s.ms << " ms";
    if (s.kind == Step::Kind::section) os << " check " << s.ms;
    if (s.kind >= Step::Kind::acquire) os << " lock " << s.lock;
}

struct Holder {
    std::string algorithm;
    nlohmann::json params;
    int client;
};
const std::vector<Holder> kHolders = {
    {"setnx", {{"ttl_ms", 300}}, 0},
    {"setnx", {{"ttl_ms", 300}, {"expiry", "in-value"}}, 1},
    {"getset", {{"ttl_ms", 300}}, 2},
    {"token-lua", {{"ttl_ms", 300}}, 3},
    {"token-lua", {{"ttl_ms", 300}, {"fence", true}}, 4},
    {"redlock", {{"ttl_ms", 300}}, 5},
    {"reentrant", {{"lease_ms", 300}, {"watchdog", false}, {"depth", 2}}, 6},
    {"reentrant", {{"lease_ms", 300}, {"watchdog", false}}, 7},
};

rc::Gen<Step> step() {
    using namespace rc;
    const auto lock = gen::inRange(0, static_cast<int>(kHolders.size()));
    return gen::oneOf(
        gen::map(raw_command(), [](Command c) { return Step{Step::Kind::raw, std::move(c), 0, 0}; }),
        gen::map(gen::elementOf(std::vector<long long>{0, 1, 2, 50, 299, 300, 301, 1000}),
                 [](long long ms) { return Step{Step::Kind::advance, {}, ms, 0}; }),
        gen::map(lock, [](int l) { return Step{Step::Kind::acquire, {}, 0, l}; }),
        gen::map(lock, [](int l) { return Step{Step::Kind::release, {}, 0, l}; }),
        gen::map(gen::pair(lock, gen::inRange(0, 3)),
                 [](std::pair<int, int> p) { return Step{Step::Kind::section, {}, p.second, p.first}; }));
}

RC_GTEST_PROP(ModelDiff, TheModelRepliesAsRedisServerDoes, ()) {
    Server& server = Server::get();
    server.env->command(NodeId{0}, {"FLUSHALL"}, std::chrono::seconds(2), std::nullopt);
    sim::ModelNode model;
    TeeEnv env(server, model, *rc::gen::arbitrary<std::uint64_t>());
    struct Live {
        std::unique_ptr<Lock> lock;
        std::optional<Lease> lease;
    };
    std::vector<Live> locks;
    for (const Holder& h : kHolders) {
        const AlgorithmInfo* info = find_algorithm(h.algorithm);
        Params p;
        std::string error;
        RC_ASSERT(resolve_params(info->params, h.params, p, error));
        locks.push_back({info->make(p, LockContext{"lockbench:lock", h.client, std::chrono::seconds(1)}), {}});
    }
    // The section step's `ms` picks the store's check (none, fence, token).
    Store none(env, std::chrono::seconds(1), ResourceCheck::none), fence(env, std::chrono::seconds(1)),
        token(env, std::chrono::seconds(1), ResourceCheck::token);
    Store* const stores[] = {&none, &fence, &token};
    const auto steps = *rc::gen::container<std::vector<Step>>(step());
    for (const Step& s : steps) {
        showValue(s, RC_LOG());
        RC_LOG() << "\n";
        Live& l = locks[static_cast<std::size_t>(s.lock)];
        switch (s.kind) {
            case Step::Kind::raw: env.command(NodeId{0}, s.cmd, std::chrono::seconds(1), std::nullopt); break;
            case Step::Kind::advance: env.advance(s.ms); break;
            case Step::Kind::acquire:
                if (!l.lease) {
                    const AcquireResult r = l.lock->try_acquire(env);
                    if (r.lease) l.lease = r.lease;
                }
                break;
            case Step::Kind::release:
                if (l.lease) {
                    l.lock->release(env, *l.lease);
                    l.lease.reset();
                }
                break;
            case Step::Kind::section:  // the store's scripts: enter, then write and exit
                if (l.lease) {
                    const SectionId id{kHolders[static_cast<std::size_t>(s.lock)].client, l.lease->token,
                                       l.lease->fencing_token, l.lease->token};
                    Store& store = *stores[s.ms % 3];
                    const Reply read = store.enter(id);
                    if (read.ok()) store.write_and_exit(id, read.value.integer);
                }
                break;
        }
    }
}

}  // namespace
}  // namespace lockbench
