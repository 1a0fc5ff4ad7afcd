// Live tests for the clock shim (faults/clock_shim.c) and its control (faults/clock_control.h):
// real redis-server processes under LD_PRELOAD, and clock_probe (tests/clock_probe.cpp), which
// prints each hooked clock beside the same clock read by raw syscall. No sleeps: every
// assertion compares two clocks read at nearly the same moment, with a margin of a second.
#include <hiredis/hiredis.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "faults/clock_control.h"
#include "process/process.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int64_t ns_per_s = 1'000'000'000;
constexpr int64_t margin_ns = ns_per_s;  // for two reads of a clock a few syscalls apart

// ---- Redis helpers --------------------------------------------------------------------------

using testing_util::command;
using testing_util::connect_to;
using testing_util::Context;
using testing_util::Reply;

std::string text(const Reply& r) {
    if (!r) return "<no reply>";
    if (r->type == REDIS_REPLY_NIL) return "<nil>";
    return r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING
               ? std::string(r->str, r->len)
               : "<not text>";
}

long long integer(const Reply& r) {
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;
}

// The node's wall clock by its TIME command, which reads gettimeofday.
int64_t redis_time_ns(const Context& c) {
    const Reply r = command(c, "TIME");
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return -1;
    return std::stoll(r->element[0]->str) * ns_per_s + std::stoll(r->element[1]->str) * 1000;
}

using testing_util::EnvOverride;

// ---- The probe ------------------------------------------------------------------------------

struct Reading {
    int64_t shimmed_ns;
    int64_t raw_ns;
    int64_t skew_ns() const { return shimmed_ns - raw_ns; }
};

// Runs clock_probe with `env` added to its environment; returns its lines by clock name.
std::map<std::string, Reading> probe(const fs::path& dir, const std::vector<std::string>& env) {
    const fs::path out = dir / "probe.out";
    ChildProcess child = ChildProcess::spawn({{CLOCK_PROBE_BINARY}, out.string(), "", env});
    const auto status = child.wait_for(5s);
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    std::map<std::string, Reading> readings;
    std::ifstream lines(out);
    std::string name;
    Reading r{};
    while (lines >> name >> r.shimmed_ns >> r.raw_ns) readings[name] = r;
    return readings;
}

bool loaded_in(pid_t pid, const fs::path& library) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::stringstream all;
    all << maps.rdbuf();
    return all.str().find(library.filename().string()) != std::string::npos;
}

class ClockShimTest : public ::testing::Test {
protected:
    void TearDown() override { fs::remove_all(run_dir); }

    RedisNode node_under(const ClockControl& clock, const std::string& name) {
        RedisNodeConfig c;
        c.name = name;
        c.extra_env = clock.env();
        return RedisNode(c, run_dir);
    }

    fs::path run_dir = make_run_temp_dir();
};

// ---- Against redis-server -------------------------------------------------------------------

// libfaketime's failure: jemalloc reads the clock while it initialises and the server hangs.
TEST_F(ClockShimTest, RedisStartsAndAnswersPingUnderTheShim) {
    ClockControl clock(run_dir, "lock0");
    RedisNode node = node_under(clock, "lock0");
    EXPECT_TRUE(loaded_in(node.pid(), clock_shim_library()));
    const Context c = connect_to(node.port());
    ASSERT_TRUE(c && !c->err);
    EXPECT_EQ(text(command(c, "PING")), "PONG");
}

