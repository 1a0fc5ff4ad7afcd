#include "sim/harness/catalog.h"

#include <algorithm>
#include <stdexcept>

#include "sim/engine/scenario.h"

namespace fs = std::filesystem;

namespace lockbench {

std::vector<fs::path> Catalog::case_files(const std::vector<std::string>& given) const {
    std::vector<fs::path> files(given.begin(), given.end());
    if (!files.empty()) return files;
    const fs::path dir = scenarios_dir();
    if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": no scenarios folder; name scenario files");
    for (const fs::path& d : {dir, dir / "discovered"}) {
        if (!fs::is_directory(d)) continue;
        for (const auto& e : fs::directory_iterator(d))
            if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::ranges::sort(files);
    return files;
}

std::vector<CaseFile> Catalog::cases() const {
    std::vector<CaseFile> out;
    for (const fs::path& f : case_files()) {
        const nlohmann::json j = read_input_json(f);
        if (is_case_file(j)) out.push_back(parse_case_file(j, f.string()));
    }
    return out;
}

std::vector<LockFile> Catalog::locks() const {
    return fs::is_directory(locks_dir()) ? load_lock_folder(locks_dir()) : std::vector<LockFile>{};
}

}  // namespace lockbench
