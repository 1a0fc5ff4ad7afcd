// A MariaDB server that lockbench starts, owns and stops: the "mariadb" service (one server,
// "db0"), for its named locks (GET_LOCK, RELEASE_LOCK), which live in the server's memory and
// in the connection that took them.
//
//   start_mariadb ── own folder (chown) ── mariadb-install-db ── free port ── mariadbd ──┬─ listens ──▶ up
//                                                                ▲                       ├─ exited, port taken
//                                                                └──── another port ─────┘
//
//   /tmp/lockbench.<pid>.XXXXXX/   the server's own folder, 0700, owned by the user it runs as
//       data/                      mariadb-install-db's (the system tables; no test database)
//       init.sql                   run by the server at every start: the throwaway account
//       mariadbd.sock              its Unix socket (root's, by socket authentication)
//       tmp/                       its temporary tables (in a shared /tmp, servers started side
//                                  by side clash over their names: 3 of 10 installs failed)
//   <dir>/db0/mariadb.log          the server's log, opened by lockbench
//
// mariadbd refuses to run as root without being told to; when lockbench is root it runs as
// Debian's `mysql` user, in a folder of its own (sim/live/server_home.h). Clients reach it on
// 127.0.0.1 as user lockbench, with a password made for this server alone, in database
// lockbench (LockService::client_env). A case's "server_settings" become its options
// ("wait_timeout": "1" → --wait_timeout=1). The server keeps MariaDB's defaults otherwise, its
// durability among them (InnoDB flushes its log at each commit); a crash is a SIGKILL, after
// which it recovers its tables and has forgotten every named lock.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "faults/listeners.h"
#include "process/process.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"  // find_free_port, log_tail
#include "sim/live/server_home.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Bounds, not expectations: mariadb-install-db takes about 0.8 s, the server's start 0.2 s.
constexpr auto install_timeout = 60s;
constexpr auto start_timeout = 30s;
constexpr auto poll_interval = 10ms;
constexpr int start_attempts = 4;
const std::string kWho = "MariaDB";
const std::string kUser = "lockbench";
const std::string kDatabase = "lockbench";
const std::string kServer = "/usr/sbin/mariadbd";
const std::string kInstall = "/usr/bin/mariadb-install-db";
// Small, for a server that holds a few rows: the whole data folder is about 20 MB.
const std::vector<std::string> kSizes = {"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"};

class MariaDBServer final : public LockServer, public LockService {
public:
    explicit MariaDBServer(const ServiceConfig& config)
        : user_(server_run_user("mysql")), log_dir_(config.dir / name_), settings_(config.settings), password_(fresh_password()) {
        fs::create_directories(log_dir_);
        home_ = server_home(user_, kWho);
        try {
            fs::create_directory(home_ / "tmp");
            give_to(home_ / "tmp", user_, kWho);
            if (!config.env.empty()) extra_env_ = env_for_server(config.env.at(0), home_, user_, kWho);
        } catch (...) {
            std::error_code ignored;
            fs::remove_all(home_, ignored);
            throw;
        }
    }
    ~MariaDBServer() override {
        server_.kill_and_reap();
        std::error_code ignored;
        fs::remove_all(home_, ignored);
    }

    void start() {
        install();
        start_on_a_free_port(start_attempts, [&](int port) {
            port_ = port;
            launch();
        });
    }

    // LockServer
    const std::string& name() const override { return name_; }
    int port() const override { return port_; }
    pid_t pid() const override { return server_.pid(); }
    void kill() override { server_.signal(SIGKILL); }
    // Its tables are on disk and stay (keep_data aside); its named locks were in its memory.
    void restart(bool /*keep_data*/) override {
        server_.kill_and_reap();
        restart_on_its_port(2s, [&] { launch(); });  // the old server's port may linger a moment
    }
    bool pause() override { return server_.stop(); }
    void resume() override { server_.signal(SIGCONT); }
    fs::path log_path() const override { return log_dir_ / "mariadb.log"; }

    // LockService
    std::vector<LockServer*> servers() override { return {this}; }
    std::optional<int> leader() override { return std::nullopt; }
    std::map<std::string, std::string> client_env() const override {
        return {{"LOCKBENCH_USER", kUser}, {"LOCKBENCH_PASSWORD", password_}, {"LOCKBENCH_DATABASE", kDatabase}};
    }

private:
    void install();
    void launch();
    // Quotes the log's first error since `offset` (mariadb-install-db ends its log with
    // advice, not the error; a restart appends to the server's log).
    std::runtime_error failure(const std::string& what, const fs::path& log, std::uintmax_t offset = 0) const {
        std::istringstream lines(read_from(log, offset));
        for (std::string line; std::getline(lines, line);)
            if (line.find("ERROR") != std::string::npos)
                return std::runtime_error("MariaDB server " + name_ + " " + what + "; its log says: " + line);
        return std::runtime_error("MariaDB server " + name_ + " (port " + std::to_string(port_) + ") " + what +
                                  "; its log ended: " + log_tail(log));
    }

