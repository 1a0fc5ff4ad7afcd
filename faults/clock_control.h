// The clock shim's control file, and the class that writes it. The same shim holds the
// process's flushes to disk (fsync, fdatasync) while the file says the disk is stalled.
//
//   injector (lockbench)                     one node (redis-server under LD_PRELOAD)
//   ClockControl::jump / set_rate            faults/clock_shim.c hooks gettimeofday, time,
//        │ seqlock write                     clock_gettime(REALTIME, REALTIME_COARSE)
//        ▼                                        ▲ seqlock read on every call
//   <dir>/<label>.clock  ── mmap MAP_SHARED ──────┘
//
// skewed = anchor_real_ns + offset_ns + (real_now - anchor_real_ns) * rate
//
// Every other clock (CLOCK_MONOTONIC above all: histories are stamped with it) is left alone.
// The struct below is shared with the C shim, so it is plain C and its layout is fixed.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// "LBCLOCK1" read as a little-endian integer; the shim ignores a file without it.
#define LOCKBENCH_CLOCK_MAGIC UINT64_C(0x314b434f4c43424c)

struct lockbench_clock_control {
    uint64_t magic;           // LOCKBENCH_CLOCK_MAGIC, written once before the first use
    uint64_t sequence;        // seqlock: odd while the injector writes the fields below
    int64_t offset_ns;        // added to the wall clock
    double rate;              // wall-clock seconds per real second since the anchor; 1.0 = normal
    int64_t anchor_real_ns;   // real CLOCK_REALTIME at which the rate last changed
    // Nonzero: the process's fsync and fdatasync wait (a stalled disk) until it is zero again.
    uint32_t disk_stalled;
    uint32_t reserved;
};

#ifdef __cplusplus
}  // extern "C"

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lockbench {

// Owns one control file and writes it; the process that reads it is started with env().
// One writer at a time (a mutex inside); the shim's readers never block it. The file is left
// in place when this is destroyed, so a process still running keeps its last skew.
class ClockControl {
public:
    // Creates (or truncates) <dir>/<label>.clock with no skew. Throws one clear line on failure.
    ClockControl(const std::filesystem::path& dir, const std::string& label);
    ~ClockControl();
    ClockControl(ClockControl&&) noexcept;
    ClockControl& operator=(ClockControl&&) noexcept;
    ClockControl(const ClockControl&) = delete;
    ClockControl& operator=(const ClockControl&) = delete;

    // Steps the wall clock by delta (negative: back). Takes effect at the reader's next call.
    void jump(std::chrono::nanoseconds delta);
    // From now on the wall clock advances `rate` seconds per real second (0: frozen, moved
    // only by jump), with no step now:
    // the anchor moves to now and the offset absorbs what the old rate had accumulated.
    void set_rate(double rate);
    // No offset, rate 1.
    void reset();
    // While stalled, the process's fsync and fdatasync calls wait in the shim (one already in
    // the kernel finishes); set back, they go on to the disk. Whatever the process does
    // meanwhile without a flush goes on.
    void stall_disk(bool stalled);
    // How far the skewed wall clock is ahead of the real one right now (negative: behind).
    std::chrono::nanoseconds skew() const;

    const std::filesystem::path& path() const { return path_; }
    // {"LD_PRELOAD=<the shim>", "LOCKBENCH_CLOCK_FILE=<path()>"}, for SpawnOptions::extra_env.
    // Throws one clear line if the shim library is missing.
    std::vector<std::string> env() const;

private:
    struct Params {
        int64_t offset_ns;
        double rate;
        int64_t anchor_real_ns;
    };
    Params read() const;
    void write(const Params& params);

    std::filesystem::path path_;
    lockbench_clock_control* control_ = nullptr;  // the file, mapped read-write and shared
    std::unique_ptr<std::mutex> writer_;
};

// The shim's path: $LOCKBENCH_CLOCKSHIM if set, else the one this build made. Throws one clear
// line if that file does not exist.
std::filesystem::path clock_shim_library();

// The real CLOCK_REALTIME in nanoseconds (lockbench itself never runs under the shim).
int64_t real_time_ns();

}  // namespace lockbench
#endif
