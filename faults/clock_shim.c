// lockbench_clockshim: an LD_PRELOAD library that skews one process's wall clock, and holds
// its flushes to disk (fsync, fdatasync) while the control file says its disk is stalled.
//
//   caller ── gettimeofday / time / clock_gettime(REALTIME, REALTIME_COARSE)
//               │
//               ├─ real clock: libc's function (dlsym RTLD_NEXT), or the raw syscall until
//               │              that is resolved
//               └─ skew: seqlock read of the mmapped control file (faults/clock_control.h)
//
//   every other clock id ── libc's clock_gettime, untouched (CLOCK_MONOTONIC above all)
//
// Why not libfaketime: redis-server's jemalloc calls clock_gettime while it initialises, and
// a shim that allocates, takes a lock or calls dlsym from there recurses into itself and the
// server hangs. So the hooks here never allocate, lock or recurse:
//  - set-up happens once, claimed by a compare-and-swap on `state`; any call arriving while
//    it is under way (on this thread, from inside dlsym or the allocator, or on another one)
//    reads the clock with the raw syscall instead of waiting;
//  - the control file is opened and mapped with open/fstat/mmap, which are bare syscall
//    wrappers, before dlsym is called, so even those early calls are skewed;
//  - the skew is read with a seqlock: atomic loads only, no lock to wait for.
// If LOCKBENCH_CLOCK_FILE is unset, or the file is missing, too short or lacks the magic
// number, every call passes through unchanged.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/select.h>  // struct timeval; not <sys/time.h>, whose gettimeofday is nonnull
#include <time.h>
#include <unistd.h>

#include "faults/clock_control.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);
typedef int (*gettimeofday_fn)(struct timeval*, void*);

enum { UNRESOLVED = 0, RESOLVING = 1, READY = 2 };

static int state = UNRESOLVED;
static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;
static const struct lockbench_clock_control* control;  // NULL: pass through

static const int64_t ns_per_s = 1000000000;

// ---- Set-up, once ------------------------------------------------------------------------

static const struct lockbench_clock_control* map_control_file(void) {
    const char* path = getenv("LOCKBENCH_CLOCK_FILE");  // reads environ; no allocation
    if (path == NULL || path[0] == '\0') return NULL;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    void* map = MAP_FAILED;
    // A file shorter than the struct would turn a read past its end into SIGBUS.
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(struct lockbench_clock_control))
        map = mmap(NULL, sizeof(struct lockbench_clock_control), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
    const struct lockbench_clock_control* c = map;
    if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != LOCKBENCH_CLOCK_MAGIC) {
        munmap(map, sizeof(struct lockbench_clock_control));
        return NULL;
    }
    return c;
}

