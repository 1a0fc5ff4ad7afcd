// Fault discovery from a budget (`lockbench explore --budget N`): schedules composed from the
// whole fault vocabulary rather than from the faults a scenario wrote, and the failure class
// that a shrunk schedule falls in.
//
//   draw_budget_schedule(seed)
//     kinds ──── a random subset of the kinds that apply to the run, as swarm testing draws
//     │          features, so that a rare pair is not drowned out by the kinds that fail alone
//     faults ─── 1..N, each of a kind of the subset (each kind of it at least once); its point
//     │          (or time), occurrence, target and length, lengths on the run's own time scale
//     │          (its TTL or lease)
//     targets ── independent, or correlated: every fault on one client, and a fault on a node
//                kept off the nodes an earlier link fault cut that client from (a node the
//                client could still lock), so that "cut the holder off from two of five nodes,
//                then step the clock of (or crash) one of its three" is about one draw in 125
//                for Redlock at a budget of two, not one in tens of thousands
//
//   failure_class(faults, landing order)
//     "pause at before_write, longer than the TTL"; "link blackhole from a client to 2 of 5
//     lock nodes + node clock step forward, more than the TTL, at after_acquire, on a node the
//     client was not cut from": each fault's kind, point and what it does measured against the
//     TTL, in the order the faults landed; occurrences, exact lengths and indices left out, so
//     that two schedules that fail the same way share a class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench::sim {

// The scenario (one run, faults of its own) that schedule `seed` composes for run `run` of
// `source`, with at most `budget` faults; the faults the file wrote are left out.
nlohmann::json draw_budget_schedule(const nlohmann::json& source, const std::string& run, std::uint64_t seed,
                                    int budget);

// The class of a one-run scenario's faults. `landed` lists the faults' indices in the order
// they started (faults missing from it follow, in their order); empty: the order written.
std::string failure_class(const nlohmann::json& scenario, const std::vector<std::size_t>& landed = {});

}  // namespace lockbench::sim
