// Reading a run folder (analysis/history_io.h) on files written here, and refusing what a
// genuine run could not have written (analysis/record_check.h).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/stats.h"
#include "tests/history_gen.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;
using histgen::HistoryBuilder;
using K = StoreKind;
using Op = OpKind;
using T = EventType;

constexpr long long kMs = 1'000'000;  // ns

// ---- reading a run folder ------------------------------------------------------------------

// A fresh folder under the system temp directory, removed at the end of the test.
class RunFolder : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("lockbench-checker-test-" + std::to_string(::getpid()) + "-" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "history");
    }
    void TearDown() override { fs::remove_all(dir_); }

    void write(const fs::path& rel, const std::string& text) const {
        std::ofstream(dir_ / rel) << text;
    }

    // Writes `h` as a run records it: one file per client, the store's log, run.json.
    void write_run(const RunHistory& h) const {
        write("run.json", nlohmann::json{{"final_counter", h.final_counter}, {"clients", h.clients}}.dump());
        std::vector<std::string> per_client(static_cast<size_t>(h.clients));
        for (const ClientEvent& e : h.events) {
            nlohmann::json j = {{"t_ns", e.t_ns}, {"client", e.client}, {"op", op_name(e.op)},
                                {"type", event_type_name(e.type)}};
            if (e.lease) j["lease"] = h.leases.at(static_cast<size_t>(*e.lease));
            if (e.depth != 1) j["depth"] = e.depth;
            if (e.fence) j["fence"] = *e.fence;
            nlohmann::json nodes = nlohmann::json::array();
            for (int n = 0; n < 32; ++n)
                if (e.nodes & (1u << n)) nodes.push_back(n);
            if (!nodes.empty()) j["nodes"] = nodes;
            per_client[static_cast<size_t>(e.client)] += j.dump() + "\n";
        }
        for (size_t c = 0; c < per_client.size(); ++c)
            write(fs::path("history") / ("client-" + std::to_string(c) + ".jsonl"), per_client[c]);
        std::string store;
        for (const StoreEntry& s : h.store) {
            nlohmann::json j = {{"seq", s.seq}, {"kind", store_kind_name(s.kind)}, {"client", s.client},
                                {"lease", h.leases.at(static_cast<size_t>(s.lease))},
                                {"read", s.read}, {"prev", s.prev}, {"t_us", s.t_us}};
            if (s.fence) j["fence"] = *s.fence;
            store += j.dump() + "\n";
        }
        write("store.jsonl", store);
    }

    // The error load_run_history throws, or "" if it loads.
    std::string load_error() const {
        try {
            load_run_history(dir_);
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    }

    fs::path dir_;
};

std::string lease_name(const RunHistory& h, std::optional<int> lease) {
    return lease ? h.leases.at(static_cast<size_t>(*lease)) : "-";
}

TEST_F(RunFolder, GeneratedHistoryRoundTrips) {
    const RunHistory h = histgen::generate_history(3, 200, 42);
    write_run(h);
    const RunHistory back = load_run_history(dir_);

    EXPECT_EQ(back.final_counter, h.final_counter);
    EXPECT_EQ(back.clients, h.clients);
    ASSERT_EQ(back.events.size(), h.events.size());
    for (size_t i = 0; i < h.events.size(); ++i) {
        const ClientEvent &a = h.events[i], &b = back.events[i];
        SCOPED_TRACE("event " + std::to_string(i));
        EXPECT_EQ(b.t_ns, a.t_ns);
        EXPECT_EQ(b.client, a.client);
        EXPECT_EQ(b.op, a.op);
        EXPECT_EQ(b.type, a.type);
        EXPECT_EQ(lease_name(back, b.lease), lease_name(h, a.lease));
        EXPECT_EQ(b.depth, a.depth);
        EXPECT_EQ(b.fence, a.fence);
        EXPECT_EQ(b.nodes, a.nodes);
    }
    ASSERT_EQ(back.store.size(), h.store.size());
    for (size_t i = 0; i < h.store.size(); ++i) {
        const StoreEntry &a = h.store[i], &b = back.store[i];
        SCOPED_TRACE("store entry " + std::to_string(i));
        EXPECT_EQ(b.seq, a.seq);
        EXPECT_EQ(b.kind, a.kind);
        EXPECT_EQ(b.client, a.client);
        EXPECT_EQ(lease_name(back, b.lease), lease_name(h, a.lease));
        EXPECT_EQ(back.lease_client.at(static_cast<size_t>(b.lease)), a.client);
        EXPECT_EQ(b.fence, a.fence);
        EXPECT_EQ(b.read, a.read);
        EXPECT_EQ(b.prev, a.prev);
        EXPECT_EQ(b.t_us, a.t_us);
    }
    EXPECT_EQ(to_json(check(back), back), to_json(check(h), h));
}

