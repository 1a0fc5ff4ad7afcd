// A PostgreSQL server that lockbench starts, owns and stops: start_service() with
// Service::postgresql (lock_service.h) gives a LockService with one server, pg0, optionally behind PgBouncer.
//
//   /tmp/lockbench.<pid>.XXXXXX/     the cluster's own folder, 0700, owned by the user it runs as
//       data/                        initdb's, fsync off (nothing here outlives the run)
//       .s.PGSQL.<port>              its Unix socket: nobody else can reach the folder
//       pgbouncer.ini, userlist.txt  with ServiceConfig.pgbouncer
//   <dir>/pg0/postgres.log           the server's log (and pgbouncer.log), opened by lockbench
//
// PostgreSQL refuses to run as root, and so does PgBouncer: when lockbench is root they run as
// Debian's `postgres` user (SpawnOptions::user), in a folder of their own rather than the run's,
// which that user could not reach. Clients reach the server on 127.0.0.1 with a password made
// for this server alone (LockService::client_env: LOCKBENCH_USER, LOCKBENCH_PASSWORD,
// LOCKBENCH_DATABASE); its socket needs none, and only the server's user can reach it.
//
// Behind PgBouncer, pg0's port is PgBouncer's: a client's link faults cut it from the pooler,
// and a crash, restart or pause strikes the server behind it (PgBouncer connects to it through
// its socket and reconnects). PostgreSQL makes each backend the leader of its own process
// group, so a pause or a crash reaches the postmaster and each of its children in turn.
#pragma once

#include <string>

namespace lockbench {

// The folder of PostgreSQL's programs (initdb, postgres): $LOCKBENCH_POSTGRES_BIN if set, else
// Debian's /usr/lib/postgresql/15/bin. Throws one clear line naming scripts/setup if missing.
std::string postgres_bin_dir();

// The user PostgreSQL and PgBouncer run as: "postgres" when lockbench is root, else "" (as
// lockbench runs).
std::string postgres_run_user();

}  // namespace lockbench
