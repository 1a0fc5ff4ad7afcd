// `lockbench check DIR --write`: the files a run's checker writes for the report
// (runs/NAME/sections.json, analysis/report_data.h), rebuilt from the histories and store
// logs of a run folder or results tree that an older lockbench wrote. A results tree is then
// marked as at least version 6 (kOldestContinued), which the report and the matrix require.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lockbench {

struct DerivedWritten {
    long long runs = 0;                    // run folders whose derived files were written
    std::vector<std::string> differences;  // figures a summary.json holds that its histories do not give
};

// DIR is a run folder (`lockbench run`) or a results tree (`matrix`, `sweep`, `merge`). Every
// run is checked again first; if any figure differs, nothing is written (an older checker's
// tree: make it afresh) and the differences are returned. Throws one line on damage.
DerivedWritten write_derived_files(const std::filesystem::path& dir);

}  // namespace lockbench
