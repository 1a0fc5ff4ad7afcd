// How a lock node keeps its data across a crash: a scenario says it, a live redis-server
// (sim/live/redis_node.h) and a modelled node (sim/virtual/model_node.h) each honour it.
#pragma once

namespace lockbench {

enum class Persistence { none, aof_always, aof_everysec };

}  // namespace lockbench