TEST_F(RunFolder, MergesClientFilesByTimeAndSkipsFaultPoints) {
    write("run.json", R"({"final_counter": 0, "clients": 2, "scenario": "x"})");
    write("history/client-0.jsonl",
          R"({"t_ns": 10, "client": 0, "op": "acquire", "type": "invoke"})" "\n"
          R"({"t_ns": 30, "client": 0, "op": "acquire", "type": "ok", "lease": "c0.1", "nodes": [0, 2], "fence": 7})" "\n"
          R"({"t_ns": 40, "client": 0, "op": "read", "type": "invoke", "lease": "c0.1"})" "\n");
    write("history/client-1.jsonl",
          R"({"t_ns": 20, "client": 1, "op": "point", "name": "after_acquire"})" "\n"
          "\n"
          R"({"t_ns": 25, "client": 1, "op": "acquire", "type": "invoke", "depth": 2})" "\n");
    write("store.jsonl",
          // As the store's script logs it: TIME split into seconds and microseconds.
          R"({"seq": 1, "kind": "enter", "client": 0, "lease": "c0.1", "fence": 7, "read": 0, "t_s": 1700000000, "t_usec": 250})" "\n"
          R"({"seq": 2, "kind": "exit", "client": 0, "lease": "c0.1"})" "\n");
    const RunHistory h = load_run_history(dir_);
    EXPECT_EQ(h.final_counter, 0);
    EXPECT_EQ(h.clients, 2);
    ASSERT_EQ(h.events.size(), 4u);
    EXPECT_EQ(h.events[0].t_ns, 10);
    EXPECT_EQ(h.events[1].t_ns, 25);
    EXPECT_EQ(h.events[1].depth, 2);
    EXPECT_EQ(h.events[2].nodes, 0b101u);
    EXPECT_EQ(h.events[2].fence, 7);
    ASSERT_EQ(h.store.size(), 2u);
    EXPECT_EQ(h.store[0].seq, 1);
    EXPECT_EQ(h.store[0].read, 0);
    EXPECT_EQ(h.store[0].fence, 7);
    EXPECT_EQ(h.store[0].t_us, 1'700'000'000'000'250LL);
    EXPECT_EQ(h.store[1].kind, StoreKind::exit);
    EXPECT_FALSE(h.store[1].fence.has_value());
    ASSERT_EQ(h.leases.size(), 1u);
    EXPECT_EQ(h.leases[0], "c0.1");
}

// Renewals and a lock's "lost" announcements are for the timeline: the checker reads the
// history as if they were not there.
TEST_F(RunFolder, RenewalsAndLostEventsAreSkipped) {
    write("run.json", R"({"final_counter": 0, "clients": 1, "scenario": "x"})");
    write("history/client-0.jsonl",
          R"({"t_ns": 5, "client": 0, "op": "acquire", "type": "invoke"})" "\n"
          R"({"t_ns": 10, "client": 0, "op": "acquire", "type": "ok", "lease": "c0.1"})" "\n"
          R"({"t_ns": 20, "client": 0, "op": "renew", "type": "invoke", "lease": "c0.1", "ttl_ms": 50})" "\n"
          R"({"t_ns": 30, "client": 0, "op": "renew", "type": "fail", "lease": "c0.1", "detail": "not ours any more"})" "\n"
          R"({"t_ns": 40, "client": 0, "op": "lost", "type": "info", "lease": "c0.1", "detail": "{}"})" "\n"
          R"({"t_ns": 50, "client": 0, "op": "release", "type": "invoke", "lease": "c0.1"})" "\n");
    write("store.jsonl", "");
    const RunHistory h = load_run_history(dir_);
    ASSERT_EQ(h.events.size(), 3u);
    EXPECT_EQ(h.events[1].op, OpKind::acquire);
    EXPECT_EQ(h.events[2].op, OpKind::release);
}

// The run's TTL from run.json's params and the failover's end from sentinel.jsonl (its
// first +switch-master), for failover_to_entry_ms; a run without them has neither.
TEST_F(RunFolder, TheTtlAndSentinelsSwitchAreRead) {
    write("run.json", R"({"final_counter": 0, "clients": 1})");
    write("history/client-0.jsonl", R"({"t_ns": 5, "client": 0, "op": "acquire", "type": "invoke"})" "\n");
    write("store.jsonl", "");
    RunHistory h = load_run_history(dir_);
    EXPECT_FALSE(h.ttl_ms.has_value());
    EXPECT_FALSE(h.failover_ns.has_value());
    write("run.json", R"({"final_counter": 0, "clients": 1, "params": {"ttl_ms": 2000}})");
    write("sentinel.jsonl",
          R"({"t_ns": 40, "op": "sentinel", "event": "+odown", "detail": "master lockbench"})" "\n"
          R"({"t_ns": 70, "op": "sentinel", "event": "+switch-master", "detail": "lockbench a 1 b 2"})" "\n"
          R"({"t_ns": 90, "op": "sentinel", "event": "+switch-master", "detail": "lockbench b 2 a 1"})" "\n");
    h = load_run_history(dir_);
    EXPECT_EQ(h.ttl_ms, 2000);
    EXPECT_EQ(h.failover_ns, 70);
    write("sentinel.jsonl", R"({"t_ns": "late", "op": "sentinel", "event": "+switch-master"})" "\n");
    const std::string err = load_error();
    EXPECT_NE(err.find("sentinel.jsonl:1: t_ns"), std::string::npos) << err;
}

TEST_F(RunFolder, MalformedLineNamesFileAndLine) {
    write("run.json", R"({"final_counter": 0, "clients": 1})");
    write("history/client-0.jsonl",
          R"({"t_ns": 10, "client": 0, "op": "acquire", "type": "invoke"})" "\n"
          "\n"
          R"({"t_ns": 20, "client": 0, "op": "acq)" "\n");
    write("store.jsonl", "");
    const std::string err = load_error();
    EXPECT_NE(err.find("client-0.jsonl:3"), std::string::npos) << err;
}

TEST_F(RunFolder, UnknownValuesAndMissingFieldsNameFileAndLine) {
    write("run.json", R"({"final_counter": 0, "clients": 1})");
    write("history/client-0.jsonl", R"({"t_ns": 10, "client": 0, "op": "grab", "type": "invoke"})" "\n");
    write("store.jsonl", "");
    std::string err = load_error();
    EXPECT_NE(err.find("client-0.jsonl:1"), std::string::npos) << err;
    EXPECT_NE(err.find("grab"), std::string::npos) << err;

    write("history/client-0.jsonl", R"({"t_ns": 10, "client": 0, "op": "read", "type": "invoke", "lease": "a"})" "\n");
    write("store.jsonl",
          R"({"seq": 1, "kind": "enter", "client": 0, "lease": "a"})" "\n"
          R"({"seq": 2, "client": 0, "lease": "a"})" "\n");
    err = load_error();
    EXPECT_NE(err.find("store.jsonl:2"), std::string::npos) << err;
}

// A refused write's line carries the lock server's word on its lease, "held" or "not held";
// the checker counts the first as the holder's write refused. Any other word is refused.
TEST_F(RunFolder, TheLockServersWordOnARefusedWriteIsRead) {
    write("run.json", R"({"final_counter": 0, "clients": 1})");
    const auto with = [&](const std::string& says) {
        write("history/client-0.jsonl",
              R"({"t_ns": 10, "client": 0, "op": "write", "type": "invoke", "lease": "a"})" "\n"
              R"({"t_ns": 20, "client": 0, "op": "write", "type": "fail", "lease": "a", "value": 0, "lock_says": ")" + says + "\"}\n");
    };
    write("store.jsonl", "");
    with("held");
    EXPECT_EQ(load_run_history(dir_).events.back().lock_says_held, std::optional<bool>(true));
    with("not held");
    EXPECT_EQ(load_run_history(dir_).events.back().lock_says_held, std::optional<bool>(false));
    with("maybe");
    const std::string err = load_error();
    EXPECT_NE(err.find("client-0.jsonl:2"), std::string::npos) << err;
    EXPECT_NE(err.find("lock_says"), std::string::npos) << err;
}

