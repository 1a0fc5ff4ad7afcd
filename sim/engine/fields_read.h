// Which fields the input parsers know, as the parsers themselves say: every key a parser's
// Fields::get looks up (scenario_fields.h), whether the file gives it or not, recorded as a
// path with array indices dropped ("runs[].faults[].mode", "offers.fencing"). Reading a
// corpus with recording on yields the fields each kind of file has, with no list kept by
// hand beside the parsers: tests/docs_test.cpp holds the manual's tables to it.
//
// Off by default: while off, a lookup costs one relaxed atomic load.
#pragma once

#include <set>
#include <string>

namespace lockbench {

// Starts recording afresh (forgetting what was recorded) or stops.
void record_fields_read(bool on);

// What was recorded since recording last started.
std::set<std::string> fields_read();

// Fields::get's side: `object` is the object's path as an error message names it
// ("runs[0].faults[1]", "" at the top level), `key` the field looked up.
void note_field_read(const std::string& object, const std::string& key);

// "runs[0].faults[12]" as "runs[].faults[]": every entry of an array has the same fields.
std::string field_pattern(const std::string& object);

}  // namespace lockbench
