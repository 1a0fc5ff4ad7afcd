// Whether a process, or a process group, has stopped, read from /proc: SIGSTOP to a
// multithreaded process is not in place when kill() returns. The kernel wakes one of its
// threads to start the group stop; until that thread runs, the others go on running (on a
// loaded machine, for hundreds of milliseconds: a "paused" ZooKeeper JVM answered ruok 300 ms
// after the signal). A pause is in place once every thread is stopped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace lockbench {

// Waits until every thread of process `pid` is stopped ('T' or 't' in /proc/<pid>/task/*/stat),
// at most `timeout`. False if it was not by then, or at once if the process is dead (a zombie,
// or gone).
bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout);

// Waits until none of `pids` runs: each has stopped, or is dead (a process that ended before
// its pause stops nothing, and is no pause missed). False if one still ran at `timeout`.
bool wait_none_running(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout);

// The same for every process of group `pgid`, read anew at each look: a client and its
// adapter, which a SIGSTOP to the group reaches each on its own.
bool wait_group_none_running(pid_t pgid, std::chrono::milliseconds timeout);

// The processes whose parent, or whose group, is `of`, as /proc shows them now (the one
// scan of /proc for them: a postmaster's backends, a client's group).
enum class Related { children, group_members };
std::vector<pid_t> processes_related(Related how, pid_t of);

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...); '?' if it cannot be read
// (the process is gone).
char process_state(pid_t pid);

// The CPU seconds process `pid` and the children it reaped have used so far (utime, stime,
// cutime and cstime of /proc/<pid>/stat); 0 if it cannot be read.
double process_cpu_seconds(pid_t pid);

// Waits until child `pid` of this process has exited, at most `timeout`, without reaping it:
// until it is reaped its pid, and so its group's id, is nobody else's to get, and a signal
// to the group strikes no stranger. True once it has exited.
bool wait_exited(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace lockbench
