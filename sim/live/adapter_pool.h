// Adapters that live across repetitions (issue 44): a matrix keeps each lock's adapter
// processes between its repetitions instead of starting a Node.js, Python or JVM process for
// every client of every repetition.
//
//   matrix ── AdapterPool (a thread; a socket in the run's temp folder, LOCKBENCH_ADAPTER_POOL)
//               │  starts adapters, each leading its own process group, dying with the pool
//   client ─────┤  take {command, cwd, env}  ──►  an idle one of the same command, folder and
//               │                                 params, else a new one; its stdin and stdout
//               │                            ◄──  pipes passed over the socket (SCM_RIGHTS)
//               │  (a reused one is sent {"op": "reset", "env": ...} by the client: it drops its
//               │   library's connections and state and builds them anew for this run)
//               │  give id   ──►  whole and answered: kept for the next repetition
//               │  drop id, or the connection closed without give  ──►  its group is killed
//
// The client tells the run which group its adapter leads, and the nemesis pauses and kills
// that group beside the client's. A client with a shifted clock starts its own adapter (the
// shim is in its environment), as does one in a run with no pool.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace lockbench {

struct AdapterSpec;

// The environment variable that names the pool's socket to the processes a matrix starts.
inline constexpr const char* kAdapterPoolVar = "LOCKBENCH_ADAPTER_POOL";

// An adapter a client has taken from the pool.
struct PooledAdapter {
    int socket = -1;                     // this client's connection to the pool
    int id = 0;
    pid_t pid = -1;                      // leads its own process group
    int to = -1;                         // its stdin
    int from = -1;                       // its stdout
    bool fresh = false;                  // just started: its ready line comes next; else reset it
    std::filesystem::path stderr_path;   // the pool's file for its stderr ...
    std::uintmax_t stderr_from = 0;      // ... and its size when this client took it
};

// Where client `client` of a run writes the group its pooled adapter leads (beside the run's
// start barrier, whose prefix is `barrier`).
inline std::filesystem::path adapter_group_file(const std::filesystem::path& barrier, int client) {
    return barrier.string() + ".adapter-group-" + std::to_string(client);
}

// Takes an adapter for `spec` from the pool at spec.pool: an idle one of the same command,
// folder and params (unless `fresh_only`), else one the pool starts with spec's environment.
// nullopt if the pool cannot be reached (the client then starts its own).
std::optional<PooledAdapter> take_pooled_adapter(const AdapterSpec& spec, bool fresh_only);
// Gives it back, whole, for another repetition once run `run` (its barrier's prefix) is over.
void give_back_pooled_adapter(PooledAdapter& a, const std::string& run);
// Has the pool end it (its group killed). Why, if it refused a reset: "reset" (for this run:
// another is started), "close" (at this run's end: it could not say it dropped its library's
// connections, so it is not kept).
void drop_pooled_adapter(PooledAdapter& a, const char* refused = nullptr);
// Its wait status if it has ended (the pool is its parent and reaps it), else nullopt; `end`:
// have the pool kill it first.
std::optional<int> pooled_adapter_status(PooledAdapter& a, bool end);

// A run's connection to the matrix's pool (none without one), from before its clients start
// until its nemesis has stopped: what its clients give back is handed to no other run before,
// since until then a fault or the heal on a client still signals that adapter's group.
class PoolRun {
public:
    explicit PoolRun(const std::string& run);
    ~PoolRun() { end(); }
    PoolRun(const PoolRun&) = delete;
    PoolRun& operator=(const PoolRun&) = delete;
    void end();

private:
    int socket_ = -1;
};

class AdapterPool {
public:
    // Listens on dir/adapters.sock (dir must exist) and sets LOCKBENCH_ADAPTER_POOL in this
    // process's environment, which every process it starts from here on inherits.
    explicit AdapterPool(std::filesystem::path dir);
    ~AdapterPool();  // end_all()
    // Unsets the variable, ends every adapter and reaps it (once; the destructor does it too).
    void end_all();
    AdapterPool(const AdapterPool&) = delete;
    AdapterPool& operator=(const AdapterPool&) = delete;

    int started() const { return started_; }  // adapters it started
    int reused() const { return reused_ - refused_reset_; }  // times one that had served before served again
    int refused() const { return refused_reset_ + refused_close_; }  // times one could not be reset
    // The CPU seconds of the adapters it has ended (all of them, once it is destroyed): the
    // runs' own timing.json counts only what each run reaped, and it reaps no kept adapter.
    double cpu_seconds() const { return cpu_s_; }

private:
    struct Adapter {
        int id;
        std::string key;           // command, folder and params
        pid_t pid;
        int to, from;
        std::filesystem::path err;
        int owner = -1;            // the connection that holds it; -1 idle; kQuarantined: given back, its run still going
        std::string run;           // the run that gave it back
        std::string copy_to;       // the run's file for its stderr, and where in its own file that run began
        std::uintmax_t copy_from = 0;
        long long idle_since = 0;  // when given back, in gives
    };
    void loop();
    void on_message(int conn);
    void handle(int conn, const std::string& text);
    void retire(int id);            // kill its group; reaped later (its pid stays its own meanwhile)
    void copy_stderr(const Adapter& a);  // what it wrote since taken, into its run's file
    void end_retiring(bool all);    // those past their 500 ms, or ended, killed and set to be reaped
    static constexpr int kQuarantined = -2;
    void reap_retired(bool all);

    std::filesystem::path dir_;
    std::filesystem::path socket_path_;
    int listen_fd_ = -1;
    int wake_[2] = {-1, -1};
    std::thread thread_;
    std::vector<int> connections_;
    std::map<int, Adapter> adapters_;
    std::vector<std::pair<pid_t, long long>> retired_;  // pid, when killed (ns)
    std::vector<std::pair<pid_t, long long>> retiring_;  // pid, when to kill it (ns): stdin closed, exiting
    std::map<int, std::string> runs_;                    // a run's connection: its name (its barrier)
    std::set<std::string> own_kinds_;                    // kinds that said they cannot be kept
    int next_id_ = 1;
    long long idle_clock_ = 0;
    std::atomic<int> started_{0};
    std::atomic<int> reused_{0};
    std::atomic<int> refused_reset_{0};
    std::atomic<int> refused_close_{0};
    std::atomic<double> cpu_s_{0};
};

}  // namespace lockbench
