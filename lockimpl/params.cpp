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

// ---- text a terminal shows as it is ------------------------------------------------------------

// One UTF-8 sequence: its code point, or -1 for a byte that starts no valid sequence (a stray
// continuation byte, an overlong form, a surrogate, beyond U+10FFFF), which is then one byte long.
struct CodePoint {
    long value;
    size_t length;
};

CodePoint next_code_point(std::string_view s, size_t at) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char lead = byte(at);
    if (lead < 0x80) return {lead, 1};
    const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0 || at + length > s.size()) return {-1, 1};
    long value = lead & (0x3F >> (length - 1));
    for (size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xC0) != 0x80) return {-1, 1};
        value = (value << 6) | (byte(at + i) & 0x3F);
    }
    static constexpr long smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < smallest[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return {-1, 1};
    return {value, length};
}

// What a terminal would not show as a character of its own: C0 and C1 controls and DEL (an
// escape sequence, a carriage return that overwrites the line), the bidirectional controls
// (U+202E shows what follows backwards), line and paragraph separators, and the invisible
// zero-width characters and byte order mark (two names that print the same).
bool unprintable(long c) {
    return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || (c >= 0x200B && c <= 0x200F) ||
           (c >= 0x2028 && c <= 0x202E) || (c >= 0x2060 && c <= 0x2069) || c == 0xFEFF;
}

std::string hex_escape(const char* prefix, unsigned value, int digits) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = prefix;
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += hex[(value >> shift) & 0xF];
    return out;
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

std::string or_list(const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return out;
}

std::string excerpt_text(const std::string& text, size_t max_chars) {
    if (text.size() <= max_chars) return printable_text(text);
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    // Cut first, then escape: an escape is never cut in half, and the count is of what was given.
    return printable_text(std::string_view(text).substr(0, cut)) + "... (" + std::to_string(text.size()) + " characters)";
}

std::string message_line(std::string_view text, size_t max_chars) {
    const std::string line = printable_text(text);
    if (line.size() <= max_chars) return line;
    const auto boundary = [&](size_t at) {  // not inside a UTF-8 character
        while (at > 0 && at < line.size() && (static_cast<unsigned char>(line[at]) & 0xC0) == 0x80) --at;
        return at;
    };
    const size_t head = boundary(max_chars * 2 / 3);
    const size_t tail = boundary(line.size() - max_chars / 4);
    return line.substr(0, head) + " ... (" + std::to_string(tail - head) + " characters cut) ... " + line.substr(tail);
}

bool has_unprintable(std::string_view text) {
    for (size_t at = 0; at < text.size();) {
        const CodePoint c = next_code_point(text, at);
        if (c.value < 0 || unprintable(c.value)) return true;
        at += c.length;
    }
    return false;
}

std::string printable_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t at = 0; at < text.size();) {
        const CodePoint c = next_code_point(text, at);
        if (c.value < 0) out += hex_escape("\\x", static_cast<unsigned char>(text[at]), 2);
        else if (unprintable(c.value)) out += hex_escape("\\u", static_cast<unsigned>(c.value), 4);
        else out.append(text.substr(at, c.length));
        at += c.length;
    }
    return out;
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
            // null is no way to ask for the default: leaving the parameter out is.
            error = "." + name + ": expected " + expected(*spec) + ", got " + excerpt(value) +
                    (value.is_null() ? "; leave the field out for its default" : "");
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
