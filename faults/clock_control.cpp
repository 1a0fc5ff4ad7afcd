// The injector's side of the clock shim: a seqlock writer over the mmapped control file.
// See clock_control.h for the file and clock_shim.c for the reader.
#include "faults/clock_control.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <utility>

#ifndef LOCKBENCH_CLOCKSHIM_PATH
#define LOCKBENCH_CLOCKSHIM_PATH ""
#endif

namespace lockbench {
namespace {

namespace fs = std::filesystem;

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<int64_t>::is_always_lock_free);
static_assert(std::atomic_ref<double>::is_always_lock_free);

std::runtime_error clock_file_error(const fs::path& path, const std::string& what) {
    return std::runtime_error("clock control file " + path.string() + ": " + what + ": " +
                              std::strerror(errno));
}

// A fresh file the size of the struct, mapped shared and writable; nothing in it yet. An old
// file of that name is unlinked, not truncated: a process may still map it, and reading past
// the end of a truncated mapping is SIGBUS.
lockbench_clock_control* create_mapped(const fs::path& path) {
    std::error_code ignored;
    fs::remove(path, ignored);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw clock_file_error(path, "cannot create");
    if (::ftruncate(fd, sizeof(lockbench_clock_control)) != 0) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
        throw clock_file_error(path, "cannot size");
    }
    void* map = ::mmap(nullptr, sizeof(lockbench_clock_control), PROT_READ | PROT_WRITE,
                       MAP_SHARED, fd, 0);
    const int saved = errno;
    ::close(fd);
    errno = saved;
    if (map == MAP_FAILED) throw clock_file_error(path, "cannot map");
    return static_cast<lockbench_clock_control*>(map);
}

template <typename T>
std::atomic_ref<T> field(T& value) {
    return std::atomic_ref<T>(value);
}

}  // namespace

int64_t real_time_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

fs::path clock_shim_library() {
    const char* override_path = std::getenv("LOCKBENCH_CLOCKSHIM");
    const fs::path path = override_path && *override_path ? override_path : LOCKBENCH_CLOCKSHIM_PATH;
    std::error_code ec;
    if (path.empty() || !fs::is_regular_file(path, ec))
        throw std::runtime_error("clock shim library not found at '" + path.string() +
                                 "': build the lockbench_clockshim target or set "
                                 "LOCKBENCH_CLOCKSHIM to its path");
    return fs::absolute(path);
}

ClockControl::ClockControl(const fs::path& dir, const std::string& label)
    : path_(dir / (label + ".clock")),
      control_(create_mapped(path_)),
      writer_(std::make_unique<std::mutex>()) {
    // The file is new and no reader has it yet: plain stores, then the magic number last.
    control_->sequence = 0;
    control_->offset_ns = 0;
    control_->rate = 1.0;
    control_->anchor_real_ns = real_time_ns();
    field(control_->magic).store(LOCKBENCH_CLOCK_MAGIC, std::memory_order_release);
}

ClockControl::~ClockControl() {
    if (control_) ::munmap(control_, sizeof(lockbench_clock_control));
}

ClockControl::ClockControl(ClockControl&& other) noexcept
    : path_(std::move(other.path_)),
      control_(std::exchange(other.control_, nullptr)),
      writer_(std::move(other.writer_)) {}

ClockControl& ClockControl::operator=(ClockControl&& other) noexcept {
    if (this != &other) {
        if (control_) ::munmap(control_, sizeof(lockbench_clock_control));
        path_ = std::move(other.path_);
        control_ = std::exchange(other.control_, nullptr);
        writer_ = std::move(other.writer_);
    }
    return *this;
}

void ClockControl::jump(std::chrono::nanoseconds delta) {
    const std::lock_guard lock(*writer_);
    Params p = read();
    p.offset_ns += delta.count();
    write(p);
}

void ClockControl::set_rate(double rate) {
    if (!(rate >= 0.0) || !std::isfinite(rate))  // 0: frozen (the simulator's lockstep tests)
        throw std::invalid_argument("clock rate must be finite and not negative, got " +
                                    std::to_string(rate));
    const std::lock_guard lock(*writer_);
    const Params old = read();
    const int64_t now_ns = real_time_ns();
    // At now_ns the old rate has drifted the clock by (now - anchor) * (rate - 1): keep it.
    const auto drift_ns =
        static_cast<int64_t>(static_cast<double>(now_ns - old.anchor_real_ns) * (old.rate - 1.0));
    write(Params{old.offset_ns + drift_ns, rate, now_ns});
}

void ClockControl::reset() {
    const std::lock_guard lock(*writer_);
    write(Params{0, 1.0, real_time_ns()});
}

void ClockControl::stall_disk(bool stalled) { __atomic_store_n(&control_->disk_stalled, stalled ? 1u : 0u, __ATOMIC_RELEASE); }

std::chrono::nanoseconds ClockControl::skew() const {
    const std::lock_guard lock(*writer_);
    const Params p = read();
    const int64_t now_ns = real_time_ns();
    const auto drift_ns =
        static_cast<int64_t>(static_cast<double>(now_ns - p.anchor_real_ns) * (p.rate - 1.0));
    return std::chrono::nanoseconds(p.offset_ns + drift_ns);
}

std::vector<std::string> ClockControl::env() const {
    return {"LD_PRELOAD=" + clock_shim_library().string(),
            "LOCKBENCH_CLOCK_FILE=" + fs::absolute(path_).string()};
}

// Only this process writes, under writer_, so the fields can be read without the seqlock
// dance; atomic loads keep the concurrent readers in other processes formally race-free.
ClockControl::Params ClockControl::read() const {
    return Params{field(control_->offset_ns).load(std::memory_order_relaxed),
                  field(control_->rate).load(std::memory_order_relaxed),
                  field(control_->anchor_real_ns).load(std::memory_order_relaxed)};
}

// Seqlock write: odd, fence, fields, even (release), as the shim's read_params expects.
void ClockControl::write(const Params& params) {
    auto sequence = field(control_->sequence);
    const uint64_t start = sequence.load(std::memory_order_relaxed);
    sequence.store(start + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    field(control_->offset_ns).store(params.offset_ns, std::memory_order_relaxed);
    field(control_->rate).store(params.rate, std::memory_order_relaxed);
    field(control_->anchor_real_ns).store(params.anchor_real_ns, std::memory_order_relaxed);
    sequence.store(start + 2, std::memory_order_release);
}

}  // namespace lockbench
