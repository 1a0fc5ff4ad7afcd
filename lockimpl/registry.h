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
