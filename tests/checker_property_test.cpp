// Properties of the checker over generated histories: a mutually exclusive run is clean
// whatever its size and shape, and one injected overlap is found exactly once, with the
// right witness. Sizes are kept small so that the hundred cases of each run in about a second.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "analysis/checker.h"
#include "tests/history_gen.h"

namespace lockbench {
namespace {

struct Shape {
    int clients;
    long long events;
    std::uint64_t seed;
};

Shape any_shape() {
    return {*rc::gen::inRange(1, 9), *rc::gen::inRange(0LL, 2000LL), *rc::gen::arbitrary<std::uint64_t>()};
}

RC_GTEST_PROP(CheckerProperty, MutuallyExclusiveHistoryIsClean, ()) {
    const Shape s = any_shape();
    const RunHistory h = histgen::generate_history(s.clients, s.events, s.seed);
    const CheckResult r = check(h);
    RC_ASSERT(r.safety.mutual_exclusion_violations == 0);
    RC_ASSERT(r.safety.fenced_overlaps == 0);
    RC_ASSERT(r.safety.lost_updates == 0);
    RC_ASSERT(r.safety.stale_writes_accepted == 0);
    RC_ASSERT(r.safety.stale_writes_rejected == 0);
    RC_ASSERT(r.safety.foreign_releases == 0);
    RC_ASSERT(r.witnesses.empty());
    RC_ASSERT(r.ops.sections_completed == h.final_counter);
    RC_ASSERT(r.ops.acquired == h.final_counter);
    RC_ASSERT(r.ops.released == h.final_counter);
}

RC_GTEST_PROP(CheckerProperty, GeneratorIsDeterministicAndOrdered, ()) {
    const Shape s = any_shape();
    const RunHistory a = histgen::generate_history(s.clients, s.events, s.seed);
    const RunHistory b = histgen::generate_history(s.clients, s.events, s.seed);
    RC_ASSERT(a.events.size() == b.events.size());
    RC_ASSERT(static_cast<long long>(a.events.size()) >= s.events);
    RC_ASSERT(a.clients == s.clients);
    for (size_t i = 0; i < a.events.size(); ++i) {
        RC_ASSERT(a.events[i].t_ns == b.events[i].t_ns);
        RC_ASSERT(a.events[i].client == b.events[i].client);
        RC_ASSERT(a.events[i].client < a.clients);
        if (i > 0) RC_ASSERT(a.events[i - 1].t_ns < a.events[i].t_ns);
    }
    for (size_t i = 0; i < a.store.size(); ++i) RC_ASSERT(a.store[i].seq == static_cast<long long>(i) + 1);
    RC_ASSERT(a.leases == b.leases);
}

// Where section `k` of a generated history sits in the store: enter, write, exit.
size_t enter_index(size_t k) { return 3 * k; }

RC_GTEST_PROP(CheckerProperty, OneInjectedOverlapIsFoundOnceWithItsWitness, ()) {
    const int clients = *rc::gen::inRange(1, 9);
    const long long events = *rc::gen::inRange(1LL, 2000LL);
    RunHistory h = histgen::generate_history(clients, events, *rc::gen::arbitrary<std::uint64_t>());
    const size_t sections = h.store.size() / 3;
    RC_PRE(sections > 0);

    // Section A, and B: a new lease of another client, entering while A is inside.
    const size_t k = *rc::gen::inRange<size_t>(0, sections);
    const StoreEntry a = h.store[enter_index(k)];
    const int b_client = (a.client + 1) % std::max(h.clients, 2);
    h.clients = std::max(h.clients, b_client + 1);
    const int b = h.lease_index(histgen::lease_name(b_client, "injected"), b_client);

    // B enters after A's enter or after A's write; B leaves anywhere after that, but before
    // the next section enters, so that it meets A and nobody else.
    const size_t b_enter = enter_index(k) + *rc::gen::inRange<size_t>(1, 3);
    const size_t b_exit = b_enter + 1 + *rc::gen::inRange<size_t>(0, enter_index(k) + 3 - b_enter + 1);
    StoreEntry enter{.kind = StoreKind::enter, .client = b_client, .lease = b, .read = a.read};
    StoreEntry exit{.kind = StoreKind::exit, .client = b_client, .lease = b};
    h.store.insert(h.store.begin() + static_cast<std::ptrdiff_t>(b_enter), enter);
    h.store.insert(h.store.begin() + static_cast<std::ptrdiff_t>(b_exit), exit);
    for (size_t i = 0; i < h.store.size(); ++i) h.store[i].seq = static_cast<long long>(i) + 1;

    const CheckResult r = check(h);
    RC_ASSERT(r.safety.mutual_exclusion_violations == 1);
    RC_ASSERT(r.safety.fenced_overlaps == 0);
    RC_ASSERT(r.safety.lost_updates == 0);
    // A's write is stale exactly when B entered before it.
    RC_ASSERT(r.safety.stale_writes_accepted == (b_enter == enter_index(k) + 1 ? 1 : 0));
    const auto w = std::ranges::find(r.witnesses, Witness::Kind::mutual_exclusion, &Witness::kind);
    RC_ASSERT(w != r.witnesses.end());
    RC_ASSERT(w->first.lease == a.lease);
    RC_ASSERT(w->first.client == a.client);
    RC_ASSERT(w->first.enter_seq == static_cast<long long>(enter_index(k)) + 1);
    RC_ASSERT(w->second.lease == b);
    RC_ASSERT(w->second.client == b_client);
    RC_ASSERT(w->second.enter_seq == static_cast<long long>(b_enter) + 1);
    RC_ASSERT(w->second.exit_seq == static_cast<long long>(b_exit) + 1);
}

}  // namespace
}  // namespace lockbench
