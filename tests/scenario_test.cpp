// The catalog on live servers, sampled: each case below run through the real CLI against a few
// locks that between them meet every fault kind and every lock service (the whole catalog,
// every case against every lock, is the main job's: scripts/run, which CI runs after the
// tests). Every expectation must hold (the case's, its predictions', each lock's recorded
// verdict), and what a case's mechanism must leave in the files beyond them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <ctime>
#include <map>
#include <ranges>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct RunOutput {
    int status = -1;
    nlohmann::json summary;
};

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("lockbench-scenario-test-" + name + "-" + std::to_string(getpid()));
    fs::remove_all(dir);
    return dir;
}

RunOutput run_lockbench(const std::string& args, const fs::path& out) {
    const std::string cmd = std::string(LOCKBENCH_BINARY) + " run " + args + " --out " + out.string() + " >/dev/null 2>&1";
    RunOutput r;
    r.status = std::system(cmd.c_str());
    std::ifstream in(out / "summary.json");
    if (in) r.summary = nlohmann::json::parse(in);
    return r;
}

const nlohmann::json& run_named(const nlohmann::json& summary, const std::string& name) {
    for (const auto& r : summary.at("runs"))
        if (r.at("name") == name) return r;
    throw std::runtime_error("no run named " + name);
}

long long safety(const nlohmann::json& run, const char* key) { return run.at("safety").at(key).get<long long>(); }

std::string scenario(const char* name) { return std::string(LOCKBENCH_SOURCE_DIR) + "/scenarios/" + name; }

// What each catalog case must show beyond its own `expect` entries. (That every lock of
// locks/ joins the baseline is compose_test's: the composed catalog, not a run.)
void baseline_checks(const nlohmann::json& summary) {
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        EXPECT_EQ(safety(run, "mutual_exclusion_violations"), 0) << name;
        EXPECT_EQ(safety(run, "lost_updates"), 0) << name;
        EXPECT_EQ(safety(run, "foreign_releases"), 0) << name;
        EXPECT_EQ(safety(run, "stale_writes_accepted"), 0) << name;
        EXPECT_GE(run.at("ops").at("sections_completed").get<long long>(), 8) << name;
    }
}

void slow_holder_checks(const nlohmann::json& summary) {
    const auto& setnx = run_named(summary, "setnx");
    EXPECT_GT(safety(setnx, "foreign_releases"), 0);
    EXPECT_GT(safety(setnx, "mutual_exclusion_violations"), 0);
    const auto& token = run_named(summary, "token-lua");
    EXPECT_GT(safety(token, "mutual_exclusion_violations"), 0);
    EXPECT_EQ(safety(token, "foreign_releases"), 0) << "compare-and-delete never removes another's lock";
    const auto& fenced = run_named(summary, "token-lua+fence");
    EXPECT_GT(safety(fenced, "stale_writes_rejected"), 0);
    EXPECT_EQ(safety(fenced, "stale_writes_accepted"), 0);
    const auto& watchdog = run_named(summary, "reentrant");
    EXPECT_EQ(safety(watchdog, "mutual_exclusion_violations"), 0) << "the watchdog keeps the lease alive";
    // A violation comes with its witness: both leases, their clients, the store positions.
    const auto& ws = token.at("witnesses");
    const auto w = std::ranges::find_if(ws, [](const auto& x) { return x.at("kind") == "mutual_exclusion"; });
    ASSERT_NE(w, ws.end());
    EXPECT_NE(w->at("first").at("lease"), w->at("second").at("lease"));
    EXPECT_LT(w->at("first").at("enter_seq").template get<long long>(),
              w->at("second").at("enter_seq").template get<long long>());
}

