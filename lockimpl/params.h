// Algorithm parameters: declared once per algorithm (name, type, default, doc), validated
// strictly against a scenario, and recorded in full in every result.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

struct ParamSpec {
    enum class Type { boolean, integer, number, choice };
    std::string name;
    Type type = Type::integer;
    nlohmann::json default_value;
    std::string doc;
    std::vector<std::string> choices;   // for Type::choice
    double min = 0;                     // for integer / number
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
// `error` to "<field>: <what was expected>", field relative to the params object.
bool resolve_params(const std::vector<ParamSpec>& specs, const nlohmann::json& given,
                    Params& out, std::string& error);

// "setnx", "token-lua+fence", "setnx+expiry=none": the algorithm plus every parameter that
// differs from its default, in declaration order.
std::string default_run_name(const std::string& algorithm, const std::vector<ParamSpec>& specs,
                             const Params& params);

}  // namespace lockbench
