// How a lock node keeps its data across a crash: a scenario says it, a live redis-server
// (sim/live/redis_node.h) and a modelled node (sim/virtual/model_node.h) each honour it.
#pragma once

#include <optional>
#include <string_view>

namespace lockbench {

enum class Persistence { none, aof_always, aof_everysec };

// "none", "aof-always", "aof-everysec" as files spell it; nullopt for anything else.
inline std::optional<Persistence> parse_persistence(std::string_view text) {
    if (text == "none") return Persistence::none;
    if (text == "aof-always") return Persistence::aof_always;
    if (text == "aof-everysec") return Persistence::aof_everysec;
    return std::nullopt;
}

}  // namespace lockbench
