// What a server that refuses to run as root needs from lockbench (the database servers, and a
// pooler in front of one): a folder of its own that its user can reach, files only that user
// reads, a password made for this server alone. When lockbench is not root, the server runs as
// lockbench does and none of this changes owners.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

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

// 32 hex digits from the system's random source.
std::string fresh_password();

// Neither gone nor a zombie (which holds no memory, nor a port, any more).
bool process_alive(pid_t pid);

}  // namespace lockbench
