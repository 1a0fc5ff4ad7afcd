// Child processes that cannot outlive lockbench.
//
// Every child is started in its own process group (so a pause or kill reaches it and only
// it, and Ctrl-C at the terminal reaches lockbench alone, which then cleans up), with
// PR_SET_PDEATHSIG(SIGKILL) so that it dies with its parent even when the parent is killed
// with SIGKILL. Children must be spawned from the main thread: PDEATHSIG fires when the
// forking *thread* exits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lockbench {

struct SpawnOptions {
    std::vector<std::string> argv;          // argv[0] is looked up on PATH if it has no '/'
    std::string stdout_path;                // empty: /dev/null
    std::string stderr_path;                // empty: /dev/null
    std::vector<std::string> extra_env;     // "NAME=value", added to the environment
    // Empty: as lockbench runs. Else the user it runs as (its uid, gid and groups), for a
    // server that refuses to run as root (a database server, its pooler); lockbench must be root then.
    // The parent-death signal is set after the change, which would clear it.
    std::string user;
};

class ChildProcess {
public:
    ChildProcess() = default;
    ~ChildProcess();  // SIGKILLs the group and reaps it if still running
    ChildProcess(ChildProcess&&) noexcept;
    ChildProcess& operator=(ChildProcess&&) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Throws std::runtime_error with one clear line if the program cannot be started
    // (for example: not found on PATH).
    static ChildProcess spawn(const SpawnOptions& opts);

    pid_t pid() const { return pid_; }
    bool running();                        // reaps it if it has exited
    void signal(int sig);                  // to the whole process group
    // SIGSTOP to its group; returns once its every thread has stopped (process/stopped.h), at
    // most `timeout`: kill() returns before a multithreaded process stops. False only if a thread
    // still ran by then (a process already dead stops nothing, and misses no pause).
    bool stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    void kill_and_reap();                  // SIGKILL + waitpid
    // Waits up to `timeout` for it to exit; returns its wait status if it did.
    std::optional<int> wait_for(std::chrono::milliseconds timeout);
    std::optional<int> exit_status() const { return status_; }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

// A regular file we may execute.
bool is_executable_file(const std::string& path);

// Finds `program` (no '/') on PATH; returns the full path or nullopt.
std::optional<std::string> find_on_path(const std::string& program);

// Makes this process the subreaper of what it starts (PR_SET_CHILD_SUBREAPER): a descendant
// whose parent ends, a daemon that left its group with setsid among them, becomes its child.
void adopt_orphans();
// Reaps the zombies of the guards (kill_own_group_when_gone) that came to this process as
// orphans; a process that adopts orphans and lives long (a matrix) calls it now and then.
void reap_orphaned_guards();
// SIGKILLs every child of this process until none is left alive: with adopt_orphans(),
// everything it started, whatever group it is in. Async-signal-safe; reaps none of them (a
// zombie is dead: its status stays for whoever waits on it).
void kill_all_descendants();

// Puts this process, and so everything it starts from here on, in a cgroup of its own
// (cgroup v2, lockbench-<pid> under the one it is in), watched by a guard (a child that
// kill_all_descendants() passes by): once this process is gone, however it ended (SIGKILL
// included), or calls end_guard(), the guard kills whatever is left in the cgroup
// (cgroup.kill), a daemon that left every group and was re-parented away among them, and
// removes it. Call it once, at the start, before any other thread. Where no cgroup v2
// hierarchy can be written (no root,
// none mounted) it does nothing, and adopt_orphans() with kill_all_descendants() remain the
// way: they cannot run after a SIGKILL. A lockbench started by one that did this
// (LOCKBENCH_CGROUP set) is already inside: it does nothing.
void end_everything_started_when_gone();
// At a command's end (or before an exec that replaces it): this process leaves its cgroup,
// the guard ends what is left in it, removes it and exits, and is reaped here, so that no
// zombie of it is left to whoever adopts orphans. Only a lockbench that is killed leaves the
// guard to do its part as an orphan. Does nothing without a guard.
void end_guard();

// Installs SIGINT/SIGTERM/SIGHUP handlers that kill every live ChildProcess group, then every
// descendant (kill_all_descendants), and then re-raise the signal, so an interrupted run leaves
// nothing behind.
void install_cleanup_on_signals();

// For a child that starts programs of its own (a `lockbench client` and its adapter): once
// this process is gone, however it ended (an exit, its parent-death SIGKILL, even while its
// group is stopped), its whole process group is SIGKILLed, so that what those programs
// started in turn (a launcher's `java`, a shell's job), which no parent-death signal reaches,
// dies with it. A guard process outside the group (a pause does not stop it) waits for the
// end of a pipe that only this process holds. Call it before any other thread starts (it
// forks); it does nothing unless this process leads its own group, as spawn() makes it.
void kill_own_group_when_gone();

// A fresh per-run folder under $TMPDIR (default /tmp), "lockbench.<pid>.XXXXXX". Folders left
// by earlier runs whose process is gone (killed with SIGKILL) are removed first.
std::filesystem::path make_run_temp_dir();

}  // namespace lockbench
