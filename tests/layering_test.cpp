// The layers hold: every #include "..." in the project's sources points at its own layer or one
// below it, and the two worlds never include each other (docs/architecture.md):
//
//   cli ─► sim/harness ─► sim/live ────┬─► process
//                     └─► sim/virtual ─┴─► sim/engine ─► lockimpl, analysis, faults
//
// (cli may use every layer: it also is the live client process, sim/live/client_main.h.)
//
// The CMake libraries link the same way; this test catches the include that would compile
// anyway because every header sits under one include folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Each layer (a folder under the project's root) and the layers its files may include.
const std::map<std::string, std::set<std::string>>& allowed() {
    static const std::map<std::string, std::set<std::string>> rules = {
        {"lockimpl", {"lockimpl"}},
        {"analysis", {"analysis"}},
        {"faults", {"faults"}},
        {"process", {"process"}},
        {"sim/engine", {"sim/engine", "lockimpl", "analysis", "faults"}},
        {"sim/live", {"sim/live", "sim/engine", "lockimpl", "analysis", "faults", "process"}},
        {"sim/virtual", {"sim/virtual", "sim/engine", "lockimpl", "analysis", "faults"}},
        {"sim/harness", {"sim/harness", "sim/live", "sim/virtual", "sim/engine", "lockimpl", "analysis", "faults", "process"}},
        {"cli", {"cli", "sim/harness", "sim/live", "sim/virtual", "sim/engine", "lockimpl", "analysis", "faults", "process"}},
    };
    return rules;
}

// The layer an included path ("sim/live/nemesis.h") lies in: the longest rule folder it starts with.
std::string layer_of(const std::string& path) {
    std::string best;
    for (const auto& [layer, _] : allowed())
        if (path.starts_with(layer + "/") && layer.size() > best.size()) best = layer;
    return best.empty() ? path.substr(0, path.find('/')) : best;
}

// Every include in `text` (a file of `layer`) that its layer may not make, as "line N: path".
std::vector<std::string> violations(const std::string& layer, const std::string& text) {
    static const std::regex include(R"(^\s*#\s*include\s*[<"]([^">]+)[">])");
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        // The project's root is the include folder, so <sim/live/nemesis.h> would compile too; a
        // system header (<vector>, <hiredis/hiredis.h>) is no layer of ours.
        const std::string path = m[1].str();
        if (!allowed().contains(path.substr(0, path.find('/'))) && !path.starts_with("sim/")) continue;
        const std::string target = layer_of(path);
        if (!allowed().at(layer).contains(target))
            out.push_back("line " + std::to_string(n) + ": " + path + " (" + layer + " may not include " + target + ")");
    }
    return out;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool is_source(const fs::path& p) {
    const std::string ext = p.extension().string();
    return ext == ".h" || ext == ".cpp" || ext == ".c";
}

const fs::path kRoot = LOCKBENCH_SOURCE_DIR;

// Every source file of the layers: its layer, its path from the root and its text, read once.
struct Source {
    std::string layer, path, text;
};

const std::vector<Source>& layer_sources() {
    static const std::vector<Source> sources = [] {
        std::vector<Source> out;
        for (const auto& [layer, _] : allowed())
            for (const auto& e : fs::recursive_directory_iterator(kRoot / layer))
                if (e.is_regular_file() && is_source(e.path()))
                    out.push_back({layer, fs::relative(e.path(), kRoot).string(), read(e.path())});
        return out;
    }();
    return sources;
}

TEST(Layering, EveryIncludePointsDownOrWithinItsLayer) {
    for (const Source& s : layer_sources())
        for (const std::string& v : violations(s.layer, s.text)) ADD_FAILURE() << s.path << ": " << v;
    EXPECT_GE(layer_sources().size(), 60u) << "the layers should hold the project's sources";
}

// A file straight under sim/, or a new folder there, would belong to no layer.
TEST(Layering, SimHoldsOnlyItsLayers) {
    for (const auto& e : fs::directory_iterator(kRoot / "sim")) {
        const std::string rel = fs::relative(e.path(), kRoot).string();
        EXPECT_TRUE(e.is_directory() && allowed().contains(rel))
            << rel << " is not in a layer: put it in sim/engine, sim/live, sim/virtual or sim/harness "
            << "(or add the layer to tests/layering_test.cpp and the CMake libraries)";
    }
}

