// Where a live run's time goes: its phases, each with its wall time and the CPU it cost.
//
// A phase ends at mark(NAME). Its CPU is this process's own (the proxies, the nemesis, the
// checker) and its reaped children's: a process's CPU is counted when it is reaped, so the
// clients (with their adapters) count in the phase they end in, the servers in the one that
// stops them. The runner writes them as timing.json beside the run's histories.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

struct Phase {
    std::string name;
    double wall_s = 0;
    double cpu_self_s = 0;      // this process
    double cpu_reaped_s = 0;    // the children reaped during the phase, and theirs
};

class PhaseClock {
public:
    PhaseClock();
    void mark(const std::string& phase);
    const std::vector<Phase>& phases() const { return phases_; }
    // {"phases_s": {NAME: wall}, "cpu_s": {NAME: {"self": s, "reaped": s}}, "total_s": wall,
    //  "between_unix_ms": [start, last mark]}: when, on the system clock, to line runs up.
    nlohmann::json to_json() const;

private:
    std::vector<Phase> phases_;
    std::chrono::steady_clock::time_point last_;
    std::chrono::system_clock::time_point started_, marked_;
    double self_ = 0, reaped_ = 0;
};

}  // namespace lockbench
