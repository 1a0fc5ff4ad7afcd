// The input parsers' own tools, shared by their files (scenario.cpp, fault_parse.cpp,
// case_file.cpp, lock_file.cpp) and by nothing else: a JSON object under validation, the
// bounds every field is checked against, the parts a scenario, a case and a lock file share.
#pragma once

#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/fields_read.h"
#include "sim/engine/scenario.h"

namespace lockbench::scenario_parse {

// A string from the file, quoted and cut for a message.
inline std::string quoted_excerpt(const std::string& text) { return excerpt(nlohmann::json(text)); }

// A JSON object under validation: every field read is ticked off, and finish() rejects the
// rest, so a typo is an error rather than a silently ignored setting. Numbers are read only
// through integer() and number(), which check the value as written against its range.
// Every key looked up is also noted (fields_read.h), so that the manual's tables can be held
// to what the parsers read; an object keyed by names rather than fields (an "expect" keyed
// by metrics, a lock's "expected" by cases, a "when" by facts) says so, and is not noted:
// its caller checks each name against its own table.
class Fields {
public:
    enum class Keys { fields, names };
    Fields(const nlohmann::json& j, std::string path, const std::string& file, Keys keys = Keys::fields)
        : j_(j), path_(std::move(path)), file_(file), keys_(keys) {
        if (!j_.is_object()) fail(path_, "expected an object, got " + excerpt(j_));
    }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw ScenarioError(file_ + ": " + (field.empty() ? "(top level)" : field) + ": " + what);
    }
    std::string at(const std::string& key) const {
        return path_.empty() ? excerpt_text(key) : path_ + "." + excerpt_text(key);
    }

    // The field, or nullptr if it is left out. A field given null is refused, not taken as left
    // out: "service": null must not quietly mean Redis. `expected` is what the caller reads it as.
    const nlohmann::json* get(const std::string& key, const std::string& expected = "a value") {
        seen_.insert(key);
        if (keys_ == Keys::fields) note_field_read(path_, key);
        auto it = j_.find(key);
        if (it != j_.end() && it->is_null())
            fail(at(key), "expected " + expected + ", got null; leave the field out for its default");
        return it == j_.end() ? nullptr : &*it;
    }
    template <typename T, typename Check>
    T value(const std::string& key, T fallback, Check ok, const char* expected) {
        const nlohmann::json* v = get(key, expected);
        if (!v) return fallback;
        if (!ok(*v)) fail(at(key), std::string("expected ") + expected + ", got " + excerpt(*v));
        return v->get<T>();
    }
    // An integer within [min, max]; `why` says where a bound comes from (the run's length).
    long long integer(const std::string& key, long long fallback, long long min, long long max,
                      const std::string& why = "") {
        const std::string expected = range_text("an integer", static_cast<double>(min), static_cast<double>(max)) +
                                     (why.empty() ? "" : " (" + why + ")");
        const nlohmann::json* v = get(key, expected);
        if (!v) return fallback;
        if (const auto x = integer_within(*v, min, max)) return *x;
        fail(at(key), "expected " + expected + ", got " + excerpt(*v));
    }
    double number(const std::string& key, double fallback, double min, double max) {
        const nlohmann::json* v = get(key, range_text("a number", min, max));
        if (!v) return fallback;
        if (const auto x = number_within(*v, min, max)) return *x;
        fail(at(key), "expected " + range_text("a number", min, max) + ", got " + excerpt(*v));
    }
    std::string string(const std::string& key, std::string fallback) {
        return value<std::string>(key, fallback, [](const auto& x) { return x.is_string(); }, "a string");
    }
    std::string required_string(const std::string& key) {
        if (!get(key, "a string")) fail(at(key), "required, expected a string");
        return string(key, "");
    }
    void finish() const {
        for (const auto& [key, _] : j_.items())
            if (!seen_.contains(key)) fail(at(key), "unknown field");
    }

private:
    const nlohmann::json& j_;
    std::string path_;
    const std::string& file_;
    Keys keys_;
    std::set<std::string> seen_;
};

constexpr long long kMaxLong = std::numeric_limits<long long>::max();
constexpr long long kMaxNodes = 16;                       // lock nodes in a run
constexpr long long kMaxOccurrence = 1'000'000'000;       // reaches of a point: an int with room
constexpr long long kMaxJumpMs = 365LL * 24 * 3'600'000;  // a clock step: a year either way
constexpr double kMaxRate = 1000;                         // a skewed clock's seconds per second

