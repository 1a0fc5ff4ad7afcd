#include "faults/priority.h"

#include <sys/resource.h>
#include <unistd.h>

namespace lockbench {

bool run_fault_thread_ahead() {
    return ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kFaultThreadNice) == 0;
}

}  // namespace lockbench
