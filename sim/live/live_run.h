// One run in the live world:
//
//   run_live ──► start lock nodes + store (redis-server, fresh), Sentinel, link proxies, clock shims
//              ├─► spawn N client processes: `lockbench client SPEC` (client_main.h)
//              │      each builds its lock, then waits at the start barrier (start_barrier.h)
//              ├─► release them at one instant; the nemesis carries out the run's faults
//              └─► wait for them, read the store's log → store.jsonl; return the outcome
//
// Clients are separate processes so that a fault can pause one (SIGSTOP) or skew its clock
// without touching the others.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "sim/engine/run_setup.h"
#include "sim/engine/scenario.h"

namespace lockbench {

class PhaseClock;

struct LiveRunOptions {
    std::string self_exe;                // this binary, to start clients (and the adapter check) with
    std::filesystem::path project_dir;   // where an external adapter's command runs
    PhaseClock* clock = nullptr;         // if given, marks the run's phases (phase_clock.h)
    // An external lock's adapter is first started alone, to fail the run in one line before
    // any client starts if it cannot start (preflight_adapter). False: client 0 says what its
    // adapter's ready line said instead (a matrix's repetitions of a lock after its first).
    bool preflight = true;
};

// Runs `run` into RUN_DIR (history/, store.jsonl, nemesis.jsonl, sentinel.jsonl); TMP holds the
// nodes' folders, sockets and client specs. `started` is called once the nodes are up, just
// before the clients start. Throws std::runtime_error on a failure to run.
RunOutcome run_live(const Scenario& s, const RunSpec& run, std::uint64_t seed, const std::filesystem::path& run_dir,
                    const std::filesystem::path& tmp, const LiveRunOptions& opts, const std::function<void()>& started);

// `lockbench adapter-check`: starts the run's lock servers and holds two of its adapters to the
// protocol (adapter_check.h), `plan` saying what the lock file offers ({"extend", "fencing"}).
// Returns the failures, one line each. Throws std::runtime_error if the servers cannot start.
std::vector<std::string> check_adapter(const Scenario& s, const RunSpec& run, const nlohmann::json& plan,
                                       const std::filesystem::path& tmp, const LiveRunOptions& opts);

}  // namespace lockbench
