// What a run's files must satisfy before the checker may count anything from them: the
// checker trusts the store's order, so a log with a gap, a duplicate, a write that never
// entered or a history cut short would be turned into plausible but false numbers.
//
// A store log, as the store's scripts write it (sim/engine/store.h):
//   - seq 1, 2, 3, ... in order, one record a line;
//   - a lease belongs to one client and enters at most once (one section per lease);
//   - a write or reject comes after its lease's enter, at most once, and its exit follows at
//     once (one script logs both); an exit alone is legitimate (an abandoned section);
//   - every enter reads the counter the writes before it left, every write and reject
//     records that counter as prev, and the last write leaves run.json's final_counter;
//   - every enter and write is one its client's history invoked first.
// A client's history (history/client-N.jsonl):
//   - every line is client N's, in time order;
//   - a completion (ok, fail, info) answers the operation its client invoked last, and a
//     client invokes one operation at a time;
//   - a read or write that the history says the store answered (ok) is in the store's log.
// An empty store log is legitimate: a run whose clients never got into a section has one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/history.h"

namespace lockbench {

// A record's place: the file (as the loader names it) and its line, from 1.
struct Where {
    std::string file;
    int line = 0;
    std::string text() const { return file + ":" + std::to_string(line); }
};

// Fed every record in the order the loader reads them: every history file first, then the
// store's log. Each step answers what is wrong with that record (or nothing); finish()
// answers, with its own place, what only the whole run can show.
class RecordCheck {
public:
    RecordCheck(const RunHistory& h, const std::filesystem::path& run_dir) : h_(h), run_dir_(run_dir) {}

    // A new history file of client `client`; then each event parsed from it.
    void begin_history(int client);
    std::optional<std::string> history_event(const ClientEvent& e, const Where& where);

    std::optional<std::string> store_entry(const StoreEntry& e, const Where& where);

    // "file:line: what" for the first record the store's log or the histories contradict.
    std::optional<std::string> finish(long long final_counter, const std::string& run_json) const;

private:
    struct LeaseFacts {
        std::optional<Where> read_invoked, read_ok, write_invoked, write_ok;
        std::optional<Where> entered, wrote;  // in the store's log
        std::optional<long long> enter_read;
        bool write_or_reject = false;
    };
    LeaseFacts& facts(int lease);
    std::optional<std::string> store_order(const StoreEntry& e);
    std::optional<std::string> store_enter(const StoreEntry& e, const Where& where);
    std::optional<std::string> store_write(const StoreEntry& e, const Where& where);
    std::string lease_name(int lease) const { return h_.leases.at(static_cast<size_t>(lease)); }
    std::string history_file(int client) const;
    std::string store_file() const { return (run_dir_ / "store.jsonl").string(); }

    const RunHistory& h_;
    std::filesystem::path run_dir_;
    std::vector<LeaseFacts> leases_;
    // The history file being read: its client, its last time, the operation it awaits.
    int client_ = 0;
    long long last_t_ns_ = 0;
    std::optional<OpKind> pending_;
    // The store's log so far.
    long long seq_ = 0;
    long long counter_ = 0;
    std::optional<StoreEntry> awaiting_exit_;
    Where awaiting_exit_at_;
};

}  // namespace lockbench
