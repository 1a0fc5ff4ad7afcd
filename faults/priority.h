// The threads that carry faults out (the nemesis's timers, the link proxies' I/O) run ahead of
// the clients and servers they act on, so that on a loaded machine a fault ends when written
// rather than when the machine gets round to it. Lateness is still caught (as_written.h);
// this makes it rarer.
#pragma once

namespace lockbench {

// The calling thread's nice value becomes kFaultThreadNice (Linux's nice is per thread). A
// process it forks would inherit it: call it only in threads that start none. Needs
// CAP_SYS_NICE (root, as lockbench's machines are); without it the thread stays as it was and
// false says so.
constexpr int kFaultThreadNice = -10;
bool run_fault_thread_ahead();

}  // namespace lockbench