std::vector<nlohmann::json> jsonl(const fs::path& file) {
    std::vector<nlohmann::json> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

// A run whose master is killed records the failover as Sentinel announced it: the master
// seen down, then the replica promoted, both after the crash the nemesis logged.
void failover_checks(const fs::path& out, const nlohmann::json& summary) {
    for (const auto& run : summary.at("runs")) {
        const fs::path dir = out / "runs" / run.at("name").get<std::string>();
        long long crash = 0, down = 0, promoted = 0;
        for (const auto& e : jsonl(dir / "nemesis.jsonl"))
            if (e.at("fault") == "crash" && e.at("type") == "start") crash = e.at("t_ns");
        for (const auto& e : jsonl(dir / "sentinel.jsonl")) {
            if (e.at("event") == "+sdown" && e.at("detail").get<std::string>().starts_with("master ") && !down)
                down = e.at("t_ns");
            if (e.at("event") == "+switch-master" && !promoted) promoted = e.at("t_ns");
        }
        ASSERT_GT(crash, 0) << run.at("name") << ": the master was never killed";
        EXPECT_GT(down, crash) << run.at("name");
        EXPECT_GT(promoted, down) << run.at("name");
    }
}

// client-clock-back: a release that trusts the client's clock (or checks nothing) deletes the
// next holder's key, and the foreign release is client 0's, whose clock stepped back: the
// releaser is client 0 and the victim another client, in every run that counted one.
void client_clock_back_checks(const nlohmann::json& summary) {
    int foreign_runs = 0;
    for (const auto& run : summary.at("runs")) {
        if (safety(run, "foreign_releases") == 0) continue;
        ++foreign_runs;
        const auto& witnesses = run.at("witnesses");
        const auto foreign = std::ranges::find_if(witnesses, [](const auto& w) { return w.at("kind") == "foreign_release"; });
        ASSERT_NE(foreign, witnesses.end()) << run.at("name") << ": " << witnesses.dump();
        EXPECT_EQ(foreign->at("releaser").at("client"), 0) << foreign->dump();
        EXPECT_NE(foreign->at("victim").at("client"), 0) << foreign->dump();
    }
    EXPECT_GE(foreign_runs, 1) << "no lock with a plain or client-clock release deleted the next holder's key";
}

// node-redlock with its own retries, right after client 1 won the lock from client 0: 4.2.0
// says its validity is whole, 5.0.0-beta.2 says it is spent, while the probe found the key
// standing on every node; the spent lock's first renewal is refused by the library itself.
void redlock_validity_retries_checks(const fs::path& out) {
    for (const std::string run : {"node-redlock+retries", "node-redlock-5+retries"}) {
        const auto lines = jsonl(out / "runs" / run / "history" / "client-1.jsonl");
        const auto won = std::ranges::find_if(lines, [](const auto& e) { return e.at("op") == "acquire" && e.at("type") == "ok"; });
        ASSERT_NE(won, lines.end()) << run;
        // The library answers once a majority voted: a fifth node's SET may land after the
        // probe read it (-2) or go unnamed (null); the lock stands on a majority.
        const auto standing = std::ranges::count_if(won->at("key_ttl_ms"), [](const auto& t) {
            return t.is_number_integer() && t.template get<long long>() > 0;
        });
        EXPECT_GE(standing, 3) << run << ": " << won->dump();
        EXPECT_EQ(won->at("validity_ms").template get<double>() > 0, run == "node-redlock+retries") << won->dump();
        const auto renewed = std::ranges::find_if(lines, [](const auto& e) { return e.at("op") == "renew" && e.at("type") != "invoke"; });
        ASSERT_NE(renewed, lines.end()) << run;
        EXPECT_EQ(renewed->at("type"), run == "node-redlock+retries" ? "ok" : "fail") << renewed->dump();
    }
}

// redis-semaphore's refresh bug (swarthy/redis-semaphore#175): the paused holder's refresh
// finds its key gone. 5.3.0 re-creates it and says nothing, so its holder writes; from 5.3.1 on
// the library announces the loss and the holder abandons its write.
void redis_semaphore_refresh_checks(const fs::path& out) {
    for (const char* run : {"redis-semaphore-5.3.0", "redis-semaphore-5.3.1", "redis-semaphore"}) {
        const bool silent = std::string(run) == "redis-semaphore-5.3.0";
        long long lost = 0, written = 0, abandoned = 0;
        for (const auto& e : jsonl(out / "runs" / run / "history" / "client-0.jsonl")) {
            lost += e.at("op") == "lost";
            written += e.at("op") == "write" && e.at("type") == "ok";
            abandoned += e.at("op") == "write" && e.at("type") == "fail";
        }
        EXPECT_EQ(lost, silent ? 0 : 1) << run;
        EXPECT_EQ(written, silent ? 1 : 0) << run;
        EXPECT_EQ(abandoned, silent ? 0 : 1) << run;
    }
}

// The clock step reached ZooKeeper's JVM: its log's timestamps (its wall clock) span the
// minute it was stepped, in a run of a few seconds. Without that, "held" would say nothing.
void consensus_clock_jump_checks(const fs::path& out) {
    std::ifstream log(out / "runs" / "zookeeper" / "servers" / "zk0.log");
    std::vector<long long> seconds;
    for (std::string line; std::getline(log, line);) {
        std::tm tm{};
        if (line.size() > 19 && strptime(line.substr(0, 19).c_str(), "%Y-%m-%d %H:%M:%S", &tm)) seconds.push_back(timegm(&tm));
    }
    ASSERT_GE(seconds.size(), 2u) << "no timestamped lines in zk0.log";
    EXPECT_GE(*std::ranges::max_element(seconds) - *std::ranges::min_element(seconds), 60) << "the +60 s step never showed";
}

// Client 0's history in a renewal run: each renewal is recorded against its lease; the saving
// policies only ever renew successfully, a short or late one fails before the holder's write,
// and with abandon that write is refused by the holder itself.
void renewal_checks(const fs::path& out, const nlohmann::json& summary) {
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        std::map<std::string, int> renewals;
        long long first_failed = 0, write_sent = 0;
        std::string write_end;
        for (const auto& e : jsonl(out / "runs" / name / "history" / "client-0.jsonl")) {
            if (e.at("op") == "renew" && e.at("type") != "invoke") {
                EXPECT_EQ(e.at("lease"), "c0.1") << name;
                ++renewals[e.at("type")];
                if (e.at("type") == "fail" && !first_failed) first_failed = e.at("t_ns");
            }
            if (e.at("op") == "write" && e.at("type") == "invoke") write_sent = e.at("t_ns");
            if (e.at("op") == "write" && e.at("type") != "invoke") write_end = e.at("type");
        }
        const bool saves = name == "token-lua+renew" || name == "token-lua+renew-add" || name == "redis-py+renew";
        if (saves) {
            EXPECT_GE(renewals["ok"], 1) << name << ": renewed while it worked";
        }
        EXPECT_EQ(renewals["fail"], saves ? 0 : 1) << name << ": the first failure stops the renewals";
        if (!saves) {
            EXPECT_LT(first_failed, write_sent) << name << ": the holder learnt before it wrote";
        }
        EXPECT_EQ(write_end, name.ends_with("+abandon") ? "fail" : "ok") << name;
    }
}

