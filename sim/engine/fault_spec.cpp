#include "sim/engine/fault_spec.h"

#include "sim/engine/fault_kind.h"

namespace lockbench {

const char* fault_kind_name(FaultSpec::Kind k) { return fault_kind(k).name; }

std::optional<Point> parse_point(const std::string& name) {
    for (Point p : {Point::before_acquire, Point::during_acquire, Point::between_setnx_and_expire, Point::after_seen_expired,
                    Point::after_acquire, Point::before_write, Point::before_release})
        if (name == point_name(p)) return p;
    return std::nullopt;
}

std::optional<Point> parse_reported_point(const std::string& name) {
    for (Point p : {Point::in_line, Point::entered})
        if (name == point_name(p)) return p;
    return parse_point(name);
}

std::string node_text(int node) {
    if (node == kLeaderNode) return "leader";
    if (node == kFollowerNode) return "follower";
    return std::to_string(node);
}

namespace {

std::string number_text(double ms) {
    std::string s = std::to_string(ms);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
}

}  // namespace

std::string describe_ms(const Distribution& d) {
    switch (d.kind) {
        case Distribution::Kind::fixed: return number_text(d.a) + " ms";
        case Distribution::Kind::uniform: return number_text(d.a) + ".." + number_text(d.b) + " ms";
        case Distribution::Kind::exponential: return "mean " + number_text(d.a) + " ms";
    }
    return "?";
}

std::string FaultSpec::label() const {
    std::string s = fault_kind_name(kind);
    if (const FaultKind& k = fault_kind(kind); k.label) s += k.label(*this);
    if (until_another_enters) s += " until another enters (at most " + std::to_string(max_ms) + " ms)";
    if (until_leader) s += " until a server leads (at most " + std::to_string(max_ms) + " ms)";
    if (keep_holder_ms && until_another_enters)
        s += ", then keeps it in its section until client " + std::to_string(client.value_or(0)) +
             " enters, fails or waits in line behind it (at most " + std::to_string(keep_holder_ms) + " ms)";
    else if (keep_holder_ms)
        s += ", then keeps the first to enter in its section until another enters or every acquire has answered (at most " +
             std::to_string(keep_holder_ms) + " ms)";
    if (point) s += std::string(" at ") + point_name(*point) + " #" + std::to_string(occurrence);
    if (at_ms) s += " at " + std::to_string(*at_ms) + " ms";
    if (client) s += " on client " + std::to_string(*client);
    if (target != Target::named) s += target == Target::holder ? " on the holder" : " on a random client";
    if (every_ms) s += " every " + describe_ms(*every_ms);
    return s;
}

}  // namespace lockbench