// "workload.duration_ms is 3000": why a time or a duration has its bound.
inline std::string run_ends(const WorkloadSpec& w) { return "workload.duration_ms is " + std::to_string(w.duration_ms); }

// Every value a distribution names (the fixed value, both bounds, the mean) is a finite
// number of milliseconds within the run, so that no draw is infinite or outlasts it absurdly.
// `min_ms` above 0 (`why` says why) is the least any of them may be: a uniform's lower bound is
// the shortest it draws, and a mean below it would draw most values shorter (each is then
// taken as min_ms, as FaultSchedule::draw_ns does).
inline Distribution parse_distribution(const nlohmann::json& j, const std::string& path, const std::string& file,
                                long long run_ms, long long min_ms = 0, const std::string& why = "") {
    const std::string expected = "{\"fixed\": MS}, {\"uniform\": [MIN_MS, MAX_MS]} or {\"exponential\": MEAN_MS}, "
                                 "each from " + std::to_string(min_ms) + " to " + std::to_string(run_ms) +
                                 " (workload.duration_ms" + (why.empty() ? "" : "; " + why) + ")";
    const auto bad = [&] { throw ScenarioError(file + ": " + path + ": expected " + expected + ", got " + excerpt(j)); };
    if (!j.is_object() || j.size() != 1) bad();
    const auto& [kind, v] = *j.items().begin();
    const auto ms = [&](const nlohmann::json& x) {
        return number_within(x, static_cast<double>(min_ms), static_cast<double>(run_ms));
    };
    if (kind == "fixed" && ms(v)) return {Distribution::Kind::fixed, *ms(v), 0};
    if (kind == "exponential" && ms(v)) return {Distribution::Kind::exponential, *ms(v), 0};
    if (kind == "uniform" && v.is_array() && v.size() == 2 && ms(v[0]) && ms(v[1]) && *ms(v[0]) <= *ms(v[1]))
        return {Distribution::Kind::uniform, *ms(v[0]), *ms(v[1])};
    bad();
    return {};  // not reached: bad() throws
}

inline Distribution distribution(Fields& f, const std::string& key, Distribution fallback, const std::string& file,
                          long long run_ms) {
    const nlohmann::json* v = f.get(key, "a distribution");
    return v ? parse_distribution(*v, f.at(key), file, run_ms) : fallback;
}

// An external run's command elements and params, checked against what execve passes to its
// adapter (external_parse.cpp).
void check_adapter_launch(Fields& f, const RunSpec& r);
void check_adapter_launch(Fields& f, const std::vector<std::string>& command, const nlohmann::json& params);

// A fault's node: an index, or "leader" / "follower" (fault_parse.cpp).
int parse_fault_node(Fields& f);
// The "faults" array of a scenario or a run (fault_parse.cpp).
std::vector<FaultSpec> parse_faults(const nlohmann::json& j, const std::string& path, const std::string& file,
                                    const WorkloadSpec& w);

// The parts of scenario.cpp a case file (case_file.cpp) reads the same way.
// `path` names it in messages and in the fields read: a run's own is "runs[N].workload".
WorkloadSpec parse_workload(const nlohmann::json& j, const std::string& file, const std::string& path = "workload");
// "client": {"command_timeout_ms", "connect_timeout_ms", "store_timeout_ms"} over `t`.
ClientTimeouts parse_client(const nlohmann::json& j, const std::string& path, const std::string& file, ClientTimeouts t);
RenewSpec parse_renew(const nlohmann::json& j, const std::string& path, const std::string& file);
// A name that becomes a folder name: letters, digits and . _ + = - (not starting with . or -).
void check_name(Fields& f, const std::string& field, const std::string& name);
std::optional<std::string> parse_failure_class(Fields& f);
std::vector<std::string> parse_explore_fixed(const nlohmann::json& explore, const std::string& file);
// One entry of an "expect" object: "metric": "op value", or "verdict": "<word>".
Expectation parse_expectation(const std::string& metric, const nlohmann::json& v, const std::string& path,
                              const std::string& file);

}  // namespace lockbench::scenario_parse