// Nonzero once the real functions are known. Only the caller that claims the set-up runs it;
// everyone else, including a recursive call from inside dlsym, gets 0 and uses the syscall.
static int ready(void) {
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == READY) return 1;
    if (s == RESOLVING) return 0;
    int expected = UNRESOLVED;
    if (!__atomic_compare_exchange_n(&state, &expected, RESOLVING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return expected == READY;
    __atomic_store_n(&control, map_control_file(), __ATOMIC_RELEASE);
    clock_gettime_fn cg = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    gettimeofday_fn gt = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
    // Without them the syscalls still give the right time, only slower (no vDSO).
    __atomic_store_n(&real_clock_gettime, cg, __ATOMIC_RELAXED);
    __atomic_store_n(&real_gettimeofday, gt, __ATOMIC_RELAXED);
    __atomic_store_n(&state, READY, __ATOMIC_RELEASE);
    return 1;
}

// Resolve before main() where possible; the hooks still cope with calls that come earlier.
__attribute__((constructor)) static void resolve_early(void) { (void)ready(); }

// ---- The real clocks ---------------------------------------------------------------------

static int clock_gettime_raw(clockid_t id, struct timespec* ts) {
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static int real_clock(clockid_t id, struct timespec* ts) {
    if (ready()) {
        clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_RELAXED);
        if (f != NULL) return f(id, ts);
    }
    return clock_gettime_raw(id, ts);
}

static int real_timeofday(struct timeval* tv, void* tz) {
    if (ready()) {
        gettimeofday_fn f = __atomic_load_n(&real_gettimeofday, __ATOMIC_RELAXED);
        if (f != NULL) return f(tv, tz);
    }
    return (int)syscall(SYS_gettimeofday, tv, tz);
}

// ---- The skew ----------------------------------------------------------------------------

struct params {
    int64_t offset_ns;
    double rate;
    int64_t anchor_real_ns;
};

// A consistent snapshot of the control file. The injector's write takes nanoseconds; the
// bound only matters if it was stopped mid-write, and then the last fields read are used.
static struct params read_params(const struct lockbench_clock_control* c) {
    struct params p;
    for (int attempt = 0; attempt < 1000000; ++attempt) {
        const uint64_t before = __atomic_load_n(&c->sequence, __ATOMIC_ACQUIRE);
        p.offset_ns = __atomic_load_n(&c->offset_ns, __ATOMIC_RELAXED);
        __atomic_load(&c->rate, &p.rate, __ATOMIC_RELAXED);
        p.anchor_real_ns = __atomic_load_n(&c->anchor_real_ns, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        const uint64_t after = __atomic_load_n(&c->sequence, __ATOMIC_RELAXED);
        if (before == after && (before & 1) == 0) return p;
    }
    return p;
}

// skewed = anchor_real_ns + offset_ns + (real_ns - anchor_real_ns) * rate
static int64_t skewed_ns(int64_t real_ns) {
    const struct lockbench_clock_control* c = __atomic_load_n(&control, __ATOMIC_ACQUIRE);
    if (c == NULL) return real_ns;
    const struct params p = read_params(c);
    const int64_t since_anchor_ns = real_ns - p.anchor_real_ns;
    const int64_t scaled_ns =
        p.rate == 1.0 ? since_anchor_ns : (int64_t)((double)since_anchor_ns * p.rate);
    return p.anchor_real_ns + p.offset_ns + scaled_ns;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0)); }

static void skew_timespec(struct timespec* ts) {
    const int64_t ns = skewed_ns((int64_t)ts->tv_sec * ns_per_s + ts->tv_nsec);
    ts->tv_sec = (time_t)floor_div(ns, ns_per_s);
    ts->tv_nsec = (long)(ns - (int64_t)ts->tv_sec * ns_per_s);
}

static int is_wall_clock(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

// ---- The hooks ---------------------------------------------------------------------------

EXPORT int clock_gettime(clockid_t id, struct timespec* ts) {
    const int rc = real_clock(id, ts);
    if (rc == 0 && is_wall_clock(id)) skew_timespec(ts);
    return rc;
}

EXPORT int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
    const int rc = real_timeofday(tv, tz);
    if (rc != 0 || tv == NULL) return rc;
    const int64_t ns = skewed_ns((int64_t)tv->tv_sec * ns_per_s + (int64_t)tv->tv_usec * 1000);
    const int64_t us = floor_div(ns, 1000);
    tv->tv_sec = (time_t)floor_div(us, 1000000);
    tv->tv_usec = (suseconds_t)(us - (int64_t)tv->tv_sec * 1000000);
    return 0;
}

EXPORT time_t time(time_t* tloc) {
    struct timespec ts;
    if (real_clock(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    skew_timespec(&ts);
    if (tloc != NULL) *tloc = ts.tv_sec;
    return ts.tv_sec;
}

// ---- The disk ----------------------------------------------------------------------------
//
// A stalled disk: fsync and fdatasync wait, polling the control file every millisecond, until
// it is no longer stalled, then flush. They are the raw syscalls (no dlsym, no allocation), as
// libc's own wrappers are. A server that flushes through them waits where it would wait on a
// slow disk: Redis with appendfsync always before it answers, InnoDB at each commit. A Go
// program (etcd) makes the syscall itself and is out of the shim's reach.

static void wait_while_stalled(void) {
    const struct lockbench_clock_control* c = __atomic_load_n(&control, __ATOMIC_ACQUIRE);
    if (c == NULL) return;
    const struct timespec tick = {0, 1000000};
    while (__atomic_load_n(&c->disk_stalled, __ATOMIC_ACQUIRE) != 0) nanosleep(&tick, NULL);
}

EXPORT int fsync(int fd) {
    (void)ready();
    wait_while_stalled();
    return (int)syscall(SYS_fsync, fd);
}

EXPORT int fdatasync(int fd) {
    (void)ready();
    wait_while_stalled();
    return (int)syscall(SYS_fdatasync, fd);
}
