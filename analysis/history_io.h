// Reading a recorded run back: the files a run leaves in its folder.
//
//   <run>/run.json               the run's spec and the store's final counter
//   <run>/history/client-N.jsonl one client's operations, one JSON object a line
//   <run>/store.jsonl            the protected store's log, in the store's order
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/history.h"

namespace lockbench {

// Throws std::runtime_error naming the file and line of anything malformed, or of the first
// record a genuine run could not have written (analysis/record_check.h says what one writes).
RunHistory load_run_history(const std::filesystem::path& run_dir);

// Parses one history line / one store line into `h` (lease names interned).
void parse_client_event(const nlohmann::json& j, RunHistory& h);
void parse_store_entry(const nlohmann::json& j, RunHistory& h);

OpKind parse_op(const std::string& s);
EventType parse_event_type(const std::string& s);

}  // namespace lockbench
