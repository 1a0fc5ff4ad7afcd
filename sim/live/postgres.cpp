// A PostgreSQL server owned by lockbench; see postgres.h.
//
//   start_postgresql ── own folder (chown) ── initdb ── free port ── postgres ──┬─ postmaster.pid "ready" ─┐
//                                                        ▲                      ├─ exited, port taken ─────┤
//                                                        └──── another port ────┘                          │
//                                     [pgbouncer on a free port, until it listens] ◀──────────────────────┘
#include "sim/live/postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "faults/listeners.h"
#include "process/process.h"
#include "process/stopped.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"
#include "sim/live/server_home.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// What rows differ: "lists role alice, sessions 1 where new it listed sessions 0".
std::string differences(const std::string& now, const std::string& then) {
    const auto rows = [](const std::string& text) {
        std::set<std::string> out;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);)
            if (!line.empty()) out.insert(line);
        return out;
    };
    const auto joined = [](const std::set<std::string>& a, const std::set<std::string>& b) {
        std::string out;
        for (const auto& row : a)
            if (!b.contains(row)) out += (out.empty() ? "" : ", ") + row;
        return out;
    };
    const auto a = rows(now), b = rows(then);
    const std::string extra = joined(a, b), gone = joined(b, a);
    return "lists " + (extra.empty() ? std::string("nothing new") : extra) +
           (gone.empty() ? std::string() : " where new it listed " + gone);
}

// Bounds, not expectations: initdb takes about 0.4 s, the server's start 0.1 s.
constexpr auto initdb_timeout = 60s;
constexpr auto start_timeout = 20s;
constexpr auto poll_interval = 10ms;
constexpr int start_attempts = 4;
// Transaction pooling: one server session for every client, so that clients' statements
// share it by construction (with two, whether a client's statement met the lock holder's
// session was PgBouncer's choice, and a test that counted on it failed). Session pooling: a
// session per client, more than any case has clients (a client beyond the pool would wait).
constexpr int pgbouncer_transaction_pool_size = 1;
constexpr int pgbouncer_session_pool_size = 64;
const std::string kUser = "lockbench";
const std::string kDatabase = "postgres";
const std::string kWho = "PostgreSQL";

class PostgresServer final : public LockServer, public LockService {
public:
    PostgresServer(const ServiceConfig& config, std::string bin)
        : bin_(std::move(bin)), user_(postgres_run_user()), log_dir_(config.dir / "pg0"), settings_(config.settings),
          pool_mode_(config.pgbouncer), password_(fresh_password()) {
        fs::create_directories(log_dir_);
        home_ = server_home(user_, kWho);
        if (!config.env.empty()) extra_env_ = env_for_server(config.env.at(0), home_, user_, kWho);
    }
    ~PostgresServer() override {
        stop_all();
        std::error_code ignored;
        fs::remove_all(home_, ignored);
    }

    void start() {
        initdb();
        start_on_a_free_port(start_attempts, [&](int port) {
            port_ = port;
            launch();
        });
        if (!pool_mode_.empty()) start_pgbouncer();
    }

    // LockServer
    const std::string& name() const override { return name_; }
    int port() const override { return pool_mode_.empty() ? port_ : bouncer_port_; }
    pid_t pid() const override { return postmaster_.pid(); }
    void kill() override {
        // Stopped first, so that it forks no backend while they are killed.
        postmaster_.signal(SIGSTOP);
        for (pid_t backend : processes_related(Related::children, postmaster_.pid())) {
            ::kill(backend, SIGKILL);
            killed_.push_back(backend);
        }
        postmaster_.signal(SIGKILL);
    }
    void restart(bool /*keep_data*/) override;
    // The postmaster first, so that it forks no backend meanwhile; each backend on its own
    // (they left its group with setsid). In place once every one of them has stopped.
    bool pause() override {
        const bool postmaster = postmaster_.stop();
        const std::vector<pid_t> backends = processes_related(Related::children, postmaster_.pid());
        for (pid_t backend : backends) ::kill(backend, SIGSTOP);
        return wait_none_running(backends, std::chrono::seconds(10)) && postmaster;
    }
    void resume() override {
        for (pid_t backend : processes_related(Related::children, postmaster_.pid())) ::kill(backend, SIGCONT);
        postmaster_.signal(SIGCONT);
    }
    fs::path log_path() const override { return log_dir_ / "postgres.log"; }

