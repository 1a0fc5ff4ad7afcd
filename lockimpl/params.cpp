#include "lockimpl/params.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
    if (s.type == ParamSpec::Type::integer) return range_text("an integer", s.min, s.max);
    if (s.type == ParamSpec::Type::number) return range_text("a number", s.min, s.max);
    std::string e = type_word(s.type);
    for (size_t i = 0; i < s.choices.size(); ++i) e += (i ? ", \"" : " \"") + s.choices[i] + "\"";
    return e;
}

bool fits(const ParamSpec& s, const nlohmann::json& v) {
    switch (s.type) {
        case ParamSpec::Type::boolean: return v.is_boolean();
        case ParamSpec::Type::integer:
            return integer_within(v, static_cast<long long>(s.min), static_cast<long long>(s.max)).has_value();
        case ParamSpec::Type::number: return number_within(v, s.min, s.max).has_value();
        case ParamSpec::Type::choice:
            return v.is_string() && std::ranges::count(s.choices, v.get<std::string>()) > 0;
    }
    return false;
}

}  // namespace

std::optional<long long> integer_within(const nlohmann::json& v, long long min, long long max) {
    // A non-negative integer is stored unsigned: compare it as such before any conversion.
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (max < 0 || u > static_cast<std::uint64_t>(max)) return std::nullopt;
        const auto x = static_cast<long long>(u);
        return x >= min ? std::optional<long long>(x) : std::nullopt;
    }
    if (!v.is_number_integer()) return std::nullopt;
    const auto x = v.get<std::int64_t>();
    return x >= min && x <= max ? std::optional<long long>(x) : std::nullopt;
}

std::optional<double> number_within(const nlohmann::json& v, double min, double max) {
    if (!v.is_number()) return std::nullopt;
    const double x = v.get<double>();
    return std::isfinite(x) && x >= min && x <= max ? std::optional<double>(x) : std::nullopt;
}

std::string range_text(const char* kind, double min, double max) {
    const auto text = [](double x) {
        return x == std::floor(x) ? std::to_string(static_cast<long long>(x)) : nlohmann::json(x).dump();
    };
    if (max >= static_cast<double>(std::numeric_limits<long long>::max())) return std::string(kind) + " >= " + text(min);
    return std::string(kind) + " from " + text(min) + " to " + text(max);
}

std::string excerpt(const nlohmann::json& v) {
    return excerpt_text(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string excerpt_text(const std::string& text, size_t max_chars) {
    if (text.size() <= max_chars) return text;
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " characters)";
}

bool resolve_params(const std::vector<ParamSpec>& specs, const nlohmann::json& given,
                    Params& out, std::string& error, bool keep_unknown) {
    if (!given.is_object()) {
        error = ": expected an object of parameters";
        return false;
    }
    for (const auto& [name, value] : given.items()) {
        auto spec = std::ranges::find(specs, name, &ParamSpec::name);
        if (spec == specs.end() && keep_unknown) continue;
        if (spec == specs.end()) {
            std::string known;
            for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
            error = "." + excerpt_text(name) + ": unknown parameter (known: " + (known.empty() ? "none" : known) + ")";
            return false;
        }
        if (!fits(*spec, value)) {
            error = "." + name + ": expected " + expected(*spec) + ", got " + excerpt(value);
            return false;
        }
    }
    nlohmann::json values = keep_unknown ? given : nlohmann::json::object();
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