TEST_F(ClockShimTest, JumpPastTheTtlExpiresTheKeyByTheNodesOwnClock) {
    ClockControl jumped_clock(run_dir, "lock0");
    ClockControl steady_clock(run_dir, "lock1");
    RedisNode jumped = node_under(jumped_clock, "lock0");
    RedisNode steady = node_under(steady_clock, "lock1");
    const Context j = connect_to(jumped.port());
    const Context s = connect_to(steady.port());
    EXPECT_EQ(text(command(j, "SET k v PX 60000")), "OK");
    EXPECT_EQ(text(command(j, "SET forever v")), "OK");
    EXPECT_EQ(text(command(s, "SET k v PX 60000")), "OK");

    jumped_clock.jump(120s);

    EXPECT_EQ(text(command(j, "GET k")), "<nil>");
    EXPECT_EQ(text(command(j, "GET forever")), "v");  // the jump expired, it did not flush
    EXPECT_EQ(text(command(s, "GET k")), "v");        // the other node's clock did not move
    EXPECT_GT(integer(command(s, "PTTL k")), 50'000);
}

// The same shim holds a node's flushes to disk: with appendfsync always, Redis flushes each
// write before it answers, in its one thread, so a stalled disk holds that answer and every
// one after it; without AOF it flushes nothing and answers on.
TEST_F(ClockShimTest, AStalledDiskHoldsAnAlwaysFlushingNodeUntilItComesBack) {
    ClockControl clock(run_dir, "lock0");
    RedisNodeConfig c;
    c.name = "lock0";
    c.persistence = Persistence::aof_always;
    c.extra_env = clock.env();
    RedisNode node(c, run_dir);
    ClockControl other_clock(run_dir, "lock1");
    RedisNode unflushed = node_under(other_clock, "lock1");
    const Context quiet = connect_to(unflushed.port());
    clock.stall_disk(true);
    other_clock.stall_disk(true);
    EXPECT_EQ(text(command(quiet, "SET k v PX 60000")), "OK") << "a node without AOF flushes nothing";

    auto answered = std::async(std::launch::async, [&] {
        const Context w = connect_to(node.port());
        return text(command(w, "SET k v PX 60000"));
    });
    // Its one thread sleeps in the shim's wait (clock_nanosleep, /proc/PID/syscall's first
    // field; epoll_wait is 232) and has not answered.
    EXPECT_TRUE(testing_util::eventually([&] {
        std::ifstream in("/proc/" + std::to_string(node.pid()) + "/syscall");
        long number = -1;
        return in >> number && number == SYS_clock_nanosleep;
    })) << "redis-server never waited in the shim";
    EXPECT_EQ(answered.wait_for(0ms), std::future_status::timeout) << "answered before its flush";
    clock.stall_disk(false);
    EXPECT_EQ(answered.get(), "OK");
    const Context after = connect_to(node.port());
    EXPECT_EQ(text(command(after, "GET k")), "v");
}

TEST_F(ClockShimTest, JumpBackStretchesAKeysRemainingTime) {
    ClockControl clock(run_dir, "lock0");
    RedisNode node = node_under(clock, "lock0");
    const Context c = connect_to(node.port());
    EXPECT_EQ(text(command(c, "SET k v PX 2000")), "OK");
    EXPECT_LE(integer(command(c, "PTTL k")), 2000);

    clock.jump(-60s);

    // The expiry is an absolute instant on the node's clock, now a minute further away.
    EXPECT_GT(integer(command(c, "PTTL k")), 60'000);
    EXPECT_EQ(text(command(c, "GET k")), "v");
}

TEST_F(ClockShimTest, RedisTimeFollowsJumpsAndRate) {
    ClockControl clock(run_dir, "lock0");
    RedisNode node = node_under(clock, "lock0");
    const Context c = connect_to(node.port());
    EXPECT_LT(std::abs(redis_time_ns(c) - real_time_ns()), margin_ns);

    clock.jump(100s);
    const int64_t ahead_ns = redis_time_ns(c) - real_time_ns();
    EXPECT_GT(ahead_ns, 100 * ns_per_s - margin_ns);
    EXPECT_LT(ahead_ns, 100 * ns_per_s + margin_ns);

    // A new rate re-anchors: no step now, and a clock running fast only gets further ahead.
    clock.set_rate(2.0);
    EXPECT_GT(redis_time_ns(c) - real_time_ns(), 100 * ns_per_s - margin_ns);
    clock.jump(50s);
    EXPECT_GT(redis_time_ns(c) - real_time_ns(), 150 * ns_per_s - margin_ns);

    clock.reset();
    EXPECT_LT(std::abs(redis_time_ns(c) - real_time_ns()), margin_ns);
}

// Many jumps while the server works: the seqlock readers never see a torn or stuck value.
TEST_F(ClockShimTest, ManyJumpsWhileServingCommands) {
    ClockControl clock(run_dir, "lock0");
    RedisNode node = node_under(clock, "lock0");
    const Context c = connect_to(node.port());
    for (int i = 0; i < 200; ++i) {
        clock.jump(i % 2 == 0 ? 10s : -10s);
        ASSERT_EQ(text(command(c, "SET k%d v PX 60000", i)), "OK");
    }
    EXPECT_EQ(integer(command(c, "DBSIZE")), 200);
    EXPECT_LT(std::abs(redis_time_ns(c) - real_time_ns()), margin_ns);
}

// ---- Against the probe: every hooked clock, and the ones that must stay untouched -----------

TEST_F(ClockShimTest, JumpMovesTheWallClocksAndNeverTheMonotonicOnes) {
    ClockControl clock(run_dir, "probe");
    for (const auto& [name, r] : probe(run_dir, clock.env()))
        EXPECT_LT(std::abs(r.skew_ns()), margin_ns) << name;

    clock.jump(100s);
    const auto readings = probe(run_dir, clock.env());
    ASSERT_EQ(readings.size(), 6u);
    for (const char* wall : {"realtime", "realtime_coarse", "gettimeofday", "time"}) {
        EXPECT_GT(readings.at(wall).skew_ns(), 100 * ns_per_s - margin_ns) << wall;
        EXPECT_LT(readings.at(wall).skew_ns(), 100 * ns_per_s + margin_ns) << wall;
    }
    for (const char* steady : {"monotonic", "boottime"})
        EXPECT_LT(std::abs(readings.at(steady).skew_ns()), margin_ns) << steady;
}

TEST_F(ClockShimTest, BackwardJumpGoesBackInEveryWallClock) {
    ClockControl clock(run_dir, "probe");
    clock.jump(-3600s);
    const auto readings = probe(run_dir, clock.env());
    ASSERT_EQ(readings.size(), 6u);
    for (const char* wall : {"realtime", "realtime_coarse", "gettimeofday", "time"}) {
        EXPECT_LT(std::abs(readings.at(wall).skew_ns() + 3600 * ns_per_s), margin_ns) << wall;
    }
}

TEST_F(ClockShimTest, WithoutAUsableControlFileEverythingPassesThrough) {
    ClockControl clock(run_dir, "probe");
    clock.jump(100s);
    const std::string preload = "LD_PRELOAD=" + clock_shim_library().string();
    std::ofstream(run_dir / "empty.clock");  // too short to map
    std::ofstream(run_dir / "garbage.clock") << std::string(64, 'x');  // no magic number
    for (const std::vector<std::string>& env :
         {std::vector<std::string>{preload},
          {preload, "LOCKBENCH_CLOCK_FILE=" + (run_dir / "missing.clock").string()},
          {preload, "LOCKBENCH_CLOCK_FILE=" + (run_dir / "empty.clock").string()},
          {preload, "LOCKBENCH_CLOCK_FILE=" + (run_dir / "garbage.clock").string()}}) {
        const auto readings = probe(run_dir, env);
        ASSERT_EQ(readings.size(), 6u) << env.back();
        for (const auto& [name, r] : readings)
            EXPECT_LT(std::abs(r.skew_ns()), margin_ns) << name << " with " << env.back();
    }
}

// ---- ClockControl alone ---------------------------------------------------------------------

TEST_F(ClockShimTest, ControlTracksItsSkewAcrossRateChanges) {
    ClockControl clock(run_dir, "lock0");
    EXPECT_EQ(clock.path(), run_dir / "lock0.clock");
    EXPECT_LT(std::abs(clock.skew().count()), margin_ns);
    clock.jump(-5s);
    EXPECT_LT(std::abs((clock.skew() + 5s).count()), margin_ns);
    clock.set_rate(3.0);
    const auto first = clock.skew();
    EXPECT_LT(std::abs((first + 5s).count()), margin_ns);  // no step when the rate changes
    EXPECT_GE(clock.skew(), first);                        // and from now on it gains
    EXPECT_THROW(clock.set_rate(-1.0), std::invalid_argument);
    clock.reset();
    EXPECT_LT(std::abs(clock.skew().count()), margin_ns);
}

TEST_F(ClockShimTest, EnvNamesTheShimAndTheFile) {
    ClockControl clock(run_dir, "lock0");
    const auto env = clock.env();
    ASSERT_EQ(env.size(), 2u);
    EXPECT_EQ(env[0], "LD_PRELOAD=" + clock_shim_library().string());
    EXPECT_TRUE(fs::is_regular_file(clock_shim_library()));
    EXPECT_EQ(env[1], "LOCKBENCH_CLOCK_FILE=" + clock.path().string());
}

TEST_F(ClockShimTest, MissingShimIsOneClearLine) {
    ClockControl clock(run_dir, "lock0");
    const EnvOverride missing("LOCKBENCH_CLOCKSHIM", "/nonexistent/liblockbench_clockshim.so");
    try {
        clock.env();
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("/nonexistent/liblockbench_clockshim.so"), std::string::npos) << what;
        EXPECT_NE(what.find("LOCKBENCH_CLOCKSHIM"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

}  // namespace
}  // namespace lockbench
