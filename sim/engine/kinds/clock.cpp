// "clock": a wall clock steps by jump_ms (negative: back) and then runs at `rate` seconds per
// second: a client's, or with "node" a lock server's (the clock shim, faults/clock_shim.c,
// reaches each process's clock calls; in the simulator each has its own clock).
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;

void parse(Fields& f, FaultSpec& s, const WorkloadSpec&, const std::string& path) {
    const bool jumps = f.get("jump_ms") != nullptr, drifts = f.get("rate") != nullptr;
    if (!jumps && !drifts) f.fail(path, "a clock fault needs \"jump_ms\", \"rate\" or both");
    s.jump_ms = f.integer("jump_ms", 0, -scenario_parse::kMaxJumpMs, scenario_parse::kMaxJumpMs, "a year either way");
    if (drifts) {
        s.rate = f.number("rate", 1.0, 0, scenario_parse::kMaxRate);
        if (*s.rate == 0) f.fail(f.at("rate"), "expected a number above 0 (seconds per second), got 0");
    }
}

std::string label(const FaultSpec& s) {
    std::string out;
    if (s.jump_ms) out += " " + std::string(s.jump_ms > 0 ? "+" : "") + std::to_string(s.jump_ms) + " ms";
    if (s.rate) out += " rate " + std::to_string(*s.rate);
    if (s.node) out += " on node " + node_text(*s.node);
    return out;
}

std::optional<std::string> why_not(const FaultSpec& s, const FaultLanding& at) {
    if (s.node && !service_info(at.service).clock_shim_reaches)
        return std::string("steps a server's clock, which the clock shim cannot move on ") + service_info(at.service).title + " (" +
               service_info(at.service).clock_why + ")";
    return std::nullopt;
}

bool fire(FaultFiring& on) {
    const FaultSpec& f = on.spec();
    const ClockOf clock = f.node ? ClockOf{ClockOf::Whose::node, on.node()} : ClockOf{ClockOf::Whose::client, on.client()};
    on.world().step_clock(clock, f.jump_ms);
    if (f.rate) on.world().drift_clock(clock, *f.rate);
    on.log("start");
    return true;
}

// A client's stepped clock stays off the others' (locks that compare clients' clocks feel it
// on every cycle), and a drifting clock drifts on; a lock node's step acts once, when it
// expires what it expires: after it, keys are set and expire by the node's new clock as by
// any clock.
bool stays(const FaultSpec& s) { return !(s.node && !s.rate); }

void needs(const FaultSpec& s, WorldNeeds& n) {
    if (s.node) n.node_clocks = true;
    else n.client_clocks = true;
}

std::string words(const nlohmann::json& f, const FaultWords& w) {
    const long long jump = f.value("jump_ms", 0LL);
    return std::string(f.contains("node") ? "node" : "client") + " clock step " + (jump >= 0 ? "forward" : "back") +
           w.than(jump, "more", "less") + w.where;
}

// The length first, then its sign (in this order: a seed draws what it always drew).
void draw_client(FaultDraw& d, nlohmann::json& f) {
    const long long length = d.scaled(-2, 2);
    f["jump_ms"] = length * (d.chance(0.5) ? 1 : -1);
}

// A node's clock mostly steps forward (back, it only keeps keys longer), by half its TTL or
// more (a small step rarely outruns a lease).
void draw_node(FaultDraw& d, nlohmann::json& f) {
    const long long length = d.scaled(-1, 2);
    f["jump_ms"] = length * (d.chance(0.75) ? 1 : -1);
    f["node"] = d.node();
    if (f.contains("at_ms")) f.erase("client");  // a node at a time names no client
}

}  // namespace

const FaultKind& clock_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::clock,
        .name = "clock",
        .noun = "a clock fault",
        .aims_at_node = true,
        .no_repeat = "a jump never ends, so each occurrence would add to the last",
        .own_fields = {"jump_ms", "rate"},
        .parse = parse,
        .label = label,
        .lease_scaled = {"jump_ms"},
        .why_not = why_not,
        .fire = fire,
        .stays = stays,
        .needs = needs,
        .words = words,
        .shapes = {{.name = "client clock", .draw = draw_client}, {.name = "node clock", .node_fault = true, .draw = draw_node}},
    };
    return entry;
}

}  // namespace lockbench