TEST_F(RunFolder, MissingOrForeignRunJsonIsRefused) {
    EXPECT_NE(load_error().find("run.json"), std::string::npos);
    write("run.json", R"({"something": "else"})");
    EXPECT_NE(load_error().find("not a lockbench run record"), std::string::npos);
    write("run.json", R"({"final_counter": "many", "clients": 1})");
    const std::string err = load_error();
    EXPECT_NE(err.find("run.json: final_counter"), std::string::npos) << err;
}

// ---- what a genuine run writes, and what it cannot have written --------------------------

// A generated run (3 clients, every section enter/write/exit), written as a run writes it;
// then `edit` changes the lines of one of its files.
class DamagedRun : public RunFolder {
protected:
    void SetUp() override {
        RunFolder::SetUp();
        write_run(histgen::generate_history(3, 200, 42));
        ASSERT_EQ(load_error(), "");
    }

    std::vector<std::string> lines(const fs::path& rel) const {
        std::ifstream in(dir_ / rel);
        std::vector<std::string> out;
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }
    void rewrite(const fs::path& rel, const std::vector<std::string>& ls) const {
        std::string text;
        for (const auto& l : ls) text += l + "\n";
        write(rel, text);
    }
    // The error, which must name `where` (file:line) and say `what`.
    void expect_refused(const std::string& where, const std::string& what) const {
        const std::string err = load_error();
        EXPECT_NE(err.find(where), std::string::npos) << err;
        EXPECT_NE(err.find(what), std::string::npos) << err;
    }
};

