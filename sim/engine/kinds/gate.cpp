// "gate": clients are held at a point: until `count` of them are there, then let go
// stagger_ms apart (a race forced, not hoped for); with "until": "another-enters" the one
// client named is held until the protected store's log shows another client's enter since
// (at most max_ms); with "until": "leader" whichever client reaches the point first is held
// until a server of the service says it leads.
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;

void parse(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string& path) {
    if (!s.point) f.fail(path, "a gate holds clients at a point: give \"point\"");
    if (s.until_leader) return;  // one client, whichever reaches the point first
    if (s.until_another_enters) {
        if (!s.client) f.fail(f.at("client"), "required with \"until\": the client held");
        if (f.get("count")) f.fail(f.at("count"), "a gate with \"until\" holds one client");
        return;
    }
    s.count = static_cast<int>(f.integer("count", 2, 2, w.clients, "at most the workload's " + std::to_string(w.clients) + " clients"));
    s.stagger_ms = f.integer("stagger_ms", 0, 0, w.duration_ms, scenario_parse::run_ends(w));
    if (s.client) f.fail(f.at("client"), "a gate gathers several clients: it cannot name one");
}

std::string label(const FaultSpec& s) {
    return s.until_another_enters || s.until_leader ? "" : " " + std::to_string(s.count) + " clients";
}

bool fire(FaultFiring& on) { return on.gate(); }

// The client goes on; the simulator runs it on from here, after the line.
void end(FaultFiring& on) {
    on.log("end");
    on.world().let_go(on.client());
}

std::string words(const nlohmann::json& f, const FaultWords& w) {
    return "gate of " + std::to_string(f.value("count", 2)) + " clients" + w.where;
}

void draw(FaultDraw& d, nlohmann::json& f) {
    f.erase("client");
    f["count"] = d.uniform(2, std::min(3, d.clients()));
    if (d.chance(0.5)) f["stagger_ms"] = std::min(d.scaled(-4, 0), d.duration_ms());
}

}  // namespace

const FaultKind& gate_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::gate,
        .name = "gate",
        .noun = "a gate",
        .waits_for_another = true,
        .waits_for_leader = true,
        .blocks_client = true,
        .holds_clients = true,
        .no_repeat = "a gate happens once",
        .own_fields = {"count", "stagger_ms"},
        .parse = parse,
        .label = label,
        .lease_scaled = {"stagger_ms"},
        .fire = fire,
        .end = end,
        .words = words,
        .shapes = {{.name = "gate", .offered = [](const SearchRun& r) { return r.clients >= 2; }, .needs_point = true, .draw = draw}},
    };
    return entry;
}

}  // namespace lockbench
