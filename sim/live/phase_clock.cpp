#include "sim/live/phase_clock.h"

#include <sys/resource.h>

#include <cmath>

namespace lockbench {
namespace {

double cpu_s(int who) {
    rusage u{};
    getrusage(who, &u);
    const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

double ms_rounded(double s) { return std::round(s * 1000) / 1000; }

}  // namespace

PhaseClock::PhaseClock()
    : last_(std::chrono::steady_clock::now()),
      started_(std::chrono::system_clock::now()),
      marked_(started_),
      self_(cpu_s(RUSAGE_SELF)),
      reaped_(cpu_s(RUSAGE_CHILDREN)) {}

void PhaseClock::mark(const std::string& phase) {
    const auto now = std::chrono::steady_clock::now();
    const double self = cpu_s(RUSAGE_SELF), reaped = cpu_s(RUSAGE_CHILDREN);
    phases_.push_back({phase, std::chrono::duration<double>(now - last_).count(), self - self_, reaped - reaped_});
    last_ = now;
    marked_ = std::chrono::system_clock::now();
    self_ = self;
    reaped_ = reaped;
}

nlohmann::json PhaseClock::to_json() const {
    nlohmann::json wall = nlohmann::json::object(), cpu = nlohmann::json::object();
    double total = 0;
    for (const Phase& p : phases_) {
        wall[p.name] = ms_rounded(p.wall_s);
        cpu[p.name] = {{"self", ms_rounded(p.cpu_self_s)}, {"reaped", ms_rounded(p.cpu_reaped_s)}};
        total += p.wall_s;
    }
    const auto unix_ms = [](std::chrono::system_clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    };
    return {{"phases_s", wall}, {"cpu_s", cpu}, {"total_s", ms_rounded(total)},
            {"between_unix_ms", {unix_ms(started_), unix_ms(marked_)}}};
}

}  // namespace lockbench
