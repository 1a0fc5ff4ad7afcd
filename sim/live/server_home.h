// What a server that refuses to run as root needs from lockbench (the database servers, and a
// pooler in front of one): a folder of its own that its user can reach, files only that user
// reads, a password made for this server alone. When lockbench is not root, the server runs as
// lockbench does and none of this changes owners.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lockbench {

// `system_user` (the user its Debian package makes) when lockbench is
// root, else "" (the server runs as lockbench does).
std::string server_run_user(const std::string& system_user);

// Gives `path` to `user` (nothing when empty). Throws one line naming `who` and scripts/setup
// when the user does not exist.
void give_to(const std::filesystem::path& path, const std::string& user, const std::string& who);

// Writes `text` to `path`, readable by its owner only, then gives it to `user`.
void write_private_file(const std::filesystem::path& path, const std::string& text, const std::string& user,
                        const std::string& who);

// The server's own folder, given to `user`: a run folder of $TMPDIR like any (removed with
// lockbench's stale folders after a kill -9), or of /tmp when `user` could not reach $TMPDIR
// (a private one, 0700, as the CLI's tests give each test).
std::filesystem::path server_home(const std::string& user, const std::string& who);

// The environment such a server starts with: the shim's control file (LOCKBENCH_CLOCK_FILE,
// 0600 in lockbench's own 0700 run folder, out of the server's user's reach) handed to it as a
// hard link in `home`, given to `user`: the same file, which lockbench writes and the server's
// shim reads. Nothing changes when `user` is empty.
std::vector<std::string> env_for_server(std::vector<std::string> env, const std::filesystem::path& home,
                                        const std::string& user, const std::string& who);

// A file's text from `offset` on (a server's log since its latest start); "" if unreadable.
std::string read_from(const std::filesystem::path& path, std::uintmax_t offset = 0);

// A server that could not bind the port it was given (another program took it meanwhile):
// its start tries another.
struct PortTaken : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A server started on a free port (`launch` given it), and again on another while the one it
// was given turns out taken (`launch` throws PortTaken), `attempts` times in all. Returns the
// port it listens on.
int start_on_a_free_port(int attempts, const std::function<void(int port)>& launch);

// A server restarted on its own port, again while the old process's port lingers (`launch`
// throws PortTaken) for up to `linger`.
void restart_on_its_port(std::chrono::milliseconds linger, const std::function<void()>& launch);

// 32 hex digits from the system's random source.
std::string fresh_password();

// Neither gone nor a zombie (which holds no memory, nor a port, any more).
bool process_alive(pid_t pid);

}  // namespace lockbench
