// Algorithm parameters: declared once per algorithm (name, type, default, doc), validated
// strictly against a scenario, and recorded in full in every result.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

// The longest duration a run, a timeout or a parameter in milliseconds may have: one hour.
// Anything longer is a typo, and far from where int64 nanoseconds would overflow.
constexpr long long kMaxDurationMs = 3'600'000;

// Every integer and number of a scenario is read through these two. nlohmann's get<long long>()
// wraps 18446744073709551615 to -1 and get<int>() truncates, and a number may be inf (1e400):
// here a value is either within [min, max] as written, or nothing.
std::optional<long long> integer_within(const nlohmann::json& v, long long min, long long max);
std::optional<double> number_within(const nlohmann::json& v, double min, double max);  // finite
// "an integer from 1 to 64", "an integer >= 0", "a number from 0 to 1".
std::string range_text(const char* kind, double min, double max);
// A value for a one-line message: its JSON text cut to 60 characters, so that a 50 MB string
// or a deep array is never printed whole, and made printable (printable_text), so that nothing
// in it reorders, hides or rewrites what a terminal shows.
std::string excerpt(const nlohmann::json& v);
std::string excerpt_text(const std::string& text, size_t max_chars = 60);  // the same for plain text
// "a, b or c": items as a message lists alternatives.
std::string or_list(const std::vector<std::string>& items);
// `text` with every control character (C0, DEL, C1), bidirectional control (U+202E and its
// kin), line or paragraph separator and zero-width character written as \uXXXX, and every
// byte that is not UTF-8 as \xHH; all else as it is.
std::string printable_text(std::string_view text);
// A message as one line for a person: printable_text, and past `max_chars` its head and its
// tail with the count of what was cut between them (a 100 KB path is never printed whole,
// and the end of the line, what went wrong, still shows).
std::string message_line(std::string_view text, size_t max_chars = 900);
bool has_unprintable(std::string_view text);  // printable_text would change it

struct ParamSpec {
    enum class Type { boolean, integer, number, choice };
    std::string name;
    Type type = Type::integer;
    nlohmann::json default_value;
    std::string doc;
    std::vector<std::string> choices;   // for Type::choice
    double min = 0;                     // for integer / number
    double max = kMaxDurationMs;        // for integer / number: most are durations in ms
};

// The parameters of one run, every declared one present (defaults filled in).
class Params {
public:
    Params() = default;
    explicit Params(nlohmann::json values) : values_(std::move(values)) {}
    bool flag(const std::string& name) const { return values_.at(name).get<bool>(); }
    long long integer(const std::string& name) const { return values_.at(name).get<long long>(); }
    double number(const std::string& name) const { return values_.at(name).get<double>(); }
    std::string choice(const std::string& name) const { return values_.at(name).get<std::string>(); }
    const nlohmann::json& json() const { return values_; }

private:
    nlohmann::json values_ = nlohmann::json::object();
};

// Checks `given` against `specs` and fills in defaults. On a problem, returns false and sets
// `error` to "<field>: <what was expected>", field relative to the params object. With
// `keep_unknown` (an external library's run) a parameter `specs` does not name is kept as
// given, for the adapter to read: lockbench checks only the ones it uses itself.
bool resolve_params(const std::vector<ParamSpec>& specs, const nlohmann::json& given,
                    Params& out, std::string& error, bool keep_unknown = false);

// "setnx", "token-lua+fence", "setnx+expiry=none": the algorithm plus every parameter that
// differs from its default, in declaration order.
std::string default_run_name(const std::string& algorithm, const std::vector<ParamSpec>& specs,
                             const Params& params);

}  // namespace lockbench