// The repeating nemesis: every run's pauses were numbered 1, 2, … in order (skipped ones
// too), each that started ended, they struck whoever held the lock (so more than one client),
// and only the fenced lock lost no acknowledged update.
void jepsen_pauses_checks(const fs::path& out, const nlohmann::json& summary) {
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        std::set<int> struck;
        long long next = 1, starts = 0, ends = 0;
        for (const auto& e : jsonl(out / "runs" / name / "nemesis.jsonl")) {
            if (e.at("type") == "end") ++ends;
            if (e.at("type") == "end") continue;
            EXPECT_EQ(e.at("occurrence").get<long long>(), next++) << name << ": " << e.dump();
            if (e.at("type") != "start") continue;
            ++starts;
            struck.insert(e.at("client").get<int>());
        }
        EXPECT_GE(starts, 4) << name;
        EXPECT_EQ(starts, ends) << name << ": a pause that never ended";
        EXPECT_GE(struck.size(), 2u) << name << ": the holder changes, and so does whom the pause strikes";
        const bool fenced = run.at("params").value("fence", false);
        EXPECT_EQ(safety(run, "lost_updates") > 0, !fenced) << name;
    }
}

// Only the watchdog was paused: the starved one lets a second holder in while the slow
// holder works on; without the fault, or paused for less than the lease has left, it saves
// the holder. The fault was the background pause, at the slow holder, ended in the run.
void watchdog_starved_checks(const fs::path& out, const nlohmann::json& summary) {
    EXPECT_GT(safety(run_named(summary, "reentrant"), "mutual_exclusion_violations"), 0);
    EXPECT_EQ(safety(run_named(summary, "reentrant@free"), "mutual_exclusion_violations"), 0);
    EXPECT_EQ(safety(run_named(summary, "reentrant@late"), "mutual_exclusion_violations"), 0);
    std::vector<std::string> types;
    std::vector<long long> at_ns;
    const fs::path run = out / "runs" / "reentrant";
    std::ifstream log(run / "nemesis.jsonl");
    for (std::string line; std::getline(log, line);) {
        const auto e = nlohmann::json::parse(line);
        EXPECT_EQ(e.at("client"), 0);
        EXPECT_NE(e.at("label").get<std::string>().find("of background tasks"), std::string::npos) << line;
        types.push_back(e.at("type"));
        at_ns.push_back(e.at("t_ns"));
    }
    ASSERT_EQ(types, (std::vector<std::string>{"start", "end"}));
    // The holder worked on: it wrote while its watchdog was still paused (a whole-client
    // pause would have kept it from writing until the end).
    std::ifstream history(run / "history" / "client-0.jsonl");
    for (std::string line; std::getline(history, line);) {
        const auto e = nlohmann::json::parse(line);
        if (e.at("op") != "write" || e.at("type") != "invoke") continue;
        EXPECT_GT(e.at("t_ns").get<long long>(), at_ns[0]);
        EXPECT_LT(e.at("t_ns").get<long long>(), at_ns[1]) << "the holder did not write while its watchdog was paused";
        return;
    }
    ADD_FAILURE() << "client 0 never wrote";
}

