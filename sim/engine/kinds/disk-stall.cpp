// "disk-stall": a lock server's flushes to disk (fsync, fdatasync) wait for duration_ms, as on
// a disk that stalls, while everything else it does goes on. The shim that moves a server's
// clock holds them (faults/clock_shim.c); a server that never flushes through libc is out of
// its reach (its service says why), and one that never flushes (Redis without AOF) does not
// feel it. The simulator has no disk.
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;

void parse(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string&) {
    if (!f.get("node")) f.fail(f.at("node"), "required for a disk stall: the lock server whose disk stalls");
    if (!f.get("duration_ms")) f.fail(f.at("duration_ms"), "required for a disk stall");
    if (!s.duration_drawn_ms)
        s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                                  "the stall would end after the run: " + scenario_parse::run_ends(w));
}

std::string label(const FaultSpec& s) {
    return " " + (s.duration_drawn_ms ? describe_ms(*s.duration_drawn_ms) : std::to_string(s.duration_ms) + " ms") + " of node " +
           node_text(s.node.value_or(0));
}

std::optional<std::string> why_not(const FaultSpec&, const FaultLanding& at) {
    const ServiceInfo& service = service_info(at.service);
    if (!service.disk_shim_reaches)
        return std::string("stalls a server's flushes to disk, which the shim cannot hold on ") + service.title + " (" + service.disk_why + ")";
    if (service.node_options && at.persistence == Persistence::none)
        return std::string("stalls a server's flushes to disk, and ") + service.plural + " without \"persistence\" never flush";
    return std::nullopt;
}

bool fire(FaultFiring& on) {
    on.world().stall_disk(on.node(), true);
    on.log("start");
    on.lasts();
    return true;
}

void end(FaultFiring& on) {
    on.world().stall_disk(on.node(), false);
    on.ended();
    on.log("end");
}

void needs(const FaultSpec&, WorldNeeds& n) {
    n.node_clocks = true;  // the servers run under the shim
    n.stalls_disk = true;
}

std::string words(const nlohmann::json& f, const FaultWords& w) {
    return "node disk stall" + w.where + w.than(f.value("duration_ms", 0LL), "longer", "shorter");
}

}  // namespace

// No shapes: the search runs in the simulator, which has no disk.
const FaultKind& disk_stall_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::disk_stall,
        .name = "disk-stall",
        .noun = "a disk stall",
        .aims_at_node = true,
        .lasts = true,
        .parse = parse,
        .label = label,
        .why_not = why_not,
        .fire = fire,
        .end = end,
        .needs = needs,
        .words = words,
    };
    return entry;
}

}  // namespace lockbench
