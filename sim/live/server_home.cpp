// A database server's own folder, files and password; see server_home.h.
#include "sim/live/server_home.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "process/process.h"
#include "process/stopped.h"
#include "sim/live/redis_node.h"  // find_free_port

namespace lockbench {

namespace fs = std::filesystem;

std::string server_run_user(const std::string& system_user) { return geteuid() == 0 ? system_user : ""; }

void give_to(const fs::path& path, const std::string& user, const std::string& who) {
    if (user.empty()) return;
    const passwd* pw = getpwnam(user.c_str());
    if (!pw) throw std::runtime_error(who + ": no user " + user + " on this machine: run scripts/setup (its package makes it)");
    if (chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0)
        throw std::runtime_error(who + ": cannot give " + path.string() + " to " + user);
}

void write_private_file(const fs::path& path, const std::string& text, const std::string& user, const std::string& who) {
    {
        std::ofstream out(path, std::ios::trunc);
        out << text;
        if (!out.flush()) throw std::runtime_error(who + ": cannot write " + path.string());
    }
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    give_to(path, user, who);
}

namespace {

// Whether every folder above `dir` lets others pass through (the server's user is not lockbench).
bool others_reach(const fs::path& dir) {
    for (fs::path p = fs::absolute(dir);; p = p.parent_path()) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
        if (p == p.root_path()) return true;
    }
}

}  // namespace

fs::path server_home(const std::string& user, const std::string& who) {
    fs::path folder = make_run_temp_dir();
    if (!user.empty() && !others_reach(folder.parent_path())) {
        fs::remove_all(folder);
        std::string pattern = "/tmp/lockbench." + std::to_string(getpid()) + ".XXXXXX";
        if (!mkdtemp(pattern.data())) throw std::runtime_error(who + ": cannot make its folder in /tmp");
        folder = pattern;
    }
    give_to(folder, user, who);
    return folder;
}

std::vector<std::string> env_for_server(std::vector<std::string> env, const fs::path& home, const std::string& user,
                                        const std::string& who) {
    if (user.empty()) return env;
    const std::string name = "LOCKBENCH_CLOCK_FILE=";
    for (std::string& entry : env) {
        if (!entry.starts_with(name)) continue;
        const fs::path link = home / "shim.control";
        std::error_code failed;
        fs::create_hard_link(entry.substr(name.size()), link, failed);
        if (failed)
            throw std::runtime_error(who + ": cannot hand the shim's control file to " + user + " (" + failed.message() +
                                     "): its folder and the run's must be on one file system");
        give_to(link, user, who);
        entry = name + link.string();
    }
    return env;
}

std::string read_from(const fs::path& path, std::uintmax_t offset) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string fresh_password() {
    std::random_device rd;
    std::ostringstream out;
    for (int i = 0; i < 4; ++i) out << std::hex << rd();
    return out.str();
}

bool process_alive(pid_t pid) {
    const char state = process_state(pid);
    return state != '?' && state != 'Z' && state != 'X';
}

int start_on_a_free_port(int attempts, const std::function<void(int)>& launch) {
    for (int attempt = 1;; ++attempt) {
        const int port = find_free_port();
        try {
            launch(port);
            return port;
        } catch (const PortTaken&) {
            if (attempt >= attempts) throw;
        }
    }
}

void restart_on_its_port(std::chrono::milliseconds linger, const std::function<void()>& launch) {
    const auto deadline = std::chrono::steady_clock::now() + linger;
    for (;;) {
        try {
            launch();
            return;
        } catch (const PortTaken&) {
            if (std::chrono::steady_clock::now() >= deadline) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
}

}  // namespace lockbench
