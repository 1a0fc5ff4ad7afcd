// Discovered classes made cases (sim/harness/promote.h), in simulated time:
//
//   roles ...... a shrunk schedule's client and node numbers become roles (the story's client
//                is client 0; a cut by its quorum role; a struck node is one the cut left or
//                took), and a case's roles become the indices of each lock it runs against,
//                or say why they cannot (a minority of one node)
//   classes .... a class falls in the catalog's class whose cases tell the same story (points
//                and sizes aside), or the class of the cases that open with its fault, or "new"
//   promotion .. a baseline search's classes promoted: every case parses, names no lock,
//                applies to libraries the simulator cannot run, and the forced form of a
//                class still violates in the simulator on the lock it was found on
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/engine/case_file.h"
#include "sim/harness/compose.h"
#include "sim/harness/explore.h"
#include "sim/harness/promote.h"
#include "sim/harness/results_folder.h"
#include "process/process.h"
#include "tests/catalog_util.h"

namespace lockbench::sim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kSource = LOCKBENCH_SOURCE_DIR;

std::vector<CaseFile> catalog() {
    std::vector<CaseFile> out;
    for (const auto& e : fs::directory_iterator(kSource / "scenarios"))
        if (e.path().extension() == ".json") {
            const Json j = read_input_json(e.path());
            if (is_case_file(j)) out.push_back(parse_case_file(j, e.path().string()));
        }
    return out;
}

const LockFile& lock_named(const std::vector<LockFile>& locks, const std::string& name) {
    for (const LockFile& l : locks)
        if (l.name == name) return l;
    throw std::runtime_error("no lock " + name);
}

TEST(Roles, AShrunkScheduleIsAimedAtRoles) {
    // Redlock's story: client 4 cut from nodes 1 and 3 of 5, then node 2's clock steps.
    const Json faults = Json::parse(R"([
        {"fault": "link", "mode": "blackhole", "client": 4, "point": "before_acquire", "occurrence": 1, "nodes": [1, 3]},
        {"fault": "clock", "client": 4, "point": "after_acquire", "occurrence": 1, "node": 2, "jump_ms": 900},
        {"fault": "crash", "client": 2, "point": "after_acquire", "occurrence": 2, "node": 3}])");
    bool story = false;
    const Json roles = faults_by_role(faults, 5, story);
    EXPECT_TRUE(story);
    EXPECT_EQ(roles[0]["client"], 0);
    EXPECT_EQ(roles[0]["nodes"], "minority");
    EXPECT_EQ(roles[1]["client"], 0);
    EXPECT_EQ(roles[1]["node"], "locked");  // not cut from: a node it locked
    EXPECT_EQ(roles[2]["client"], 1);
    EXPECT_EQ(roles[2]["node"], 0);         // one it was cut from
    // The roles as indices, per lock: five nodes, three, one.
    EXPECT_EQ(with_node_roles(roles, 5)[0]["nodes"], Json::parse("[0, 1]"));
    EXPECT_EQ(with_node_roles(roles, 5)[1]["node"], 4);
    EXPECT_EQ(with_node_roles(roles, 3)[0]["nodes"], Json::parse("[0]"));
    EXPECT_EQ(with_node_roles(roles, 3)[1]["node"], 2);
    EXPECT_FALSE(node_roles_why_not(roles, 3));
    ASSERT_TRUE(node_roles_why_not(roles, 1));
    EXPECT_NE(node_roles_why_not(roles, 1)->find("minority"), std::string::npos);
    // One node: the whole of it.
    const Json one = faults_by_role(Json::parse(R"([{"fault": "link", "mode": "hold", "point": "before_write", "nodes": [0]}])"), 1, story);
    EXPECT_FALSE(story);  // whoever reaches the point: no client named
    EXPECT_EQ(one[0]["nodes"], "all");
}

TEST(Roles, ACaseWithRolesAppliesToLocksOfAnySizeAndSaysWhyNot) {
    const std::vector<LockFile> locks = load_lock_folder(kSource / "locks");
    const CaseFile c = parse_case_file(Json::parse(R"({"name": "roles", "ttl_ms": 300,
        "workload": {"clients": 3, "duration_ms": 1000},
        "faults": [{"fault": "link", "mode": "blackhole", "client": 0, "point": "before_acquire", "nodes": "minority",
                    "duration_ms": 200},
                   {"fault": "clock", "client": 0, "point": "after_acquire", "node": "locked", "jump_ms": 900}]})"), "roles.json");
    const Composed five = compose(c, {lock_named(locks, "redlock")}, LockChoice::asked, Expectations::record_only);
    ASSERT_FALSE(five.empty());
    const Json& run = five.scenario.source.at("runs").at(0);
    EXPECT_EQ(run.at("faults").at(0).at("nodes"), Json::parse("[0, 1]"));
    EXPECT_EQ(run.at("faults").at(1).at("node"), 4);
    const Composed one = compose(c, {lock_named(locks, "token-lua")}, LockChoice::asked, Expectations::record_only);
    ASSERT_TRUE(one.empty());
    EXPECT_NE(one.not_applicable.at(0).why.find("minority"), std::string::npos) << one.not_applicable.at(0).why;
    EXPECT_THROW(parse_case_file(Json::parse(R"({"name": "x", "ttl_ms": 300, "faults": [{"fault": "link", "mode": "hold",
        "point": "before_write", "nodes": "some"}]})"), "x.json"), ScenarioError);
}

