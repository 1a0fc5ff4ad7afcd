// A JSON input file (a scenario; other formats to come) read as one value, or refused in one
// line naming the file: what would otherwise hang the reader, exhaust its memory or stack, or
// be misread without a word.
//
//   not a regular file ... a folder, a FIFO, a device: refused before it is opened (a FIFO
//                          would block the open until someone writes to it)
//   too large ............ more than max_bytes
//   not JSON ............. nlohmann's own words, cut short
//   too deep ............. nested more than max_depth levels (every recursive walk over the
//                          value afterwards would risk the stack)
//   duplicate key ........ JSON leaves it to the reader, and nlohmann keeps the last: a second
//                          "ttl_ms" would quietly win. Named by its path, runs[1].params.ttl_ms
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace lockbench {

// Its message is the whole line: "FILE: what is wrong".
struct JsonInputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct JsonInputLimits {
    std::uintmax_t max_bytes = 1 << 20;
    int max_depth = 64;
    std::string kind = "JSON file";  // what the file should be, for messages: "scenario file"
};

// Throws JsonInputError.
nlohmann::json read_json_input(const std::filesystem::path& file, const JsonInputLimits& limits);

}  // namespace lockbench
