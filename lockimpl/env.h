// The seam: the only way a lock algorithm reaches the world.
//
//   algorithm ──► Env ──┬─► node i        (one command, one reply)
//                       ├─► every node     (fan-out: sent together, replies gathered)
//                       ├─► now()          (monotonic instant, for elapsed time)
//                       ├─► wall_ms()      (the client's own wall clock, skewable)
//                       ├─► sleep(d)
//                       ├─► random()
//                       ├─► reach(point)   (named points where a fault may be armed)
//                       └─► background(f)  (a task on the same clock, e.g. a watchdog)
//
// The live implementation (sim/live/live_env.*) uses hiredis, real clocks and real sleeps; a
// deterministic simulator can implement the same interface with virtual time and modelled
// nodes and run the very same algorithm code. Nothing in lockimpl/ may include hiredis,
// <thread> or <random>, or read a std::chrono clock: tests/seam_test.cpp checks that.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lockbench {

using Duration = std::chrono::nanoseconds;
using std::chrono::milliseconds;

// A point on the client's monotonic clock. Only differences between instants mean anything.
struct Instant {
    Duration since_origin{0};
    friend Duration operator-(Instant a, Instant b) { return a.since_origin - b.since_origin; }
    friend Instant operator+(Instant a, Duration d) { return Instant{a.since_origin + d}; }
    friend auto operator<=>(Instant, Instant) = default;
};

struct NodeId {
    int value = 0;
    friend auto operator<=>(NodeId, NodeId) = default;
};

// One Redis command, argument by argument (binary safe).
struct Command {
    std::vector<std::string> args;
    Command() = default;
    Command(std::initializer_list<std::string> a) : args(a) {}
    explicit Command(std::vector<std::string> a) : args(std::move(a)) {}
};

// A reply value, shaped like RESP2.
struct Value {
    enum class Type { nil, integer, string, status, array };
    Type type = Type::nil;
    long long integer = 0;
    std::string str;
    std::vector<Value> elements;

    bool is_nil() const { return type == Type::nil; }
    bool is_int(long long v) const { return type == Type::integer && integer == v; }
    bool is_ok() const { return type == Type::status && str == "OK"; }
};

// Three-valued outcome of one command on one node: it happened (ok, possibly a Redis error
// reply), it did not (error before sending), or nobody knows (timeout, connection lost).
struct Reply {
    enum class Status { ok, error, unknown };
    NodeId node;
    Status status = Status::unknown;
    Value value;        // meaningful when status == ok
    std::string error;  // what went wrong, when status != ok or value is a Redis error
    bool redis_error = false;  // status == ok but the server answered with -ERR

    bool ok() const { return status == Status::ok && !redis_error; }
};

// Named points a client passes; a fault injector may be armed at any of them. The live
// environment records each in the history; with nothing armed, reaching one costs nothing.
enum class Point {
    before_acquire,            // an acquire attempt is about to send its commands
    during_acquire,            // acquire commands sent, replies not yet read
    between_setnx_and_expire,  // setnx: the key exists but has no expiry yet
    after_seen_expired,        // a waiter has seen the holder's lock as expired
    after_acquire,
    before_write,
    before_release,
    // Not a point a fault is armed at: an external library's acquire, still in flight, waits in
    // its queue behind a holder (its adapter said {"event": "waiting"}); keep_holder_ms's end.
    in_line,
    // Not a point a fault is armed at either: the client's enter landed in the protected store
    // (it is inside its section). Reached only in a run whose fault keeps a holder after its
    // end (keep_holder_ms without "until"), which holds the first there.
    entered,
};
const char* point_name(Point p);

class Env;

// Handed to a background task: sleeps that end early when the task is asked to stop.
class StopSignal {
public:
    virtual ~StopSignal() = default;
    // Sleeps for d; returns false (at once) if stop was requested before or during it.
    virtual bool sleep_unless_stopped(Duration d) = 0;
};

// A running background task. stop() asks it to stop and waits until it has; the destructor
// calls stop(). Neither does network I/O of its own.
class BackgroundTask {
public:
    virtual ~BackgroundTask() = default;
    virtual void stop() = 0;
};

class Env {
public:
    virtual ~Env() = default;

    virtual int node_count() const = 0;
    // One command to one node, waiting at most `timeout` for its reply. If `after_send` is
    // given, that point is reached once the command is sent and before its reply is read.
    virtual Reply command(NodeId node, const Command& cmd, Duration timeout,
                          std::optional<Point> after_send = std::nullopt) = 0;
    // The same command to every node at once; replies in node order. Each node gets at most
    // `timeout`; the call returns when every node has answered or timed out.
    virtual std::vector<Reply> fan_out(const Command& cmd, Duration timeout,
                                       std::optional<Point> after_send = std::nullopt) = 0;

    virtual Instant now() = 0;          // monotonic: for elapsed time and deadlines
    virtual long long wall_ms() = 0;    // the client's wall clock, ms since the epoch
    virtual void sleep(Duration d) = 0;
    virtual std::uint64_t random() = 0;  // uniformly distributed 64 bits, seeded

    virtual void reach(Point p) = 0;

    // Runs `task` in the background against its own Env (own connections, same clock, same
    // nodes). The task should return soon after stop is signalled.
    virtual std::unique_ptr<BackgroundTask> background(
        std::function<void(Env&, StopSignal&)> task) = 0;
};

// Helpers built on the interface only.
std::string random_hex(Env& env, int bytes);
// Uniform in [0, bound) (bound > 0), from env.random().
std::uint64_t random_below(Env& env, std::uint64_t bound);

}  // namespace lockbench
