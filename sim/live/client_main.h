// `lockbench client SPEC`: one client of a live run, in a process of its own, so that a fault
// can pause it (SIGSTOP), kill it or skew its clock without touching the others.
//
//   SPEC (written by live_run.cpp) ──► LiveEnv(its paths to the lock nodes) + LiveEnv(store)
//        + the run's lock (or an adapter: external.h) ──► run_worker ──► history/client-N.jsonl
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/scenario.h"
#include "sim/live/external.h"

namespace lockbench {

// The client's exit code when its external lock's adapter broke the protocol (the one-line
// reason is the last line of its stderr and of its history).
constexpr int kAdapterFailed = 3;

// Returns the process exit code: 0, or kAdapterFailed.
int client_main(const std::filesystem::path& spec_file);

}  // namespace lockbench
