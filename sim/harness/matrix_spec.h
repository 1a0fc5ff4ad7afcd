// What a results tree is asked to hold (lockbench-results.json's "spec"): the kind, the
// repetitions, the scenarios (as read, or as a sweep step changed them) and the numbered
// cells. A struct, converted to and from JSON here and nowhere else; its id is a hash of
// that JSON without file paths, so the same spec by another path resumes the same tree.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/harness/compose.h"

namespace lockbench {

// "faults.0.duration_ms=100..700": a numeric field of a scenario file and its range.
struct SweepParam {
    std::string path;           // dotted; array indices as numbers; * for every element
    double from = 0, to = 0;
};
SweepParam parse_sweep_param(const std::string& text);

struct Shard {
    int index = 0, count = 1;
};
Shard parse_shard(const std::string& text);  // "I/N"

// One cell: one run of one scenario (of one sweep step), run `repeat` times.
struct MatrixCell {
    std::size_t index = 0;           // `--shard I/N` runs the cells whose index is I modulo N
    std::string id;                  // "<scenario>/<run>", or "step-<i>/<run>" in a sweep
    std::string dir;                 // "cells/<id>", under the tree
    std::size_t scenario_index = 0;  // into MatrixSpec::scenarios
    std::string scenario;
    std::string run;
    std::size_t run_index = 0;       // the run's place in its scenario's "runs"
    std::string algorithm;
    std::string variant;             // the run's name without its durations: its row in a report
    nlohmann::json params = nlohmann::json::object();
    int nodes = 0;
    std::optional<int> step;         // a sweep's step, and the value it set (`value`)
    nlohmann::json value;
};

// The cell as the spec and its cell.json hold it.
nlohmann::json to_json(const MatrixCell& c);

// A scenario of the spec: its file, and its source as the cells run it.
struct SpecScenario {
    std::string file;
    nlohmann::json source;
};

// A sweep: which field of which scenario it varied, and the value of each step.
struct SweepSpec {
    std::string scenario;
    std::string file;
    std::string path;
    double from = 0, to = 0;
    int steps = 0;
    nlohmann::json values = nlohmann::json::array();
};

struct MatrixSpec {
    std::string kind;                // "matrix" or "sweep"
    int repeat = 1;
    std::vector<std::string> algorithms;   // --algorithm, as given
    std::vector<SpecScenario> scenarios;
    std::vector<MatrixCell> cells;
    std::optional<SweepSpec> sweep;
    bool simulated = false;          // "backend": "sim"
    // The (case, lock) cells that do not exist, each with its one-line reason: what the report
    // says of a "—" (compose.h).
    nlohmann::json not_applicable = nlohmann::json::array();
    // The lock files the cells run, by name: {"description", "lock_file", "facts"} (what the
    // report shows of a row without reading the files again).
    nlohmann::json locks = nlohmann::json::object();
    std::string id;                  // spec_id(): not part of the JSON

    std::size_t cell_count() const { return cells.size(); }
    // The cell's scenario as the spec holds it.
    const SpecScenario& scenario_of(const MatrixCell& c) const { return scenarios.at(c.scenario_index); }
};

// What one repetition is handed: its cell, its number, and its scenario cut to the cell's
// run, so that a repetition parses one run, not its case's every lock, and `lockbench
// repetition` reads this, not the tree's whole spec. Written and read here and nowhere else.
struct RepetitionPart {
    MatrixCell cell;
    int rep = 0;
    SpecScenario scenario;           // "runs": the cell's run alone
    bool simulated = false;
};
RepetitionPart repetition_part(const MatrixSpec& spec, const MatrixCell& cell, int rep);
nlohmann::json to_json(const RepetitionPart& p);
RepetitionPart repetition_part_from_json(const nlohmann::json& j);

nlohmann::json to_json(const SweepSpec& s);
nlohmann::json to_json(const MatrixSpec& spec);   // without the id, which the header holds beside it
// A spec as to_json wrote it, with the id its header gives; throws nlohmann::json's exception
// naming the first missing field.
MatrixSpec matrix_spec_from_json(const nlohmann::json& spec, const std::string& id);
// The id of a spec: a hash of its JSON with the file paths left out.
std::string spec_id(const MatrixSpec& spec);

// `locks`: what a case file runs against (compose.h); a scenario file of the explicit format
// runs as it is. Without locks, a case file is refused.
MatrixSpec matrix_spec(const std::vector<std::filesystem::path>& files, const std::vector<std::string>& algorithms,
                       int repeat, const LockSelection* locks = nullptr);
MatrixSpec sweep_spec(const std::filesystem::path& file, const SweepParam& param, int steps,
                      const std::vector<std::string>& algorithms, int repeat, const LockSelection* locks = nullptr);

// A matrix of scenarios already composed and parsed (`lockbench verdict`), `not_applicable`
// as to_json gives it, `locks` as MatrixSpec::locks.
MatrixSpec matrix_spec_of(const std::vector<Scenario>& scenarios, const nlohmann::json& not_applicable,
                          const nlohmann::json& locks, int repeat);

// One line per missing cell, as the spec and the summary hold them.
nlohmann::json to_json(const std::vector<NotApplicable>& cells);
// The same tree run in the simulator (`--backend sim`): part of the spec, so that a live and
// a simulated tree never mix; external runs, which cannot be simulated, are left out.
MatrixSpec simulated(MatrixSpec spec);

}  // namespace lockbench
