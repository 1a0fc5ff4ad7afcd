// The library's validity against the key's real TTL (analysis/validity.h), on hand-written
// acquire lines as a probing run writes them: the majority's TTL, the figures, and that only a
// run that probed has them in its summary. No Redis, no clock.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/metrics.h"
#include "analysis/run_summary.h"
#include "sim/engine/scenario.h"

namespace lockbench {
namespace {

using Json = nlohmann::json;
using Ttls = std::vector<std::optional<long long>>;

// One acquire ok line, as the worker writes it for a run with probe_key_ttl.
void acquire_ok(RunHistory& h, long long t_ms, const std::string& lease, double validity_ms, const Ttls& ttl_ms) {
    Json line = {{"t_ns", t_ms * 1000000}, {"client", 0}, {"op", "acquire"}, {"type", "ok"}, {"lease", lease},
                 {"validity_ms", validity_ms}, {"key_ttl_ms", Json::array()}};
    for (const auto& t : ttl_ms) line["key_ttl_ms"].push_back(t ? Json(*t) : Json(nullptr));
    parse_client_event(line, h);
}

TEST(Validity, TheMajoritysTtlIsTheQuorumthLongestLiveKey) {
    EXPECT_EQ(majority_ttl_ms({499, 498, std::nullopt, -2, 497}), 497);  // 3 of 5 hold, the 3rd longest
    EXPECT_EQ(majority_ttl_ms({499, -2, -2, 498, std::nullopt}), 0);     // 2 of 5: no majority holds it
    EXPECT_EQ(majority_ttl_ms({300}), 300);
    EXPECT_EQ(majority_ttl_ms({-2}), 0);
    EXPECT_EQ(majority_ttl_ms({10, 20, 30}), 20);
}

TEST(Validity, ALockHandedOutSpentWhileItStandsIsCountedAndItsUnderstatementMeasured) {
    RunHistory h;
    acquire_ok(h, 1, "c0.1", 490, {495, 495, 494, 494, 493});   // about right: 4 ms understated
    acquire_ok(h, 2, "c1.1", -420, {499, 499, 498, 498, 498});  // spent, yet standing: 918 ms
    acquire_ok(h, 3, "c0.2", 100, {-2, -2, -2, 30, 30});        // gone on a majority: 100 ms claimed beyond it
    const CheckResult r = check(h);
    ASSERT_TRUE(r.validity.has_value());
    EXPECT_EQ(r.validity->probes, 3);
    EXPECT_EQ(r.validity->spent_live, 1);
    EXPECT_EQ(r.validity->gone, 1);
    EXPECT_DOUBLE_EQ(r.validity->understated_ms, 918);
    EXPECT_DOUBLE_EQ(r.validity->overstated_ms, 100);
}

TEST(Validity, AProbeNobodyAnsweredOrAValidityNobodyGaveIsNoProbe) {
    RunHistory h;
    acquire_ok(h, 1, "c0.1", 490, {std::nullopt, std::nullopt});
    parse_client_event({{"t_ns", 2}, {"client", 0}, {"op", "acquire"}, {"type", "ok"}, {"lease", "c0.2"},
                        {"key_ttl_ms", {300}}},
                       h);
    EXPECT_FALSE(check(h).validity.has_value());
}

TEST(Validity, OnlyARunThatProbedHasTheFiguresInItsSummary) {
    RunHistory probed;
    acquire_ok(probed, 1, "c0.1", -10, {400});
    const Json with = to_json(check(probed), probed);
    ASSERT_TRUE(with.contains("validity"));
    EXPECT_EQ(with.at("validity").at("validity_spent_live"), 1);
    EXPECT_EQ(with.at("validity").at("validity_probes"), 1);
    EXPECT_EQ(with.at("validity").at("validity_gone"), 0);
    EXPECT_DOUBLE_EQ(with.at("validity").at("validity_understated_ms").get<double>(), 410);

    RunHistory plain;
    parse_client_event({{"t_ns", 1}, {"client", 0}, {"op", "acquire"}, {"type", "ok"}, {"lease", "c0.1"},
                        {"validity_ms", 290.5}},
                       plain);
    const Json without = to_json(check(plain), plain);
    EXPECT_FALSE(without.contains("validity"));  // every other summary stays as it was
    // A summary without the group reads back; one with it keeps its figures.
    Json run = {{"name", "r"}, {"algorithm", "external"}, {"params", Json::object()}, {"nodes", 1}, {"clients", 1},
                {"seed", 1}, {"run_dir", "x"}, {"expectations", Json::array()}, {"expectations_held", true}};
    Json a = run, b = run;
    a.update(without);
    b.update(with);
    EXPECT_EQ(run_summary_from_json(a).metric("validity_probes"), 0);
    EXPECT_FALSE(run_summary_from_json(a).figures.metrics.contains("validity_probes"));
    EXPECT_EQ(run_summary_from_json(b).metric("validity_spent_live"), 1);
}

TEST(Validity, AnExpectationOnTheFiguresNeedsARunThatProbes) {
    const auto scenario = [](const std::string& params) {
        return Json::parse(R"({"name": "v", "runs": [{"algorithm": "external", "name": "lib", "command": ["x"],
                              "params": )" + params + R"(, "expect": {"validity_spent_live": "== 0"}}]})");
    };
    EXPECT_NO_THROW(parse_scenario(scenario(R"({"probe_key_ttl": true})"), "v.json"));
    try {
        parse_scenario(scenario("{}"), "v.json");
        FAIL() << "an expectation on a figure the run cannot have was accepted";
    } catch (const ScenarioError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "v.json: runs[0].expect.validity_spent_live: needs an external run with \"params\": {\"probe_key_ttl\": true}");
    }
    EXPECT_THROW(parse_scenario(scenario(R"({"probe_key_ttl": 1})"), "v.json"), ScenarioError);  // a boolean
}

}  // namespace
}  // namespace lockbench