TEST_F(DamagedRun, AGapInTheStoresSequenceIsRefusedAtItsLine) {
    auto store = lines("store.jsonl");
    store.erase(store.begin() + 3);  // seq 4 is gone
    rewrite("store.jsonl", store);
    expect_refused("store.jsonl:4:", "seq 5 where 4 was due");
}

TEST_F(DamagedRun, ADuplicateOrOutOfOrderSequenceIsRefused) {
    auto store = lines("store.jsonl");
    store.insert(store.begin() + 4, store[3]);  // seq 4 twice
    rewrite("store.jsonl", store);
    expect_refused("store.jsonl:5:", "seq 4 where 5 was due");

    store = lines("store.jsonl");
    store.erase(store.begin() + 4);
    std::swap(store[0], store[1]);
    rewrite("store.jsonl", store);
    expect_refused("store.jsonl:1:", "seq 2 where 1 was due");
}

TEST_F(DamagedRun, AWriteWithoutAnEnterIsRefused) {
    write("run.json", R"({"final_counter": 1, "clients": 1})");
    write("history/client-0.jsonl",
          R"({"t_ns": 1, "client": 0, "op": "write", "type": "invoke", "lease": "c0.1"})" "\n"
          R"({"t_ns": 2, "client": 0, "op": "write", "type": "ok", "lease": "c0.1"})" "\n");
    fs::remove(dir_ / "history" / "client-1.jsonl");
    fs::remove(dir_ / "history" / "client-2.jsonl");
    write("store.jsonl",
          R"({"seq": 1, "kind": "write", "client": 0, "lease": "c0.1", "read": 0, "prev": 0})" "\n"
          R"({"seq": 2, "kind": "exit", "client": 0, "lease": "c0.1"})" "\n");
    expect_refused("store.jsonl:1:", "a write of lease c0.1 that never entered");
}