// The rule itself catches what it must: an upward include, one across the worlds, and a file
// that leaves its layer by a path the rules do not know.
TEST(Layering, TheRuleRefusesUpwardAndSidewaysIncludes) {
    EXPECT_EQ(violations("sim/engine", "#include \"sim/live/nemesis.h\"\n").size(), 1u);
    EXPECT_EQ(violations("sim/virtual", "#include <vector>\n  #include \"sim/live/live_env.h\"\n").size(), 1u);
    EXPECT_EQ(violations("sim/live", "#include \"sim/virtual/world.h\"\n").size(), 1u);
    EXPECT_EQ(violations("faults", "#include \"sim/live/live_env.h\"\n").size(), 1u);
    EXPECT_EQ(violations("lockimpl", "#include \"sim/engine/store.h\"\n").size(), 1u);
    EXPECT_EQ(violations("sim/engine", "#include \"sim/stray.h\"\n").size(), 1u);
    EXPECT_EQ(violations("sim/engine", "#include <sim/live/nemesis.h>\n").size(), 1u);
    EXPECT_TRUE(violations("sim/engine", "#include <vector>\n#include <hiredis/hiredis.h>\n").empty());
    EXPECT_TRUE(violations("sim/harness", "#include \"sim/live/live_run.h\"\n#include \"sim/virtual/sim_run.h\"\n").empty());
    EXPECT_TRUE(violations("sim/live", "#include \"sim/engine/scenario.h\"\n#include \"process/process.h\"\n").empty());
}

// ---- a fault kind in one place (sim/engine/fault_kind.h) --------------------------------

// The fault kinds: one file each in sim/engine/kinds/, named as the "fault" field names it.
std::vector<std::string> kind_names() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(kRoot / "sim/engine/kinds"))
        if (e.path().extension() == ".cpp") names.push_back(e.path().stem().string());
    std::ranges::sort(names);
    return names;
}

// Where `text` (a source file outside the kinds' folder) decides by a fault's kind: a
// FaultSpec::Kind value named (qualified, or compared as Kind::NAME inside FaultSpec), or a
// kind's name compared, as "line N: …".
std::vector<std::string> kind_switches(const std::string& text, const std::vector<std::string>& kinds) {
    std::string names;
    for (const std::string& k : kinds) names += (names.empty() ? "" : "|") + k;
    const std::regex by_value("FaultSpec::Kind::[a-z]|([!=]=\\s*|case\\s+)Kind::(" + names + ")\\b|\\bKind::(" + names + ")\\s*[!=]=");
    const std::regex by_name("[!=]=\\s*\"(" + names + ")\"|\"(" + names + ")\"\\s*[!=]=");
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, by_value) || std::regex_search(line, by_name))
            out.push_back("line " + std::to_string(n) + ": " + line);
    return out;
}

// Each kind's file holds its entry, and the list of kinds names it: a kind added elsewhere, or
// a file of kinds/ that is no kind, fails here.
TEST(OnePlace, EachFaultKindIsOneFileOfKindsThatHoldsItsEntry) {
    const std::vector<std::string> kinds = kind_names();
    EXPECT_GE(kinds.size(), 6u);
    const std::string list = read(kRoot / "sim/engine/fault_kind.cpp");
    for (const std::string& k : kinds) {
        const std::string text = read(kRoot / "sim/engine/kinds" / (k + ".cpp"));
        EXPECT_NE(text.find(".name = \"" + k + "\""), std::string::npos) << "kinds/" << k << ".cpp: its entry's name is not \"" << k << "\"";
        std::string entry = k + "_kind()";
        std::ranges::replace(entry, '-', '_');
        EXPECT_NE(text.find("const FaultKind& " + entry + " {"), std::string::npos) << "kinds/" << k << ".cpp does not define " << entry;
        EXPECT_NE(list.find("&" + entry), std::string::npos) << "fault_kinds() (sim/engine/fault_kind.cpp) does not list " << entry;
    }
}