    // LockService
    std::vector<LockServer*> servers() override { return {this}; }
    std::optional<int> leader() override { return std::nullopt; }
    std::map<std::string, std::string> client_env() const override {
        return {{"LOCKBENCH_USER", kUser}, {"LOCKBENCH_PASSWORD", password_}, {"LOCKBENCH_DATABASE", kDatabase}};
    }
    std::optional<std::string> wipe() override;
    // Right after the start: what the server and its pooler say as new.
    void record_as_new();

private:
    // One statement through psql on the server's own socket (trusted: no password), its rows
    // one per line; none when psql failed (what it said is in wipe.log).
    std::optional<std::string> sql(const std::string& statement);
    // What a run can leave: see kInventory.
    std::optional<std::string> inventory() { return sql(kInventory); }
    static const std::string kInventory;
    void initdb();
    void launch();
    bool ready();
    void start_pgbouncer();
    void stop_all() {
        if (postmaster_.running()) kill();
        postmaster_.kill_and_reap();
        bouncer_.kill_and_reap();
    }
    std::runtime_error failure(const std::string& what, const fs::path& log) const {
        return std::runtime_error("PostgreSQL server pg0 (port " + std::to_string(port_) + ") " + what +
                                  "; its log ended: " + log_tail(log));
    }

    const std::string name_ = "pg0";
    std::string bin_;
    std::string user_;
    fs::path log_dir_;
    fs::path home_;
    std::map<std::string, std::string> settings_;
    std::string pool_mode_;
    std::string password_;
    std::vector<std::string> extra_env_;
    int port_ = 0;
    int bouncer_port_ = 0;
    ChildProcess postmaster_;
    ChildProcess bouncer_;
    std::vector<pid_t> killed_;  // backends killed: the next server waits until they are gone
    std::string as_new_;         // kInventory right after the start, for a server kept
    long long bouncer_sockets_as_new_ = -1;
};

// ---- Kept across repetitions: wiped, and proved wiped -----------------------------------------

// What a run can leave in a server, one row each, sorted: sessions other than the asker's (a
// client's, or one PgBouncer keeps open for its clients: a session's advisory locks are held by
// it, and in transaction pooling outlive the client that took them), advisory locks, prepared
// transactions; every relation (a fence's sequence among them), schema (with its privileges),
// routine, type and extension outside PostgreSQL's own; how many objects of every other kind
// were created since initdb (an OID from 16384 on: a cast, an operator, a collation, a large
// object, a publication, a default privilege, ...); every role with its attributes and
// password, every database with its limits and privileges, every setting not at its default
// (or waiting in postgresql.auto.conf for a reload), and every ALTER ROLE/DATABASE ... SET. As
// new (a fresh initdb): PostgreSQL's own and nothing else. Databases other than `postgres`
// (template1's objects among them) are not looked into: a run's clients connect to `postgres`.
const std::string PostgresServer::kInventory = R"(
WITH own(nspname) AS (VALUES ('pg_catalog'), ('information_schema'), ('pg_toast'))
SELECT 'sessions ' || count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
UNION ALL SELECT 'advisory locks ' || count(*) FROM pg_locks WHERE locktype = 'advisory'
UNION ALL SELECT 'prepared transactions ' || count(*) FROM pg_prepared_xacts
UNION ALL SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname NOT IN (SELECT nspname FROM own) AND n.nspname NOT LIKE 'pg\_%temp\_%'
UNION ALL SELECT 'schema ' || nspname || ' ' || coalesce(nspacl::text, '') FROM pg_namespace
  WHERE nspname NOT LIKE 'pg\_%temp\_%'
