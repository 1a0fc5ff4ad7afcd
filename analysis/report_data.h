// What the report draws of one run, computed here once so that the report only draws it:
// each critical section at the store with its store positions, placed on the clients' time
// axis; the store-to-client clock alignment that places it; every accepted write; the
// unavailable windows; each witness's window; and every acquire latency, which a matrix cell
// pools (so a repetition is checked once).
//
//   history/*.jsonl + store.jsonl ─► load_run_history ─► check ─► report_data ─► sections.json
//
// The time axis is the report's: ms since the run's first client event (CLOCK_MONOTONIC),
// the axis the summary's windows and witnesses already use.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history.h"

namespace lockbench {

// The file beside a run's histories (runs/NAME/sections.json). Its own version, so that a
// reader can tell a newer layout from damage.
inline constexpr const char* kSectionsFile = "sections.json";
inline constexpr int kSectionsVersion = 1;

// The store logs on its own clock (Redis TIME, CLOCK_REALTIME). One offset maps it onto the
// clients' CLOCK_MONOTONIC: the median, over sections, of the store's enter time minus the
// midpoint of the client's enter call (read invoke → ok), both in ns.
struct ClockAlignment {
    std::optional<long long> offset_ns;  // none when no section was entered
    long long samples = 0;
    std::optional<double> iqr_us;     // the spread of those differences (q3 - q1)
};

// One section as the store saw it; times in ms on the report's axis (none without an
// alignment). `closed_by_next`: its client entered again before the store saw it leave.
struct SectionSpan {
    int lease = 0;
    int client = 0;
    std::optional<long long> fence, max_fence;  // max_fence: what a rejecting store had seen
    long long enter_seq = 0;
    std::optional<long long> write_seq, exit_seq;
    std::optional<double> enter_ms, write_ms, exit_ms;
    bool rejected = false;
    bool closed_by_next = false;

    // Where the section ends on the axis: its exit, else its write, else its enter.
    std::optional<double> end_ms() const { return exit_ms ? exit_ms : write_ms ? write_ms : enter_ms; }
    // Its last position in the store's order.
    long long last_seq() const { return exit_seq ? *exit_seq : write_seq ? *write_seq : enter_seq; }
};

// A witness (or the run's first fence rejection, kind "reject") as a timeline shows it:
// A and B by their enter positions, the span both sections and both leases cover, where the
// two sections overlap at the store, and how many other sections entered while A was inside.
// `placed` is false when the store log lacks either section or nothing of the store could be
// placed on the axis: the rest is then empty.
struct WitnessWindow {
    std::string kind;
    bool placed = false;
    long long a_enter_seq = 0, b_enter_seq = 0;
    double from_ms = 0, to_ms = 0;
    std::optional<std::pair<double, double>> overlap_ms;
    std::optional<double> release_ms;   // foreign release: when the release began
    long long others_inside = 0;
};

struct ReportData {
    long long t0_ns = 0;                 // the run's first client event: the axis' zero
    ClockAlignment clock;
    std::vector<SectionSpan> sections;   // in store order
    std::vector<double> writes_ms;       // every accepted write, in store order
    std::vector<std::pair<double, double>> unavailable_ms;  // every window [from, to)
    std::vector<WitnessWindow> witnesses;  // the checker's, in its order; then "reject"
    std::vector<double> acquire_ms;      // every acquire attempt's latency (the checker's), sorted:
                                         // a matrix cell pools them without checking again
};

ClockAlignment align_store_clock(const RunHistory& h);
std::vector<SectionSpan> store_sections(const RunHistory& h, const ClockAlignment& clock, long long t0_ns);
ReportData report_data(const RunHistory& h, const CheckResult& r);

// sections.json's text: {"format": "lockbench-sections", "version": 1, ...}.
nlohmann::json to_json(const ReportData& d, const RunHistory& h);
nlohmann::json report_data_json(const RunHistory& h, const CheckResult& r);

}  // namespace lockbench
