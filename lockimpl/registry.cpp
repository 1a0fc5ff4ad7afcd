#include "lockimpl/registry.h"

#include <algorithm>

namespace lockbench {

const std::vector<AlgorithmInfo>& algorithms() {
    static const std::vector<AlgorithmInfo> table = {
        setnx_algorithm(),
        getset_algorithm(),
        token_lua_algorithm(),
        redlock_algorithm(),
        reentrant_algorithm(),
    };
    return table;
}

const AlgorithmInfo* find_algorithm(std::string_view name) {
    const auto& table = algorithms();
    auto it = std::ranges::find(table, name, &AlgorithmInfo::name);
    return it == table.end() ? nullptr : &*it;
}

}  // namespace lockbench