UNION ALL SELECT 'routine ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE n.nspname NOT IN (SELECT nspname FROM own)
UNION ALL SELECT 'type ' || t.oid::regtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
  WHERE n.nspname NOT IN (SELECT nspname FROM own) AND n.nspname NOT LIKE 'pg\_%temp\_%'
UNION ALL SELECT 'extension ' || extname FROM pg_extension
UNION ALL SELECT 'created in ' || k || ' ' || n FROM (VALUES
  ('pg_cast', (SELECT count(*) FROM pg_cast WHERE oid >= 16384)),
  ('pg_operator', (SELECT count(*) FROM pg_operator WHERE oid >= 16384)),
  ('pg_opclass', (SELECT count(*) FROM pg_opclass WHERE oid >= 16384)),
  ('pg_opfamily', (SELECT count(*) FROM pg_opfamily WHERE oid >= 16384)),
  ('pg_collation', (SELECT count(*) FROM pg_collation WHERE oid >= 16384)),
  ('pg_conversion', (SELECT count(*) FROM pg_conversion WHERE oid >= 16384)),
  ('pg_ts_config', (SELECT count(*) FROM pg_ts_config WHERE oid >= 16384)),
  ('pg_ts_dict', (SELECT count(*) FROM pg_ts_dict WHERE oid >= 16384)),
  ('pg_language', (SELECT count(*) FROM pg_language WHERE oid >= 16384)),
  ('pg_am', (SELECT count(*) FROM pg_am WHERE oid >= 16384)),
  ('pg_constraint', (SELECT count(*) FROM pg_constraint WHERE oid >= 16384)),
  ('pg_trigger', (SELECT count(*) FROM pg_trigger WHERE oid >= 16384)),
  ('pg_event_trigger', (SELECT count(*) FROM pg_event_trigger WHERE oid >= 16384)),
  ('pg_policy', (SELECT count(*) FROM pg_policy WHERE oid >= 16384)),
  ('pg_rewrite', (SELECT count(*) FROM pg_rewrite WHERE oid >= 16384)),
  ('pg_statistic_ext', (SELECT count(*) FROM pg_statistic_ext WHERE oid >= 16384)),
  ('pg_largeobject_metadata', (SELECT count(*) FROM pg_largeobject_metadata WHERE oid >= 16384)),
  ('pg_default_acl', (SELECT count(*) FROM pg_default_acl WHERE oid >= 16384)),
  ('pg_publication', (SELECT count(*) FROM pg_publication WHERE oid >= 16384)),
  ('pg_subscription', (SELECT count(*) FROM pg_subscription WHERE oid >= 16384)),
  ('pg_foreign_data_wrapper', (SELECT count(*) FROM pg_foreign_data_wrapper WHERE oid >= 16384)),
  ('pg_foreign_server', (SELECT count(*) FROM pg_foreign_server WHERE oid >= 16384)),
  ('pg_user_mapping', (SELECT count(*) FROM pg_user_mapping WHERE oid >= 16384)),
  ('pg_transform', (SELECT count(*) FROM pg_transform WHERE oid >= 16384))) AS created(k, n)
UNION ALL SELECT 'role ' || rolname || ' ' || md5(concat_ws(',', rolsuper, rolinherit, rolcreaterole, rolcreatedb,
  rolcanlogin, rolreplication, rolbypassrls, rolconnlimit, rolpassword, rolvaliduntil)) FROM pg_authid
UNION ALL SELECT 'database ' || datname || ' ' || concat_ws(',', datallowconn, datistemplate, datconnlimit, datacl::text)
  FROM pg_database
UNION ALL SELECT 'setting ' || name || '=' || setting FROM pg_settings WHERE source NOT IN ('default', 'client', 'session')
UNION ALL SELECT 'setting to reload ' || name || '=' || setting FROM pg_file_settings
  WHERE sourcefile LIKE '%postgresql.auto.conf'
UNION ALL SELECT 'role and database settings ' || count(*) FROM pg_db_role_setting
ORDER BY 1)";

