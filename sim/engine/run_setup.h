// What both worlds do the same way in one run: the client's seed, lock and worker, the store's
// log read back after the run, and the run's record (run.json).
//
//   live:    sim/live/live_run.cpp + sim/live/client_main.cpp (one process a client)
//   virtual: sim/virtual/sim_run.cpp (one fiber a client)
//          ──► RunOutcome ──► run_record() ──► RunRecord ──► run.json (run_record.h)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "lockimpl/lock.h"
#include "sim/engine/run_record.h"
#include "sim/engine/scenario.h"
#include "sim/engine/worker.h"

namespace lockbench {

// Client `client`'s seed in a run seeded `run_seed`.
std::uint64_t client_seed(std::uint64_t run_seed, int client);

// The run's algorithm as client `client` holds it (not for "external": sim/live/external.h).
std::unique_ptr<Lock> make_client_lock(const RunSpec& run, const std::string& lock_key, int client);

// Client `client`'s worker, starting at `start`; `seed` is client_seed()'s.
WorkerSpec worker_spec(const RunSpec& run, int client, std::uint64_t seed, Instant start);

// After the run: the store's commands that read its log and counter back, and writing them out.
Command store_log_command();
Command store_counter_command();
// The client inside its section now (the store's log ends with its enter), and its reply
// read: none while nobody is.
Command store_holder_command();
std::optional<int> holder_from(const Value& reply);
// Writes the log's records into RUN_DIR/store.jsonl in the store's order; returns the counter.
long long write_store_log(const std::filesystem::path& run_dir, const Value& log, const Value& counter);

// What a world reports of one run, beyond its histories and store log.
struct RunOutcome {
    nlohmann::json faults = nlohmann::json::array();          // per fault: label, fired, clients
    long long faults_injected = 0;
    long long final_counter = 0;
    std::vector<ClientFailure> clients_failed;                // adapters that broke
    std::optional<std::size_t> sim_events;                    // the simulator's: events it ran
    nlohmann::json adapter;                                   // an external library's ready line (ExternalLock::described)
    std::vector<std::string> unmet;                           // FaultSchedule::unmet(): what did not happen as written
};

// The run's record, run.json: what ran, with which seed, and what the world reported.
RunRecord run_record(const Scenario& s, const RunSpec& run, std::uint64_t seed, const RunOutcome& outcome);

}  // namespace lockbench
