// The catalog a checkout holds: its cases (scenarios/, and the ones a search promoted and kept
// in scenarios/discovered/) and its locks (locks/), read from one root. The command line finds
// the root beside its binary; everything that needs the whole catalog asks this.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/engine/case_file.h"
#include "sim/engine/lock_file.h"

namespace lockbench {

class Catalog {
public:
    explicit Catalog(std::filesystem::path root) : root_(std::move(root)) {}

    std::filesystem::path scenarios_dir() const { return root_ / "scenarios"; }
    std::filesystem::path locks_dir() const { return root_ / "locks"; }

    // The scenario files `given`, or else every case file of the catalog, sorted.
    std::vector<std::filesystem::path> case_files(const std::vector<std::string>& given = {}) const;
    // The catalog's case files, parsed once; a file of the explicit format (with "runs") is
    // left out.
    std::vector<CaseFile> cases() const;
    // Every lock of locks/ (none when there is no such folder).
    std::vector<LockFile> locks() const;

private:
    std::filesystem::path root_;
};

}  // namespace lockbench
