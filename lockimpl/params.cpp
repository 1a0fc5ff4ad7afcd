#include "lockimpl/params.h"

#include <algorithm>
#include <cmath>

namespace lockbench {
namespace {

const char* type_word(ParamSpec::Type t) {
    switch (t) {
        case ParamSpec::Type::boolean: return "true or false";
        case ParamSpec::Type::integer: return "an integer";
        case ParamSpec::Type::number: return "a number";
        case ParamSpec::Type::choice: return "one of";
    }
    return "?";
}

std::string expected(const ParamSpec& s) {
    std::string e = type_word(s.type);
    if (s.type == ParamSpec::Type::choice) {
        for (size_t i = 0; i < s.choices.size(); ++i)
            e += (i ? ", \"" : " \"") + s.choices[i] + "\"";
    } else if (s.type != ParamSpec::Type::boolean) {
        e += " >= " + nlohmann::json(s.min).dump();
    }
    return e;
}

bool fits(const ParamSpec& s, const nlohmann::json& v) {
    switch (s.type) {
        case ParamSpec::Type::boolean: return v.is_boolean();
        case ParamSpec::Type::integer: return v.is_number_integer() && v.get<double>() >= s.min;
        case ParamSpec::Type::number: return v.is_number() && v.get<double>() >= s.min;
        case ParamSpec::Type::choice:
            return v.is_string() && std::ranges::count(s.choices, v.get<std::string>()) > 0;
    }
    return false;
}

}  // namespace

bool resolve_params(const std::vector<ParamSpec>& specs, const nlohmann::json& given,
                    Params& out, std::string& error) {
    if (!given.is_object()) {
        error = ": expected an object of parameters";
        return false;
    }
    for (const auto& [name, value] : given.items()) {
        auto spec = std::ranges::find(specs, name, &ParamSpec::name);
        if (spec == specs.end()) {
            std::string known;
            for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
            error = "." + name + ": unknown parameter (known: " + (known.empty() ? "none" : known) + ")";
            return false;
        }
        if (!fits(*spec, value)) {
            error = "." + name + ": expected " + expected(*spec) + ", got " + value.dump();
            return false;
        }
    }
    nlohmann::json values = nlohmann::json::object();
    for (const auto& s : specs) {
        values[s.name] = given.contains(s.name) ? given.at(s.name) : s.default_value;
        if (s.type == ParamSpec::Type::number) values[s.name] = values[s.name].get<double>();
    }
    out = Params(std::move(values));
    return true;
}

std::string default_run_name(const std::string& algorithm, const std::vector<ParamSpec>& specs,
                             const Params& params) {
    std::string name = algorithm;
    for (const auto& s : specs) {
        const auto& v = params.json().at(s.name);
        bool same = s.type == ParamSpec::Type::number
                        ? std::abs(v.get<double>() - s.default_value.get<double>()) < 1e-12
                        : v == s.default_value;
        if (same) continue;
        if (s.type == ParamSpec::Type::boolean)
            name += v.get<bool>() ? "+" + s.name : "+no-" + s.name;
        else
            name += "+" + s.name + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    return name;
}

}  // namespace lockbench
