// The metric table: every figure of a run that an expectation may name, a summary holds, a
// cell aggregates over its repetitions or a printed table shows, in one place.
//
//   checker (CheckResult) ──► summary.json's ops / safety / availability ──► expect checks
//                                            └──► a cell's reps and aggregate ──► tables
//
// A new metric is one row here (with the checker's field it reads) and one in the manual's
// metric table (docs/results.md; tests/docs_test.cpp fails until it is there): the summary,
// the expectation parser, the aggregate and both tables follow the table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockbench {

struct CheckResult;

// Where a metric lives in a run's summary: summary.json's "ops", "safety" or "availability".
// validity: only in the summary of a run that probed the key's TTL (analysis/validity.h).
enum class MetricGroup { ops, safety, availability, validity };
std::string_view group_name(MetricGroup g);

// How a metric is written: a count is a whole number, the others are real numbers.
enum class MetricUnit { count, ms, ratio };

// How a cell's repetitions reduce it, in the cell's aggregate (analysis/aggregate.h):
//   none        not kept per repetition
//   per_rep     kept in each repetition's figures, not aggregated
//   mean        {mean}
//   mean_max    {mean, max}
//   spread      {total, mean, min, max}
//   spread_rate spread, and how many repetitions had any, with the rate's 95 % interval
enum class Aggregation { none, per_rep, mean, mean_max, spread, spread_rate };

// A column of a printed table: its header, its width, the value's decimals and unit suffix
// ("ms"), which is part of the width.
struct Column {
    std::string_view header;
    int width = 0;
    int decimals = 0;
    std::string_view unit;
};

struct Metric {
    std::string_view name;
    MetricGroup group;
    MetricUnit unit;
    bool expectable;                 // a scenario's `expect` may name it
    Aggregation aggregation;
    std::string_view aggregate_name; // its key in a cell's aggregate when not its name
    std::optional<Column> run_column;   // in the table `run` and `check` print
    std::optional<Column> cell_column;  // in the table `matrix` and `sweep` print: the mean per repetition
    // The checker's figure; nullptr for one the run's record gives (faults_injected).
    double (*of)(const CheckResult&);
    // Whether the run has the figure at all; nullptr: every run has it.
    bool (*present)(const CheckResult&) = nullptr;
    bool is_count() const { return unit == MetricUnit::count; }
    std::string_view aggregate_key() const { return aggregate_name.empty() ? name : aggregate_name; }
};

// Every metric, in the order the tables show them and an unknown metric's error lists them.
const std::vector<Metric>& metrics();

// The metric named `name`, or nullptr.
const Metric* find_metric(std::string_view name);

// The metrics an expectation may name, comma-separated, for an error line.
std::string expectable_metric_list();

// `v` as a table cell: `c.decimals` decimals, then the unit, right-aligned in `c.width`.
std::string table_cell(const Column& c, double v);
// The column's header, right-aligned in its width.
std::string table_header(const Column& c);

}  // namespace lockbench