// Nothing outside sim/engine/kinds/ switches on a kind: what a kind does, reads, says or
// cannot reach is its entry's, asked through fault_kind().
TEST(OnePlace, NoCodeOutsideAKindsFileDecidesByTheFaultsKind) {
    const std::vector<std::string> kinds = kind_names();
    ASSERT_GE(layer_sources().size(), 60u);
    for (const Source& s : layer_sources()) {
        if (s.path.starts_with("sim/engine/kinds/")) continue;
        for (const std::string& v : kind_switches(s.text, kinds))
            ADD_FAILURE() << s.path << ": " << v << " (decide in the kind's file, sim/engine/kinds/, through its FaultKind entry)";
    }
}

TEST(OnePlace, TheRuleFindsASwitchOnAKind) {
    const std::vector<std::string> kinds{"pause", "link"};
    EXPECT_EQ(kind_switches("    case FaultSpec::Kind::pause:\n", kinds).size(), 1u);
    EXPECT_EQ(kind_switches("if (f.kind == FaultSpec::Kind::link && x)\n", kinds).size(), 1u);
    EXPECT_EQ(kind_switches("if (f.value(\"fault\", \"\") != \"link\")\n", kinds).size(), 1u);
    EXPECT_EQ(kind_switches("if (\"pause\" == kind)\n", kinds).size(), 1u);
    EXPECT_EQ(kind_switches("    if (kind == Kind::link) s += x;\n", kinds).size(), 1u);
    EXPECT_TRUE(kind_switches("if (f.link.kind == LinkFault::Kind::hold)\n", kinds).empty());
    EXPECT_TRUE(kind_switches("one({{\"fault\", \"pause\"}, {\"point\", \"before_write\"}})\n", kinds).empty());
    EXPECT_TRUE(kind_switches("const FaultKind& k = fault_kind(f.kind);\n", kinds).empty());
}

// ---- a lock service in one place (sim/engine/service.h) ----------------------------------

// Where `text` decides by which service a run is on: a Service value compared or switched on,
// or a service's name compared, as "line N: …". A default (`= Service::redis`) is no decision.
// The services' names: each entry's `.name` in sim/engine/service.cpp.
std::string service_names_pattern() {
    const std::string table = read(kRoot / "sim/engine/service.cpp");
    const std::regex name(R"re(\.name = "([a-z0-9-]+)")re");
    std::string out;
    for (auto it = std::sregex_iterator(table.begin(), table.end(), name); it != std::sregex_iterator(); ++it)
        out += (out.empty() ? "" : "|") + (*it)[1].str();
    return out;
}

std::vector<std::string> service_switches(const std::string& text) {
    static const std::string names = service_names_pattern();
    const std::regex by_value(R"([!=]=\s*(lockbench::)?Service::[a-z]|(lockbench::)?Service::[a-z]+\s*[!=]=|case\s+(lockbench::)?Service::[a-z])");
    const std::regex by_name("[!=]=\\s*\"(" + names + ")\"|\"(" + names + ")\"\\s*[!=]=");
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, by_value) || std::regex_search(line, by_name)) out.push_back("line " + std::to_string(n) + ": " + line);
    return out;
}

// What a service is, is its entry's (sim/engine/service.cpp); how its servers start is
// start_service's (sim/live/lock_service.cpp) and its own file's in sim/live/. Nothing else
// decides by the service: it asks service_info().
TEST(OnePlace, NoCodeOutsideAServicesPlaceDecidesByTheService) {
    const std::set<std::string> its_place{"sim/engine/service.h", "sim/engine/service.cpp", "sim/live/lock_service.cpp"};
    ASSERT_GE(layer_sources().size(), 60u);
    for (const Source& s : layer_sources()) {
        if (its_place.contains(s.path)) continue;
        for (const std::string& v : service_switches(s.text)) ADD_FAILURE() << s.path << ": " << v << " (ask service_info(), sim/engine/service.h)";
    }
    EXPECT_GE(std::ranges::count(service_names_pattern(), '|'), 3) << service_names_pattern();
    EXPECT_EQ(service_switches("    if (lock.service == Service::postgresql)\n").size(), 1u);
    EXPECT_EQ(service_switches("        case Service::etcd: return x;\n").size(), 1u);
    EXPECT_EQ(service_switches("    if (Service::redis != run.service)\n").size(), 1u);
    EXPECT_EQ(service_switches("if (name != \"zookeeper\")\n").size(), 1u);
    EXPECT_TRUE(service_switches("    Service service = Service::redis;\n").empty());
}

}  // namespace
