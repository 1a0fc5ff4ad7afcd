// An external run's command and parameters, as they reach its adapter through execve(2): each
// command element as an argument, the parameters as LOCKBENCH_PARAMS in its environment
// (sim/live/client_main.cpp). What execve would refuse (E2BIG) or cut short without a word (a
// NUL ends a C string) is refused when the scenario is read, naming the field, rather than
// reported as the program failing in every client.
#include "sim/engine/scenario_fields.h"

namespace lockbench::scenario_parse {
namespace {

// Linux's MAX_ARG_STRLEN, one argument or environment string with its NUL: 32 pages, taken
// as 4 KiB pages everywhere, so that a scenario is valid on every machine or on none.
constexpr std::size_t kMaxExecString = 32 * 4096;

}  // namespace

void check_adapter_launch(Fields& f, const RunSpec& r) { check_adapter_launch(f, r.command, r.params.json()); }

void check_adapter_launch(Fields& f, const std::vector<std::string>& command, const nlohmann::json& params_json) {
    for (std::size_t i = 0; i < command.size(); ++i) {
        const std::string at = f.at("command") + "[" + std::to_string(i) + "]";
        const std::string& arg = command[i];
        // A control character is no part of a program's name or argument that a message could
        // show as written; a bidirectional one would show it reordered.
        if (has_unprintable(arg))
            f.fail(at, "expected no control or invisible characters (a NUL would cut the argument short), got " +
                           quoted_excerpt(arg));
        if (arg.size() + 1 > kMaxExecString)
            f.fail(at, std::to_string(arg.size()) + " characters; Linux passes a program at most 128 KiB in one argument");
    }
    const std::size_t params = params_json.dump().size();
    if (sizeof "LOCKBENCH_PARAMS=" + params > kMaxExecString)  // the sizeof counts the NUL
        f.fail(f.at("params"), std::to_string(params) + " characters as JSON; the adapter is given them in "
                               "LOCKBENCH_PARAMS, and Linux passes at most 128 KiB in one environment variable, its name included");
}

}  // namespace lockbench::scenario_parse
