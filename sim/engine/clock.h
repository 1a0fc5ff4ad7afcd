// The clock every history and fault log uses in the live world: CLOCK_MONOTONIC, which no
// injected fault touches and which all processes on the machine share. (The simulator's
// histories use its virtual clock instead: sim/virtual/world.h.)
#pragma once

#include <time.h>

namespace lockbench {

inline long long monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace lockbench
