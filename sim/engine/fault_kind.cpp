#include "sim/engine/fault_kind.h"

#include <cstdlib>

#include "lockimpl/params.h"  // or_list

namespace lockbench {

// Each kind's entry, made on first use by its own file of sim/engine/kinds/ (so that no
// file's start-up code meets an entry not yet made). The order is the search's (discover.cpp
// draws from the shapes in it: a seed draws the schedule it always drew) and the order a
// message lists kinds in.
const FaultKind& gate_kind();
const FaultKind& pause_kind();
const FaultKind& clock_kind();
const FaultKind& link_kind();
const FaultKind& crash_kind();
const FaultKind& kill_kind();
const FaultKind& disk_stall_kind();

const std::vector<const FaultKind*>& fault_kinds() {
    static const std::vector<const FaultKind*> kinds{&gate_kind(), &pause_kind(), &clock_kind(), &link_kind(), &crash_kind(), &kill_kind(),
                                                     &disk_stall_kind()};
    return kinds;
}

const FaultKind& fault_kind(FaultSpec::Kind kind) {
    for (const FaultKind* k : fault_kinds())
        if (k->kind == kind) return *k;
    std::abort();  // every kind has its entry (tests/compose_test.cpp, FaultKinds)
}

const FaultKind* find_fault_kind(const std::string& name) {
    for (const FaultKind* k : fault_kinds())
        if (name == k->name) return k;
    return nullptr;
}

std::string kind_nouns(bool (*has)(const FaultKind&)) {
    std::vector<std::string> nouns;
    for (const FaultKind* k : fault_kinds())
        if (has(*k)) nouns.emplace_back(k->noun);
    return or_list(nouns);
}

WorldNeeds world_needs(const std::vector<FaultSpec>& faults) {
    WorldNeeds n;
    for (const FaultSpec& f : faults)
        if (fault_kind(f.kind).needs) fault_kind(f.kind).needs(f, n);
    return n;
}

std::string FaultWords::than(long long v, const char* more, const char* less) const {
    if (!scale_ms) return "";
    return std::string(", ") + (std::llabs(v) > *scale_ms ? more : less) + " than " + scale_word;
}

}  // namespace lockbench
