// A third-party lock library as a lockbench client's lock: the library runs in an adapter
// process that the client starts and talks to in JSON lines (docs/adapters.md).
//
//   client ── {"op":"acquire","key":K,"ttl_ms":T,"wait_ms":0} ──► adapter (stdin)
//          ◄── {"ok":true,"token":"…","fence":12,"validity_ms":287.5} ── (stdout)
//          ◄── {"event":"lost",...} ── at any time: the library says the lock is gone
//          ◄── {"event":"waiting",...} ── during an acquire: the library queued it behind a holder
//
// The worker and its renewal task (on another thread) both talk to the one adapter, which
// answers one request at a time: a mutex keeps each request and its answer together, and
// event lines read while waiting for an answer are kept for take_events() (under a
// mutex of their own, so that taking them never waits for a call's round trip).
//
// The adapter is the client's child, in the client's process group, so a pause (SIGSTOP to
// the group) stops both, a kill kills both, and it dies with the client (PR_SET_PDEATHSIG).
// It inherits the client's environment (the clock shim's LD_PRELOAD with it) and reaches the
// nodes by this client's own paths (the link proxies). The worker drives it like any
// other lock, and the critical section stays on the protected store, done by the client.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockimpl/lock.h"
#include "lockimpl/registry.h"
#include "sim/live/adapter_pool.h"

namespace lockbench {

// The most an adapter (and what it starts) may write to any one file, its stderr included.
inline constexpr unsigned long kAdapterFileCapBytes = 16UL << 20;

// The adapter broke the protocol: crashed, printed something else, or did not answer in
// time. One line naming the adapter and the last thing it printed.
struct AdapterError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct AdapterSpec {
    std::string name;                      // the run's name, e.g. "redis-py"
    std::vector<std::string> command;      // argv; relative paths resolve against `cwd`
    std::filesystem::path cwd;             // the project's folder
    std::map<std::string, std::string> env;  // LOCKBENCH_* added to the client's environment
    std::chrono::milliseconds op_timeout{2000};
    std::filesystem::path stderr_path;     // where its stderr goes; empty: the client's
    bool fence = false;                    // the run's `fence`: the store checks the library's fence
    bool probe_key_ttl = false;            // the run's `probe_key_ttl`: read the key's TTL after each acquire
    bool redis_nodes = true;               // the nodes are redis-servers (holds() can ask them)
    std::chrono::milliseconds command_timeout{200};  // each probe command's
    // The adapter pool's socket (adapter_pool.h), if the adapter may be one that served an
    // earlier repetition; empty: the client starts its own.
    std::filesystem::path pool;
    std::string pool_run;  // the run it serves (its start barrier's prefix), as the pool knows it
};

// An adapter process just started: its pid and the ends of its stdin and stdout pipes.
struct AdapterProcess {
    pid_t pid = -1;
    int to = -1;
    int from = -1;
};

// Starts `spec`'s command with its environment, in its folder, its stderr to spec.stderr_path,
// dying with the calling thread; in the caller's process group, or (own_group) leading one of
// its own. If exec fails, the adapter's stdout says so as a not-ready line. Throws AdapterError
// if no process could be made.
AdapterProcess start_adapter_process(const AdapterSpec& spec, bool own_group);



class ExternalLock final : public Lock {
public:
    // Starts the adapter and waits for its {"ready": true, ...} line. Throws AdapterError.
    ExternalLock(AdapterSpec spec, std::string key, long long ttl_ms);
    ~ExternalLock() override;
    ExternalLock(const ExternalLock&) = delete;
    ExternalLock& operator=(const ExternalLock&) = delete;

    // One request as the protocol has it, its answer as the adapter gave it (an event line
    // read meanwhile is kept, as for any call): what `lockbench adapter-check` holds to the
    // protocol. Throws AdapterError as any call does.
    nlohmann::json request(const nlohmann::json& request) { return call(request); }
    // The LOCKBENCH_* settings it was started with (what a reset for another run carries).
    const std::map<std::string, std::string>& environment() const { return spec_.env; }