// resource-check: the store logged what each check decided. Before-write under token: the
// stale write is refused because the newer lease registered since; before-enter under token:
// the legitimate holder's write is refused because the stale lease registered last, and the
// stale lease's write is accepted. Every record of a fenced lease keeps its fence.
void resource_check_checks(const fs::path& out, const nlohmann::json& summary) {
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        const std::string variant = run.value("variant", std::string("before-write"));
        const std::string check = variant.find('+') == std::string::npos ? "fence" : variant.substr(variant.find('+') + 1);
        EXPECT_EQ(run.value("resource_check", std::string("fence")), check) << name;
        const auto log = jsonl(out / "runs" / name / "store.jsonl");
        for (const auto& e : log) {
            if (e.contains("abandoned")) continue;   // an abandon's exit names only the lease
            EXPECT_TRUE(e.contains("fence")) << name << ": " << e.dump();
        }
        if (check != "token") continue;
        const auto reject = std::ranges::find_if(log, [](const auto& e) { return e.at("kind") == "reject"; });
        ASSERT_NE(reject, log.end()) << name;
        const bool stale_refused = variant.starts_with("before-write");
        EXPECT_EQ(reject->at("client"), stale_refused ? 0 : 1) << name;
        EXPECT_EQ(reject->at("registered").template get<std::string>().substr(0, 2), stale_refused ? "c1" : "c0") << name;
    }
}

// A case and the locks it runs against here (none named: every lock it applies to).
struct Sample {
    std::string name;
    std::vector<std::string> locks;
};

// How ctest lists a sample: by its case.
void PrintTo(const Sample& s, std::ostream* os) { *os << s.name; }

