// An external-lock adapter as a test drives it: started with its stdin and stdout on pipes
// (in a process group of its own, as under a lockbench client), spoken to one JSON line at a
// time, killed at the end. Shared by the tests that drive an adapter directly rather than
// through `lockbench run` (etcd_test, redis_semaphore_test, redisson_test), and the suite those
// on Redis share: one live redis-server for all its tests.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process/process.h"
#include "sim/live/redis_node.h"
#include "test_util.h"

extern char** environ;

namespace lockbench::testing_util {

class AdapterProcess {
public:
    // argv[0] is looked up on PATH; `env` is all it gets, with this process's PATH added.
    // `read_timeout`: how long read() waits for a line (lockbench's op timeout, or more).
    AdapterProcess(std::vector<std::string> argv, std::vector<std::string> env, std::chrono::milliseconds read_timeout)
        : read_timeout_(read_timeout) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        for (char** e = environ; *e; ++e)
            if (std::string(*e).starts_with("PATH=")) env.emplace_back(*e);
        std::vector<char*> args, envp;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        for (auto& e : env) envp.push_back(e.data());
        envp.push_back(nullptr);
        const int spawned = posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        close(in[0]), close(out[1]);
        to_ = in[1], from_ = out[0];
        if (spawned != 0) {
            pid_ = -1;
            throw std::runtime_error("cannot start " + argv[0]);
        }
    }
    ~AdapterProcess() {
        if (to_ >= 0) close(to_);
        close(from_);
        if (pid_ < 0) return;
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    AdapterProcess(const AdapterProcess&) = delete;
    AdapterProcess& operator=(const AdapterProcess&) = delete;

    pid_t pid() const { return pid_; }
    // Closes its stdin, as lockbench does at the end, and waits for it to exit: true if it
    // exited 0.
    bool close_and_wait() {
        close(std::exchange(to_, -1));
        int status = 0;
        return waitpid(std::exchange(pid_, -1), &status, 0) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    // The next line it prints, or null if none comes within the read timeout.
    nlohmann::json read() {
        const auto deadline = std::chrono::steady_clock::now() + read_timeout_;
        while (buffer_.find('\n') == std::string::npos) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
            pollfd p{from_, POLLIN, 0};
            if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return nullptr;
            char chunk[512];
            const ssize_t n = ::read(from_, chunk, sizeof chunk);
            if (n <= 0) return nullptr;
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
        const std::string line = buffer_.substr(0, buffer_.find('\n'));
        buffer_.erase(0, line.size() + 1);
        return nlohmann::json::parse(line, nullptr, false);
    }
    // One request, and the line that answers it (null if none comes).
    nlohmann::json call(const nlohmann::json& request) {
        const std::string line = request.dump() + "\n";
        if (write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return nullptr;
        return read();
    }

private:
    std::chrono::milliseconds read_timeout_;
    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
    std::string buffer_;
};

// A suite whose adapters talk to one live redis-server, started once for all its tests and
// flushed before each; `redis_` is the test's own connection to it. `Suite` is the deriving
// class, so that each suite has a node of its own.
template <class Suite>
class LiveRedisSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::filesystem::path(make_run_temp_dir());
        node_ = new RedisNode(RedisNodeConfig{"adapter-node"}, *dir_);
    }
    static void TearDownTestSuite() {
        delete node_;
        std::filesystem::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override { command(redis_, "FLUSHALL"); }

    static inline std::filesystem::path* dir_ = nullptr;
    static inline RedisNode* node_ = nullptr;
    Context redis_ = connect_to(node_->port());
};

}  // namespace lockbench::testing_util
