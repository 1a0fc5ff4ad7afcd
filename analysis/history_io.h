// Reading a recorded run back: the files a run leaves in its folder.
//
//   <run>/run.json               the run's spec and the store's final counter
//   <run>/history/client-N.jsonl one client's operations, one JSON object a line
//   <run>/store.jsonl            the protected store's log, in the store's order
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/history.h"

namespace lockbench {

// Throws std::runtime_error naming the file and line of anything malformed, or of the first
// record a genuine run could not have written (analysis/record_check.h says what one writes).
RunHistory load_run_history(const std::filesystem::path& run_dir);

// A digest of every file load_run_history reads (their names, sizes and bytes): equal when
// a run's files are as they were, different when one was changed, added or removed.
std::string run_files_digest(const std::filesystem::path& run_dir);

// A results file opened for reading, refused unless it is a regular file: a FIFO (or a device)
// where a history or a summary should be would block a reader for ever. Throws one line naming
// the file; a file that is not there opens as a stream that fails, for the caller to name.
std::ifstream open_results_file(const std::filesystem::path& path);

// Parses one history line / one store line into `h` (lease names interned).
void parse_client_event(const nlohmann::json& j, RunHistory& h);
void parse_store_entry(const nlohmann::json& j, RunHistory& h);

// Parses one store line as the model's cjson writes it (one flat object: strings, numbers,
// booleans) into `h`, without a JSON library: the simulator's verdict path (sim_run.h).
void parse_store_text(std::string_view line, RunHistory& h);

// The one mapping from a history record's fields to a ClientEvent, fed field by field: by
// parse_client_event from a JSON line, and by the simulator's Recorder as it records, with
// no text in between (sim/engine/recorder.h). Fields the checker does not read are ignored.
class ClientEventBuilder {
public:
    explicit ClientEventBuilder(RunHistory& h) : h_(h) {}
    // Starts a record; false if the checker reads no record of this op (a fault point, a
    // renewal...): then feed nothing more.
    bool begin(long long t_ns, int client, std::string_view op, std::string_view type);
    // Whether the checker reads records of this op at all (begin's answer, before any field).
    static bool read_by_checker(std::string_view op);
    void str(std::string_view key, std::string_view value);
    void num(std::string_view key, long long value);
    void real(std::string_view key, double value);
    void nodes(std::uint32_t mask) { event_.nodes = mask; }
    void ints(std::string_view key, const std::vector<std::optional<long long>>& values);
    // Appends the record to the history.
    void finish();

private:
    RunHistory& h_;
    ClientEvent event_;
};

// The same for a store record: parse_store_entry and parse_store_text feed it.
class StoreEntryBuilder {
public:
    explicit StoreEntryBuilder(RunHistory& h) : h_(h) {}
    void str(std::string_view key, std::string_view value);
    void num(std::string_view key, long long value);
    // Appends the record; throws naming the first required field (seq, kind, client, lease) missing.
    void finish();

private:
    RunHistory& h_;
    StoreEntry entry_;
    std::optional<std::string> lease_;
    bool seq_ = false, kind_ = false, client_ = false;
    long long t_s_ = 0, t_usec_ = 0;
    std::optional<long long> t_us_;
};

OpKind parse_op(const std::string& s);
EventType parse_event_type(const std::string& s);

}  // namespace lockbench