// What the wipe removes, in the order that lets it: every schema but public and PostgreSQL's
// own, then public's relations (its sequences among them), types (not the arrays and row types
// that go with another) and routines (not those a type made for itself), each looked up again
// right before its drop, since dropping one may have dropped the next. Anything else (roles,
// databases, settings, casts, ...) it leaves: the proof finds it, and such a server is not kept.
const char* const kDropAll = R"(
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('public', 'pg_catalog', 'information_schema', 'pg_toast')
      AND nspname NOT LIKE 'pg\_%temp\_%' LOOP
    EXECUTE format('DROP SCHEMA %I CASCADE', r.nspname);
  END LOOP;
  FOR r IN SELECT c.relname, c.relkind FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
      AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f') LOOP
    EXECUTE format('DROP %s IF EXISTS public.%I CASCADE', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
      WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.relname);
  END LOOP;
  FOR r IN SELECT t.oid FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typcategory <> 'A'
      AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c') LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_type WHERE oid = r.oid);
    EXECUTE 'DROP TYPE ' || r.oid::regtype::text || ' CASCADE';
  END LOOP;
  FOR r IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                      AND d.deptype IN ('i', 'e')) LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_proc WHERE oid = r.oid);
    EXECUTE 'DROP ROUTINE ' || r.oid::regprocedure::text || ' CASCADE';
  END LOOP;
END $$)";

// The sockets a process holds (its listeners and its connections), from /proc.
long long sockets_of(pid_t pid) {
    std::error_code ec;
    long long n = 0;
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        std::error_code link_ec;
        n += fs::read_symlink(fd.path(), link_ec).string().starts_with("socket:") ? 1 : 0;
    }
    return ec ? -1 : n;
}

std::optional<std::string> PostgresServer::sql(const std::string& statement) {
    const fs::path out = log_dir_ / "wipe.out", said = log_dir_ / "wipe.log";
    std::error_code ignored;
    fs::remove(out, ignored);  // a child's output is appended: this statement's alone
    ChildProcess psql = ChildProcess::spawn(
        {{bin_ + "/psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h", home_.string(), "-p",
          std::to_string(port_), "-U", kUser, "-d", kDatabase, "-c", statement},
         out.string(), said.string(), {}, user_});
    const std::optional<int> status = psql.wait_for(10s);
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
    return read_from(out);
}

void PostgresServer::record_as_new() {
    const auto found = inventory();
    if (!found) throw failure("did not answer psql after its start", log_dir_ / "wipe.log");
    as_new_ = *found;
    if (!pool_mode_.empty()) bouncer_sockets_as_new_ = sockets_of(bouncer_.pid());
}

// As new: every session ended (a run's clients are gone by now, but a session PgBouncer keeps
// for them holds their advisory locks), what the run created dropped, and the server then
// answering kInventory as right after its start; PgBouncer holding as many sockets as then
// (its listeners: no client, and no server connection left to hand a client).
std::optional<std::string> PostgresServer::wipe() {
    constexpr auto kSettled = 5s;
    if (as_new_.empty()) return std::string("not started to be kept");
    if (!sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' "
             "AND pid <> pg_backend_pid()"))
        return "its sessions could not be ended: " + log_tail(log_dir_ / "wipe.log");
    if (!sql(kDropAll)) return "what the run created could not be dropped: " + log_tail(log_dir_ / "wipe.log");
    std::optional<std::string> now;  // an ended session takes a moment to go
    long long sockets = -1;
    if (!first_unsettled(1, Clock::now() + kSettled, 50ms, [&](std::size_t) {
            now = inventory();
            sockets = pool_mode_.empty() ? -1 : sockets_of(bouncer_.pid());
            return now && *now == as_new_ && sockets == bouncer_sockets_as_new_;
        }))
        return std::nullopt;
    if (!now) return "it did not answer psql: " + log_tail(log_dir_ / "wipe.log");
    if (*now != as_new_) return "pg0 " + differences(*now, as_new_);
    return "PgBouncer holds " + std::to_string(sockets) + " sockets where new it held " +
           std::to_string(bouncer_sockets_as_new_);
}