// Between them: every fault kind (pause, of a client and of its background tasks, repeating;
// kill; gate; clock of a client and of a node; link to the lock nodes, to the store, of
// replication and between servers; crash with and without restart, of a leader too), every
// lock service (a Redis node, five, a master with replica and Sentinel; ZooKeeper and etcd,
// one server and three), the built-in algorithms and libraries in Python, JavaScript and PHP,
// and every case whose mechanism a check below reads in the files.
const std::vector<Sample> kSamples = {
    {"baseline", {"setnx", "zookeeper", "etcd"}},
    {"gc-pause", {"token-lua", "token-lua+fence", "laravel"}},
    {"slow-holder", {"setnx", "token-lua", "token-lua+fence", "reentrant"}},
    {"holder-killed", {"token-lua", "redis-py"}},
    {"expired-lock-race", {}},
    {"client-clock-back", {"setnx", "token-lua"}},
    {"node-clock-jump", {"token-lua", "setnx+in-value"}},
    {"held-replies", {"redlock", "redlock+no-validity-check", "node-redlock"}},
    {"partitioned-write", {"token-lua+fence", "token-lua"}},
    {"failover-lost-lock", {"token-lua", "token-lua+fence"}},
    {"failover-ttl-kept", {"token-lua+wait"}},
    {"redlock-restart-empty", {"redlock"}},
    {"consensus-leader-crash", {"zookeeper", "etcd"}},
    {"consensus-minority", {"zookeeper", "etcd"}},
    {"consensus-clock-jump", {"zookeeper"}},
    {"jepsen-pauses", {"token-lua", "token-lua+fence"}},
    {"watchdog-starved", {"reentrant"}},
    {"resource-check", {}},
    {"renewal", {}},
    {"redis-semaphore-refresh", {}},
    {"redlock-validity-retries", {}},
    // The disk stall end to end: the shim holds a live node's flushes (2 holders without a
    // fence, the stale write refused with one).
    {"disk-stall-acquire", {"token-lua", "token-lua+fence"}},
};

class Catalog : public ::testing::TestWithParam<Sample> {};

// Each sampled case, run as a user runs it: each expectation must hold, including that its
// faults were injected (a case whose fault never landed fails).
TEST_P(Catalog, EveryExpectationHolds) {
    const Sample& sample = GetParam();
    const std::string& name = sample.name;
    const fs::path out = fresh_dir(name);
    std::string args = scenario((name + ".json").c_str());
    for (const std::string& lock : sample.locks) args += " --lock " + lock;
    const RunOutput r = run_lockbench(args, out);
    ASSERT_TRUE(r.summary.is_object()) << "no summary.json";
    std::set<std::string> locks;
    for (const auto& run : r.summary.at("runs")) {
        locks.insert(run.value("lock", std::string()));
        EXPECT_TRUE(run.at("expectations_held").get<bool>()) << run.at("name");
        for (const auto& e : run.at("expectations"))
            EXPECT_TRUE(e.at("held").get<bool>()) << run.at("name") << ": " << e.at("expect") << ", got " << e.at("value");
    }
    for (const std::string& lock : sample.locks) EXPECT_TRUE(locks.contains(lock)) << lock << " did not run";
    EXPECT_EQ(WEXITSTATUS(r.status), 0);
    if (name == "baseline") baseline_checks(r.summary);
    if (name == "slow-holder") slow_holder_checks(r.summary);
    if (name == "renewal") renewal_checks(out, r.summary);
    if (name.starts_with("failover-")) failover_checks(out, r.summary);
    if (name == "client-clock-back") client_clock_back_checks(r.summary);
    if (name == "redlock-validity-retries") redlock_validity_retries_checks(out);
    if (name == "redis-semaphore-refresh") redis_semaphore_refresh_checks(out);
    if (name == "consensus-clock-jump") consensus_clock_jump_checks(out);
    if (name == "jepsen-pauses") jepsen_pauses_checks(out, r.summary);
    if (name == "watchdog-starved") watchdog_starved_checks(out, r.summary);
    if (name == "resource-check") resource_check_checks(out, r.summary);
    fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Catalog, ::testing::ValuesIn(kSamples),
                         [](const auto& info) {
                             std::string n = info.param.name;
                             std::ranges::replace(n, '-', '_');
                             return n;
                         });