TEST(Classes, AClassFallsInTheCatalogsClassOfTheSameStory) {
    const CatalogClasses cat = catalog_classes(catalog(), load_lock_folder(kSource / "locks"));
    EXPECT_EQ(class_signature("link cut from a client to 2 of 5 lock nodes at before_acquire + node clock step forward, more than "
                              "the TTL at after_acquire, same client, on a node it was not cut from"),
              "link cut from a client to a minority of the lock nodes + node clock step forward, same client, on a node it was not "
              "cut from");
    EXPECT_EQ(catalog_class_of("pause at after_acquire, longer than the TTL", cat), "gc-pause");
    EXPECT_EQ(catalog_class_of("link held (replies) from a client to 1 of 1 lock nodes at before_acquire", cat), "held-replies");
    EXPECT_EQ(catalog_class_of("link held (requests) from a client to the store at before_write", cat), "delayed-write");
    EXPECT_EQ(catalog_class_of("node clock step forward, more than the TTL at after_acquire", cat), "node-clock-jump");
    EXPECT_EQ(catalog_class_of("node crash at after_acquire, restarted empty", cat), "restart-empty");
    // A story no case tells, opening with a fault some case opens with: that case's class.
    EXPECT_EQ(catalog_class_of("client clock step back, more than the TTL at after_acquire", cat), "client-clock-skew");
    EXPECT_EQ(catalog_class_of("client killed at before_release", cat), catalog_class_of("client killed", cat));
    // A gate where only a holder passes holds it until its lease lets another in: a pause.
    EXPECT_EQ(catalog_class_of("gate of 2 clients at before_write", cat), "gc-pause");
    EXPECT_EQ(catalog_class_of("link held (replies) from a client to the store at after_acquire + node clock step forward, "
                               "less than the TTL at a time", cat), "new");
    EXPECT_EQ(catalog_class_of("gate of 2 clients at before_acquire", cat), "new");
    // The store's link alone, other than a held write: the holder's section stretched past its lease.
    EXPECT_EQ(catalog_class_of("link delayed, more than the TTL from a client to the store at after_acquire", cat), "slow-holder");
    EXPECT_EQ(catalog_class_of("link cut from a client to the store at before_write", cat), "slow-holder");
    // Redlock's two-fault story is the catalog's redlock-clock-jump.
    const auto by = covered_by("link cut from a client to 2 of 5 lock nodes at before_acquire + node clock step forward, more "
                               "than the TTL at after_acquire, same client, on a node it was not cut from", cat);
    EXPECT_NE(std::ranges::find(by, "redlock-clock-jump"), by.end());
    EXPECT_TRUE(covered_by("link held (replies) from a client to the store at after_acquire + node clock step forward, less "
                           "than the TTL at a time", cat).empty());
}

TEST(Promotion, ABaselineSearchsClassesBecomeCasesAboutNoLock) {
    const fs::path tmp = make_run_temp_dir();
    ExploreOptions o;
    o.scenario_file = kSource / "scenarios" / "baseline.json";
    o.source = test::catalog_scenario("baseline");
    o.algorithms = {"token-lua", "getset"};
    o.schedules = 150;
    o.budget = 2;
    o.out = tmp / "explore";
    o.progress = false;
    const Json e = explore(o);
    ASSERT_FALSE(e.at("classes").empty());
    const std::vector<LockFile> locks = load_lock_folder(kSource / "locks");
    const Json p = promote_explore(o.out, tmp / "promoted", catalog_classes(catalog(), locks));
    ASSERT_FALSE(p.at("cases").empty());
    int forced = 0;
    for (const Json& entry : p.at("cases")) {
        const Json j = read_input_json(tmp / "promoted" / entry.at("case").get<std::string>());
        const CaseFile c = parse_case_file(j, entry.at("case").get<std::string>());
        EXPECT_TRUE(c.about.empty());
        EXPECT_EQ(c.discovered.at("class"), entry.at("class"));
        EXPECT_FALSE(entry.at("failure_class").get<std::string>().empty());
        if (entry.at("forced").get<std::string>().starts_with("start_after")) {
            ++forced;
            EXPECT_EQ(entry.at("simulated").get<std::string>().substr(0, 6), "3 of 3") << entry;
            EXPECT_EQ(j.at("workload").at("start_after").at("client"), 0) << j;
        }
        // Its class, on the lock it was found on, forced or not.
        if (entry.at("class").get<std::string>().starts_with("pause at before_write")) {
            const Composed tooz = compose(c, {lock_named(locks, "tooz")}, LockChoice::asked, Expectations::record_only);
            EXPECT_FALSE(tooz.empty()) << "a pause of the holder applies to a library the simulator cannot run";
        }
    }
    EXPECT_GE(forced, 1) << p.dump(2);
    // A second promotion into the same folder replaces it; a folder of anything else is refused.
    EXPECT_NO_THROW(promote_explore(o.out, tmp / "promoted", catalog_classes(catalog(), locks)));
    fs::create_directories(tmp / "other");
    std::ofstream(tmp / "other" / "mine.json") << "{}";
    EXPECT_THROW(promote_explore(o.out, tmp / "other", catalog_classes(catalog(), locks)), std::runtime_error);
    fs::remove_all(tmp);
}

}  // namespace
}  // namespace lockbench::sim
