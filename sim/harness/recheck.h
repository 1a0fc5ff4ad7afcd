// `lockbench check DIR`: the runs recorded under DIR, checked again from their histories and
// store logs (nothing is written).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

struct Recheck {
    nlohmann::json summary;                // as the checker sees the runs now
    std::vector<std::string> differences;  // "DIR/summary.json: run R: FIGURE: ...", one a figure
};

// Throws one line naming the file (and line) of anything damaged: summary.json, a run.json,
// a history or a store log that a genuine run could not have written (analysis/record_check.h).
Recheck recheck(const std::filesystem::path& dir);

}  // namespace lockbench
