// Whether a process has stopped, read from /proc: SIGSTOP to a multithreaded process is not
// in place when kill() returns. The kernel wakes one of its threads to start the group stop;
// until that thread runs, the others go on running (on a loaded machine, for hundreds of
// milliseconds: a "paused" ZooKeeper JVM answered ruok 300 ms after the signal). A pause is
// in place once every thread is stopped.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace lockbench {

// Waits until every thread of process `pid` is stopped ('T' or 't' in /proc/<pid>/task/*/stat),
// at most `timeout`. False if it was not by then, or at once if the process is dead (a zombie,
// or gone).
bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace lockbench