// Every case of scenarios/ is sampled above, or says here why not: a new case is either
// sampled or left to the main job knowingly.
TEST(Scenario, EveryCaseIsSampledOrSaysWhyNot) {
    const std::map<std::string, std::string> left_to_the_main_job = {
        {"acquire-pause", "a client pause, as gc-pause's, at the point during_acquire"},
        {"client-clock-skew", "a client clock step, as client-clock-back's, at a time"},
        {"consensus-leader-crash-busy", "a leader crash, as consensus-leader-crash's, under load"},
        {"crash-before-expire", "a kill, as holder-killed's, between SETNX and EXPIRE"},
        {"delayed-write", "a held store link, as partitioned-write's, before the write"},
        {"node-partition", "a node link cut, as held-replies', for whole seconds"},
        {"node-restart-empty", "a crash and empty restart, as redlock-restart-empty's, of one node"},
        {"redlock-clock-jump", "a node clock step, as node-clock-jump's, on five nodes"},
        {"redlock-minority-partition", "a link cut to a minority, as held-replies', on five nodes"},
        // Cases of the verdict-only locks ("joins": "none"): their verdicts and scripts/run-verdict-only run them.
        {"curator-session-expiry-reconnect", "held replies, as held-replies', until Curator expires its own session (curator+wait's verdict)"},
        {"etcd-session-done", "a client pause, as gc-pause's, past the lease of etcd's Go session (etcd-go's verdicts)"},
        {"curator-release-cut", "a link fault at a point, as partitioned-write's, on ZooKeeper (the Curator locks' verdicts)"},
        {"session-ended-under-holder", "a link cut, as partitioned-write's, on PostgreSQL (postgres_test ends an idle holder's session live)"},
        {"server-restart-under-holder", "a server crash, as node-restart-empty's, on PostgreSQL and MariaDB (postgres_test and mariadb_test crash one under a holder live)"},
        {"wait-timeout-under-holder", "a gate until another enters, as session-ended-under-holder's, on MariaDB (mariadb_test has an idle holder's connection dropped live)"},
    };
    for (const auto& e : fs::directory_iterator(std::string(LOCKBENCH_SOURCE_DIR) + "/scenarios")) {
        if (e.path().extension() != ".json") continue;
        const std::string name = e.path().stem().string();
        const bool sampled = std::ranges::any_of(kSamples, [&](const Sample& s) { return s.name == name; });
        EXPECT_TRUE(sampled != left_to_the_main_job.contains(name))
            << name << ": sample it in kSamples, or say in left_to_the_main_job why the main job alone runs it";
    }
    // A case promoted from a search is the simulator's own story: sim_test holds every one of
    // scenarios/discovered/ to its predictions in simulated time, the main job runs it live.
}

// Work durations per section, per client, as recorded in the write invocations.
std::map<int, std::vector<double>> drawn_work(const fs::path& run_dir) {
    std::map<int, std::vector<double>> work;
    for (const auto& f : fs::directory_iterator(run_dir / "history")) {
        std::ifstream in(f.path());
        std::string line;
        while (std::getline(in, line)) {
            const auto j = nlohmann::json::parse(line);
            if (j.at("op") == "write" && j.at("type") == "invoke") work[j.at("client")].push_back(j.at("work_ms"));
        }
    }
    return work;
}

TEST(Scenario, TheSameSeedDrawsTheSameWorkload) {
    const fs::path a = fresh_dir("seed-a"), b = fresh_dir("seed-b"), c = fresh_dir("seed-c");
    const std::string args = scenario("baseline.json") + " --lock setnx";
    run_lockbench(args + " --seed 7", a);
    run_lockbench(args + " --seed 7", b);
    run_lockbench(args + " --seed 8", c);
    const auto wa = drawn_work(a / "runs/setnx"), wb = drawn_work(b / "runs/setnx"),
               wc = drawn_work(c / "runs/setnx");
    ASSERT_EQ(wa.size(), 8u);
    bool differs = false;
    for (const auto& [client, seq] : wa) {
        // Contention decides how many sections each client gets; the sequence itself is fixed.
        const size_t n = std::min({seq.size(), wb.at(client).size(), wc.at(client).size(), size_t{10}});
        ASSERT_GT(n, 0u);
        for (size_t i = 0; i < n; ++i) {
            EXPECT_DOUBLE_EQ(seq[i], wb.at(client)[i]) << "client " << client << " section " << i;
            differs = differs || seq[i] != wc.at(client)[i];
        }
    }
    EXPECT_TRUE(differs) << "another seed should draw another workload";
    for (const auto& d : {a, b, c}) fs::remove_all(d);
}

}  // namespace
