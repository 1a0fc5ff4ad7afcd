// The table of lock algorithms: one explicit list, no static-initialisation tricks.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockimpl/lock.h"
#include "lockimpl/params.h"

namespace lockbench {

struct AlgorithmInfo {
    std::string name;          // as the CLI and scenarios spell it
    std::string summary;       // one line, naming where it comes from
    int default_nodes = 1;     // lock nodes it runs over unless the scenario says otherwise
    std::vector<ParamSpec> params;
    std::unique_ptr<Lock> (*make)(const Params&, const LockContext&) = nullptr;
    // The points its acquire passes besides the ones every worker passes (env.h), with these
    // parameters (a lock file's: those it leaves out take their defaults). A fault armed at a
    // point a lock never passes does not reach it.
    std::vector<Point> (*acquire_points)(const nlohmann::json& params) = nullptr;
    // Whether, with these parameters, it keeps a lease alive in a task of its own
    // (Env::background: reentrant's watchdog), which a background pause can stop alone.
    bool (*background_task)(const nlohmann::json& params) = nullptr;
    // Whether every lease one client takes carries the same token (reentrant's hash field): a
    // store checking the token cannot tell that client's stale lease from its new one.
    bool one_token_per_client = false;
};

const std::vector<AlgorithmInfo>& algorithms();
const AlgorithmInfo* find_algorithm(std::string_view name);

// One entry per file in lockimpl/.
AlgorithmInfo setnx_algorithm();
AlgorithmInfo getset_algorithm();
AlgorithmInfo token_lua_algorithm();
AlgorithmInfo redlock_algorithm();
AlgorithmInfo reentrant_algorithm();

}  // namespace lockbench
