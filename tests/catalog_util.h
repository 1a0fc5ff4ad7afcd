// The catalog's files as the scenarios they run, for tests that draw or simulate from them: a
// case (scenarios/NAME.json) composed with every lock of locks/ that joins the catalog
// (sim/harness/compose.h); a scenario of the explicit format as it is.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/harness/compose.h"

namespace lockbench::test {

inline const std::filesystem::path kCatalogSource = LOCKBENCH_SOURCE_DIR;

// `adjust` changes the file as read, before it is composed (a shorter workload, a TTL).
inline nlohmann::json catalog_scenario(const std::string& name,
                                       const std::function<void(nlohmann::json&)>& adjust = {}) {
    const std::filesystem::path file = kCatalogSource / "scenarios" / (name + ".json");
    nlohmann::json read = read_input_json(file);
    if (adjust) adjust(read);
    return scenario_from_source(read, file.string(), load_lock_folder(kCatalogSource / "locks"), LockChoice::catalog).source;
}

}  // namespace lockbench::test