void PostgresServer::initdb() {
    const fs::path pwfile = home_ / "password";
    write_private_file(pwfile, password_ + "\n", user_, kWho);
    const fs::path log = log_dir_ / "initdb.log";
    ChildProcess child = ChildProcess::spawn(
        {{bin_ + "/initdb", "-D", (home_ / "data").string(), "-U", kUser, "--pwfile", pwfile.string(),
          "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions", "--locale=C", "-E", "UTF8"},
         log.string(), log.string(), {}, user_});
    const std::optional<int> status = child.wait_for(initdb_timeout);
    fs::remove(pwfile);
    if (!status) throw failure("initdb did not end within 60 s", log);
    if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) throw failure("initdb failed", log);
}

void PostgresServer::launch() {
    SpawnOptions opts;
    opts.argv = {bin_ + "/postgres", "-D", (home_ / "data").string(), "-p", std::to_string(port_),
                 "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + home_.string(),
                 // fsync only matters when the machine itself goes down, which no fault does;
                 // everything else keeps PostgreSQL's defaults, synchronous_commit among them (a
                 // crash is a SIGKILL of its processes: what they had not written is lost).
                 "-c", "fsync=off",
                 "-c", "shared_buffers=16MB", "-c", "max_connections=60",
                 "-c", "log_line_prefix=%m [%p] ", "-c", "log_connections=on", "-c", "log_disconnections=on"};
    for (const auto& [name, value] : settings_) opts.argv.insert(opts.argv.end(), {"-c", name + "=" + value});
    opts.stdout_path = opts.stderr_path = log_path().string();
    opts.extra_env = extra_env_;
    opts.user = user_;
    const auto offset = fs::exists(log_path()) ? fs::file_size(log_path()) : 0;
    postmaster_ = ChildProcess::spawn(opts);
    const auto deadline = Clock::now() + start_timeout;
    while (!ready()) {
        if (!postmaster_.running()) {
            if (read_from(log_path(), offset).find("Address already in use") != std::string::npos)
                throw PortTaken(failure("could not bind its port", log_path()).what());
            throw failure("exited during start-up", log_path());
        }
        if (Clock::now() >= deadline) throw failure("was not ready within 20 s", log_path());
        std::this_thread::sleep_for(poll_interval);
    }
}

// postmaster.pid's first line is the postmaster's pid, its eighth its status once it has
// started: "ready" when it accepts connections (PostgreSQL 10 and later).
bool PostgresServer::ready() {
    std::istringstream lines(read_from(home_ / "data" / "postmaster.pid"));
    std::string line;
    std::vector<std::string> fields;
    while (std::getline(lines, line)) fields.push_back(line);
    return fields.size() >= 8 && fields[0] == std::to_string(postmaster_.pid()) && fields[7].starts_with("ready");
}

// A server that crashed leaves its postmaster.pid, which the next one sees is stale; its
// shared memory is gone with every process that held it.
void PostgresServer::restart(bool /*keep_data*/) {
    kill();
    postmaster_.kill_and_reap();
    // A backend attached to the old shared memory makes the new postmaster refuse to start
    // ("pre-existing shared memory block is still in use"): it must be dead (a zombie no longer
    // holds it) first.
    const auto gone_by = Clock::now() + 5s;
    std::erase_if(killed_, [](pid_t pid) { return !process_alive(pid); });
    while (!killed_.empty() && Clock::now() < gone_by) {
        std::this_thread::sleep_for(2ms);
        std::erase_if(killed_, [](pid_t pid) { return !process_alive(pid); });
    }
    restart_on_its_port(2s, [&] { launch(); });  // a backend may hold the port a moment longer
}

