// Virtual time on one thread: FoundationDB's sim2 in miniature.
//
//   World ── events, ordered by (time, sequence) ──► run()
//     │        each event resumes a fiber or runs a callback
//     ├─ fiber: a simulated process (a client, its watchdog), running the very same blocking
//     │         code as live; where it would block (a command, a sleep) it schedules its own
//     │         wake-up and switches back to the world
//     └─ random: one seeded source, the only randomness of a simulated run
//
// Exactly one fiber runs at a time and the order of events is a function of the seed, so a
// run replays byte for byte. Fibers are coroutines with their own stacks, switched with
// Boost.Context's fcontext (a few instructions, where ucontext's swapcontext makes a system
// call to save the signal mask): the seam (lockimpl/env.h) is synchronous, and an algorithm
// must not change to run here.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include <boost/context/detail/fcontext.hpp>

namespace lockbench::sim {

using VTime = long long;  // nanoseconds of virtual time: the simulated CLOCK_MONOTONIC

// Where virtual time starts: like a machine up for 1000 s, so that no timestamp is 0.
constexpr VTime kWorldStart = 1'000'000'000'000;

class World;

// A simulated process. Created by World::spawn; runs until its body returns or it is killed.
class Fiber {
public:
    bool finished() const { return finished_; }
    bool killed() const { return killed_; }
    const std::string& name() const { return name_; }

private:
    friend class World;
    std::string name_;
    std::function<void()> body_;
    boost::context::detail::fcontext_t context_ = nullptr;  // where it resumes
    std::unique_ptr<char[]> stack_;  // not zeroed: a fiber a watchdog, spawned per acquire
    void* tsan_fiber_ = nullptr;     // under -fsanitize=thread: its ThreadSanitizer fiber
    bool finished_ = false;
    bool killed_ = false;    // asked to unwind at its next switch
    bool waiting_ = false;   // blocked, with a wake-up pending somewhere
    std::uint64_t wake_id_ = 0;  // wake-ups older than this are stale
    std::exception_ptr error_;   // what escaped its body, for the world to rethrow
};

// Thrown inside a killed fiber at its next switch, to unwind its stack; never escapes it.
struct FiberKilled {};

class World {
public:
    explicit World(std::uint64_t seed);
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    VTime now() const { return now_; }
    std::mt19937_64& random() { return random_; }

    // Runs `f` at time t (>= now).
    void at(VTime t, std::function<void()> f);

    // A new process, started at the current time.
    Fiber* spawn(std::string name, std::function<void()> body, std::size_t stack_bytes = 256 * 1024);
    // The fiber now running (nullptr in an event callback).
    Fiber* current() const { return current_; }

    // From inside a fiber: give control back until `wake(token)` is called for the returned
    // token. The fiber sleeps until then; a stale token wakes nothing.
    std::uint64_t prepare_wait();
    void wait();
    void wake(Fiber* f, std::uint64_t token);
    // From inside a fiber: resume at time t.
    void sleep_until(VTime t);

    // Stops a fiber for good: it unwinds (FiberKilled) when it would next run.
    void kill(Fiber* f);

    // Runs events until none is left or virtual time would pass `until`.
    void run(VTime until);
    // Ends every fiber still blocked (a client held forever): each unwinds, so that what it
    // owns (its history file) is closed properly. Returns how many there were.
    std::size_t end_all();
    std::size_t events_run() const { return events_run_; }

private:
    struct Event {
        VTime t;
        std::uint64_t seq;
        std::function<void()> f;
        bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    static void trampoline(boost::context::detail::transfer_t from);
    void resume(Fiber* f);
    void yield_to_world();

    VTime now_ = kWorldStart;
    std::uint64_t seq_ = 0;
    std::size_t events_run_ = 0;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
    std::vector<std::unique_ptr<Fiber>> fibers_;
    Fiber* current_ = nullptr;
    boost::context::detail::fcontext_t world_context_ = nullptr;  // where the running fiber returns to
    void* tsan_world_ = nullptr;  // under -fsanitize=thread: the world's ThreadSanitizer fiber
    std::mt19937_64 random_;
};

}  // namespace lockbench::sim