    const std::string name_ = "db0";
    std::string user_;
    fs::path log_dir_;
    fs::path home_;
    std::map<std::string, std::string> settings_;
    std::string password_;
    std::vector<std::string> extra_env_;
    int port_ = 0;
    ChildProcess server_;
};

// The system tables, written with no flush to disk (nothing of them needs to survive the
// machine); the account, by the file the server runs at every start.
void MariaDBServer::install() {
    const fs::path log = log_dir_ / "install.log";
    ChildProcess child = ChildProcess::spawn(
        {{kInstall, "--no-defaults", "--datadir=" + (home_ / "data").string(), "--tmpdir=" + (home_ / "tmp").string(),
          "--auth-root-authentication-method=socket",
          "--skip-test-db", "--skip-name-resolve", kSizes[0], kSizes[1], "--innodb-flush-method=nosync",
          "--innodb-doublewrite=0", "--innodb-flush-log-at-trx-commit=0"},
         log.string(), log.string(), {}, user_});
    const std::optional<int> status = child.wait_for(install_timeout);
    if (!status) throw failure("mariadb-install-db did not end within 60 s", log);
    if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) throw failure("mariadb-install-db failed", log);
    write_private_file(home_ / "init.sql",
                       "CREATE DATABASE IF NOT EXISTS " + kDatabase + ";\n"
                       "CREATE USER IF NOT EXISTS '" + kUser + "'@'127.0.0.1' IDENTIFIED BY '" + password_ + "';\n"
                       "GRANT ALL ON " + kDatabase + ".* TO '" + kUser + "'@'127.0.0.1';\n",
                       user_, kWho);
}

// Up once it listens on its port. It runs its init file after it has opened the port and before
// it accepts a connection: a client that connects meanwhile waits in the port's backlog.
void MariaDBServer::launch() {
    SpawnOptions opts;
    opts.argv = {kServer, "--no-defaults", "--datadir=" + (home_ / "data").string(), "--tmpdir=" + (home_ / "tmp").string(),
                 "--port=" + std::to_string(port_),
                 "--bind-address=127.0.0.1", "--socket=" + (home_ / "mariadbd.sock").string(),
                 "--pid-file=" + (home_ / "mariadbd.pid").string(), "--init-file=" + (home_ / "init.sql").string(),
                 "--skip-name-resolve", kSizes[0], kSizes[1]};
    for (const auto& [name, value] : settings_) opts.argv.push_back("--" + name + "=" + value);
    opts.stdout_path = opts.stderr_path = log_path().string();
    opts.extra_env = extra_env_;
    opts.user = user_;
    const auto offset = fs::exists(log_path()) ? fs::file_size(log_path()) : 0;
    server_ = ChildProcess::spawn(opts);
    const auto deadline = Clock::now() + start_timeout;
    while (!listens_on(server_.pid(), port_)) {
        if (!server_.running()) {
            const std::string said = read_from(log_path(), offset);
            if (said.find("Address already in use") != std::string::npos || said.find("Do you already have another") != std::string::npos)
                throw PortTaken(failure("could not bind its port", log_path(), offset).what());
            throw failure("exited during start-up", log_path(), offset);
        }
        if (Clock::now() >= deadline) throw failure("did not listen within 30 s", log_path(), offset);
        std::this_thread::sleep_for(poll_interval);
    }
}

}  // namespace

std::unique_ptr<LockService> start_mariadb(const ServiceConfig& config) {
    if (config.size != 1)
        throw std::runtime_error("mariadb: one server (named locks live in one server's memory), not " + std::to_string(config.size));
    if (config.peer_proxies) throw std::runtime_error("mariadb: a single server has no peer links");
    if (!is_executable_file(kServer) || !is_executable_file(kInstall))
        throw std::runtime_error("MariaDB not found (" + kServer + ", " + kInstall + "): run scripts/setup (or apt-get install mariadb-server)");
    auto server = std::make_unique<MariaDBServer>(config);
    server->start();
    return server;
}

}  // namespace lockbench