// Transaction or session pooling in front of the server, to which it connects through the
// socket (no password: only the server's user reaches it). Clients authenticate to PgBouncer
// with the same user and password as to the server.
void PostgresServer::start_pgbouncer() {
    const std::string binary = find_on_path("pgbouncer").value_or("/usr/sbin/pgbouncer");
    if (!is_executable_file(binary)) throw std::runtime_error("pgbouncer not found: run scripts/setup (or apt-get install pgbouncer)");
    const fs::path log = log_dir_ / "pgbouncer.log";
    write_private_file(home_ / "userlist.txt", "\"" + kUser + "\" \"" + password_ + "\"\n", user_, kWho);
    start_on_a_free_port(start_attempts, [&](int port) {
        bouncer_port_ = port;
        std::ostringstream ini;
        ini << "[databases]\n"
            << kDatabase << " = host=" << home_.string() << " port=" << port_ << " dbname=" << kDatabase << " user=" << kUser << "\n"
            << "[pgbouncer]\n"
            << "listen_addr = 127.0.0.1\nlisten_port = " << bouncer_port_ << "\nunix_socket_dir =\n"
            << "auth_type = scram-sha-256\nauth_file = " << (home_ / "userlist.txt").string() << "\n"
            << "pool_mode = " << pool_mode_ << "\ndefault_pool_size = "
            << (pool_mode_ == "transaction" ? pgbouncer_transaction_pool_size : pgbouncer_session_pool_size) << "\n"
            << "max_client_conn = 200\nserver_login_retry = 0\nignore_startup_parameters = extra_float_digits,options\n"
            << "pidfile =\nlogfile =\n";
        write_private_file(home_ / "pgbouncer.ini", ini.str(), user_, kWho);
        const auto offset = fs::exists(log) ? fs::file_size(log) : 0;
        bouncer_ = ChildProcess::spawn({{binary, (home_ / "pgbouncer.ini").string()}, log.string(), log.string(), {}, user_});
        const auto deadline = Clock::now() + start_timeout;
        const auto failed = [&](const std::string& what) {
            return "PgBouncer (port " + std::to_string(bouncer_port_) + ") " + what + "; its log ended: " + log_tail(log);
        };
        for (;;) {
            if (!bouncer_.running()) {
                if (read_from(log, offset).find("Address already in use") != std::string::npos)
                    throw PortTaken(failed("could not bind its port"));
                throw std::runtime_error(failed("exited during start-up"));
            }
            // Its own listener: another run's program that took the port first is no start.
            if (listens_on(bouncer_.pid(), bouncer_port_)) return;
            if (Clock::now() >= deadline) throw std::runtime_error(failed("did not listen within 20 s"));
            std::this_thread::sleep_for(poll_interval);
        }
    });
}

}  // namespace

std::string postgres_bin_dir() {
    if (const char* configured = std::getenv("LOCKBENCH_POSTGRES_BIN"); configured && *configured) {
        if (!is_executable_file(std::string(configured) + "/postgres"))
            throw std::runtime_error(std::string("LOCKBENCH_POSTGRES_BIN=") + configured + ": no postgres program there");
        return configured;
    }
    const std::string debian = "/usr/lib/postgresql/15/bin";
    if (!is_executable_file(debian + "/postgres") || !is_executable_file(debian + "/initdb"))
        throw std::runtime_error("PostgreSQL 15 not found in " + debian + ": run scripts/setup (or apt-get install postgresql-15)");
    return debian;
}

std::string postgres_run_user() { return server_run_user("postgres"); }

std::unique_ptr<LockService> start_postgresql(const ServiceConfig& config) {
    if (config.size != 1)
        throw std::runtime_error("postgresql: one server (advisory locks live in one server's memory), not " +
                                 std::to_string(config.size));
    if (config.peer_proxies) throw std::runtime_error("postgresql: a single server has no peer links");
    if (!config.pgbouncer.empty() && config.pgbouncer != "transaction" && config.pgbouncer != "session")
        throw std::runtime_error("postgresql: PgBouncer's pool mode is transaction or session, not " + config.pgbouncer);
    auto server = std::make_unique<PostgresServer>(config, postgres_bin_dir());
    server->start();
    if (config.kept) server->record_as_new();
    return server;
}

}  // namespace lockbench
