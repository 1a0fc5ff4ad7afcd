// A client's history file: one JSON object a line, written as each event happens (one
// write(2) a line, so a client killed with SIGKILL leaves every event it lived to record).
// Lines are built by hand rather than through a JSON library: this sits on the hot path of
// every lock cycle, and its fields are few and flat.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/history_io.h"

namespace lockbench {

class Recorder;

class HistoryLine {
public:
    HistoryLine& str(std::string_view key, std::string_view value);
    HistoryLine& num(std::string_view key, long long value);
    HistoryLine& real(std::string_view key, double value);
    HistoryLine& nodes(std::uint32_t mask);
    // An array of integers, null where a value is missing.
    HistoryLine& ints(std::string_view key, const std::vector<std::optional<long long>>& values);
    void commit();

private:
    friend class Recorder;
    HistoryLine(Recorder& r, std::string prefix) : recorder_(r), text_(std::move(prefix)) {}
    // A line of a recorder that keeps events (Recorder(client, history)): no text.
    HistoryLine(Recorder& r, RunHistory& h) : recorder_(r), event_(std::in_place, h) {}
    Recorder& recorder_;
    std::string text_;
    std::optional<ClientEventBuilder> event_;  // set in events mode
    bool skip_ = false;                         // events mode: a record the checker does not read
};

class Recorder {
public:
    // Opens (creates, truncates) `path`; throws std::runtime_error naming it on failure.
    Recorder(const std::string& path, int client);
    // With no path: records nothing (for benchmarks of the bare cycle).
    explicit Recorder(int client) : client_(client) {}
    // Events mode: each line becomes a ClientEvent in `into` as it is committed, through the
    // same mapping that reads a history file back (analysis/history_io.h); nothing is written.
    // For the simulator's verdict path (sim/virtual/sim_run.h: simulate_verdict).
    Recorder(int client, RunHistory& into) : client_(client), events_(&into) {}
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    // Starts a line with t_ns (CLOCK_MONOTONIC, or the clock set below), client, op and type.
    HistoryLine line(std::string_view op, std::string_view type);
    // The same, at t_ns rather than now (CLOCK_MONOTONIC: an event heard earlier); a history
    // is read back in t_ns order, whatever order its lines were written in.
    HistoryLine line_at(long long t_ns, std::string_view op, std::string_view type);
    // Where t_ns comes from instead: the simulator's virtual time.
    void set_clock(std::function<long long()> clock) { clock_ = std::move(clock); }
    // Lines are kept in memory and written in large pieces (at the latest when this is
    // destroyed): for the simulator, where no process can be killed mid-line.
    void set_buffered() { buffered_ = true; }

private:
    friend class HistoryLine;
    void write(std::string& text);
    void write_now(const std::string& text);
    void flush();
    int fd_ = -1;
    int client_ = 0;
    std::function<long long()> clock_;
    bool buffered_ = false;
    std::string buffer_;
    RunHistory* events_ = nullptr;
    std::mutex mutex_;   // the watchdog thread may record points too
};

std::string json_escape(std::string_view s);
// The same, appended to `out` (no string of its own).
void append_json_escaped(std::string& out, std::string_view s);

}  // namespace lockbench