    AcquireResult try_acquire(Env& env) override;
    ReleaseResult release(Env& env, const Lease& lease) override;
    ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) override;
    std::vector<LockEvent> take_events() override;
    // Where the nodes are redis-servers and the lease has a token: whether a majority of them
    // (the one node of a one-node run) still keep it at the key the library stored.
    std::optional<bool> holds(Env& env, const Lease& lease) override;

    const std::string& library() const { return library_; }  // what the adapter said it runs
    // What the ready line said about the library, as run.json records it: "library" (name and
    // version), "algorithm" (one line), "fencing" (whether it hands out fencing tokens); each
    // only if the adapter said it, with the right type.
    const nlohmann::json& described() const { return described_; }
    // The process group of an adapter the pool holds, which the nemesis signals beside the
    // client's; 0 for the client's own (in the client's group).
    pid_t pooled_group() const { return pooled_ && pid_ > 0 ? pid_ : 0; }
    // Whether the adapter served an earlier repetition (reset for this one).
    bool reused() const { return pooled_ && !pooled_->fresh; }

private:
    nlohmann::json read_hello();
    void hello(const nlohmann::json& ready_line);
    bool start_pooled();
    void drop_pooled(const char* refused = nullptr);  // refused: drop_pooled_adapter's
    void copy_pooled_stderr();
    // `acquiring`: the env of the acquire this request is, which hears a "waiting" event
    // (the library queued it behind a holder) as its point in_line.
    // `reset`: the request that readies a pooled adapter for this run; what it said before (an
    // event, a late line) belongs to the run before.
    nlohmann::json call(const nlohmann::json& request, Env* acquiring = nullptr, bool reset = false);
    // Keeps an event line (its kind decided from the whole line, its time now); false if the
    // line is not an event. A "waiting" one during an acquire reaches in_line on `acquiring`.
    bool keep_if_event(const std::string& line, Env* acquiring = nullptr);
    // The next line, by `deadline`; `allowed` is the wait it had, as a failure names it.
    std::string read_line(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds allowed,
                          const std::string& waiting_for);
    [[noreturn]] void fail(const std::string& what, bool with_last_line = true);
    int reap();
    void read_unsolicited();  // with mutex_ held
    // The protocol is one answer to each request: a line that is neither an event nor awaited
    // (a second answer, an answer before any request) breaks it, named by the request before.
    [[noreturn]] void fail_stray();

    AdapterSpec spec_;
    std::string key_;
    std::string token_key_;  // where the last acquire's token is: key_, or the key its answer named
    long long ttl_ms_;
    pid_t pid_ = -1;
    int to_ = -1;     // the adapter's stdin
    int from_ = -1;   // its stdout
    std::string buffer_;
    std::string last_line_;
    std::string stray_;                    // the first line that answered no request, if any
    std::string last_request_ = "its ready line";  // "acquire #12": what a stray line came after
    std::map<std::string, long long> requests_;    // how many of each op were sent
    std::string library_;
    nlohmann::json described_ = nlohmann::json::object();
    std::string gone_why_;                 // fail()'s line, once the adapter is gone
    std::uintmax_t stderr_from_ = 0;       // its stderr file's size when it started: what it wrote is after
    std::optional<PooledAdapter> pooled_;  // taken from the pool, given back when whole
    bool resetting_ = false;               // a reset is under way: a failure now is a refusal
    std::filesystem::path pool_stderr_;    // a pooled adapter's stderr file (the pool's) ...
    std::filesystem::path stderr_to_;      // ... copied, from stderr_from_, to the run's
    std::mutex mutex_;                     // the pipe: one request at a time, from either thread
    std::mutex events_mutex_;              // events_ alone: taking them never waits on a call
    std::vector<LockEvent> events_;        // unsolicited event lines not yet taken
};

}  // namespace lockbench
