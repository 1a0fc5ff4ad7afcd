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
#include <mutex>
#include <optional>
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
// Gives it back, whole, for another repetition.
void give_back_pooled_adapter(PooledAdapter& a);
// Has the pool end it (its group killed). Why, if it refused a reset: "reset" (for this run:
// another is started), "close" (at this run's end: it could not say it dropped its library's
// connections, so it is not kept).
void drop_pooled_adapter(PooledAdapter& a, const char* refused = nullptr);
// Its wait status, once it ended on its own (the pool is its parent and reaps it).
int pooled_adapter_status(PooledAdapter& a);

class AdapterPool {
public:
    // Listens on dir/adapters.sock (dir must exist) and sets LOCKBENCH_ADAPTER_POOL in this
    // process's environment, which every process it starts from here on inherits.
    explicit AdapterPool(std::filesystem::path dir);
    ~AdapterPool();  // unsets the variable; ends every adapter and reaps it
    AdapterPool(const AdapterPool&) = delete;
    AdapterPool& operator=(const AdapterPool&) = delete;

    int started() const { return started_; }  // adapters it started
    int reused() const { return reused_ - refused_reset_; }  // times one that had served before served again
    int refused() const { return refused_reset_ + refused_close_; }  // times one could not be reset

private:
    struct Adapter {
        int id;
        std::string key;           // command, folder and params
        pid_t pid;
        int to, from;
        std::filesystem::path err;
        int owner = -1;            // the connection that holds it; -1 idle
        long long idle_since = 0;  // when given back, in gives
    };
    void loop();
    void on_message(int conn);
    void handle(int conn, const std::string& text);
    void retire(int id);            // kill its group; reaped later (its pid stays its own meanwhile)
    void reap_retired(bool all);

    std::filesystem::path dir_;
    std::filesystem::path socket_path_;
    int listen_fd_ = -1;
    int wake_[2] = {-1, -1};
    std::thread thread_;
    std::vector<int> connections_;
    std::map<int, Adapter> adapters_;
    std::vector<std::pair<pid_t, long long>> retired_;  // pid, when killed (ns)
    int next_id_ = 1;
    long long idle_clock_ = 0;
    std::atomic<int> started_{0};
    std::atomic<int> reused_{0};
    std::atomic<int> refused_reset_{0};
    std::atomic<int> refused_close_{0};
};

}  // namespace lockbench