TEST_F(DamagedRun, AWriteNotFollowedByItsExitIsRefused) {
    auto store = lines("store.jsonl");
    store.resize(2);  // enter, write: the script that logged the write logs its exit too
    rewrite("store.jsonl", store);
    expect_refused("store.jsonl:2:", "its exit is missing");
}

TEST_F(DamagedRun, AHistoryCutShortIsRefusedWhereTheStoreOutlivesIt) {
    auto history = lines("history/client-0.jsonl");
    history.resize(2);
    rewrite("history/client-0.jsonl", history);
    const std::string err = load_error();
    EXPECT_NE(err.find("store.jsonl:"), std::string::npos) << err;
    EXPECT_NE(err.find("client-0.jsonl never invoked its read"), std::string::npos) << err;
}

TEST_F(DamagedRun, AnEmptiedStoreLogIsRefusedAtTheFirstReadItAnswered) {
    write("store.jsonl", "");
    expect_refused("client-0.jsonl:", "but " + (dir_ / "store.jsonl").string() + " has no enter of it");
}

TEST_F(DamagedRun, AFinalCounterTheWritesDoNotLeaveIsRefused) {
    const RunHistory h = load_run_history(dir_);
    write("run.json", nlohmann::json{{"final_counter", h.final_counter + 1}, {"clients", 3}}.dump());
    expect_refused("run.json: final_counter is " + std::to_string(h.final_counter + 1), "leave the counter at");
}

TEST_F(DamagedRun, AnEnterThatReadsAnotherCounterIsRefused) {
    auto store = lines("store.jsonl");
    nlohmann::json enter = nlohmann::json::parse(store[3]);  // the second section's enter
    ASSERT_EQ(enter.at("kind"), "enter");
    enter["read"] = 7;
    store[3] = enter.dump();
    rewrite("store.jsonl", store);
    expect_refused("store.jsonl:4:", "the enter reads 7, but the writes before it left the counter at 1");
}

TEST_F(DamagedRun, HistoryLinesOutOfTurnAreRefused) {
    auto history = lines("history/client-1.jsonl");
    const auto ok = std::ranges::find_if(history, [](const std::string& l) { return l.find(R"("type":"ok")") != std::string::npos; });
    ASSERT_NE(ok, history.end());
    const auto at = ok - history.begin();
    history.erase(history.begin() + at - 1);  // the invoke it answers
    rewrite("history/client-1.jsonl", history);
    expect_refused("client-1.jsonl:" + std::to_string(at) + ":", "invoked before it");
}

TEST_F(DamagedRun, AnotherClientsLineInAHistoryIsRefused) {
    auto history = lines("history/client-1.jsonl");
    nlohmann::json first = nlohmann::json::parse(history[0]);
    first["client"] = 2;
    history[0] = first.dump();
    rewrite("history/client-1.jsonl", history);
    expect_refused("client-1.jsonl:1:", "client 2 in client 1's history");
}

// A run whose clients never got into a section leaves an empty store log: that is no damage.
TEST_F(RunFolder, AnEmptyStoreLogOfARunWithNoSectionIsGenuine) {
    write("run.json", R"({"final_counter": 0, "clients": 1})");
    write("history/client-0.jsonl",
          R"({"t_ns": 1, "client": 0, "op": "acquire", "type": "invoke"})" "\n"
          R"({"t_ns": 2, "client": 0, "op": "acquire", "type": "fail"})" "\n"
          R"({"t_ns": 3, "client": 0, "op": "acquire", "type": "invoke"})" "\n"
          R"({"t_ns": 4, "client": 0, "op": "acquire", "type": "ok", "lease": "c0.1"})" "\n"
          R"({"t_ns": 5, "client": 0, "op": "read", "type": "invoke", "lease": "c0.1"})" "\n"
          R"({"t_ns": 6, "client": 0, "op": "read", "type": "info", "lease": "c0.1"})" "\n");
    write("store.jsonl", "");
    EXPECT_EQ(load_error(), "");
}

}  // namespace
}  // namespace lockbench
