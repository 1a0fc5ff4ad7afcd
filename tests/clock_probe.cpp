// Prints each clock the shim hooks next to the same clock read by raw syscall, which the shim
// cannot see, as "name shimmed_ns raw_ns" lines. Run under LD_PRELOAD by clock_shim_test.
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace {

int64_t ns_of(const timespec& ts) { return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec; }

int64_t raw_ns(clockid_t id) {
    timespec ts{};
    syscall(SYS_clock_gettime, id, &ts);
    return ns_of(ts);
}

int64_t libc_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return ns_of(ts);
}

void print(const char* name, int64_t shimmed_ns, int64_t raw) {
    std::printf("%s %lld %lld\n", name, static_cast<long long>(shimmed_ns),
                static_cast<long long>(raw));
}

}  // namespace

int main() {
    print("realtime", libc_ns(CLOCK_REALTIME), raw_ns(CLOCK_REALTIME));
    print("realtime_coarse", libc_ns(CLOCK_REALTIME_COARSE), raw_ns(CLOCK_REALTIME_COARSE));
    timeval tv{};
    gettimeofday(&tv, nullptr);
    print("gettimeofday", int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000,
          raw_ns(CLOCK_REALTIME));
    print("time", int64_t{time(nullptr)} * 1'000'000'000, raw_ns(CLOCK_REALTIME));
    print("monotonic", libc_ns(CLOCK_MONOTONIC), raw_ns(CLOCK_MONOTONIC));
    print("boottime", libc_ns(CLOCK_BOOTTIME), raw_ns(CLOCK_BOOTTIME));
    return 0;
}
