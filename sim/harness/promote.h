// A discovered class made a case (`lockbench explore --budget N --promote DIR`): the shrunk
// schedule the simulator found, rewritten against the lock's roles so that it fits every lock
// it applies to, and forced at points so that it reproduces live.
//
//   witness (explicit scenario: client 4, nodes [1, 3], node 2, sections of a millisecond)
//     ──► roles: the story's client is client 0, and it goes first (workload.start_after:
//         the others wait until it has acquired), a point fault on whoever reaches it stays
//         so; "nodes": "one" / "minority" / "majority" / "all", "node": "locked" (the node a
//         cut leaves it) or the first (one it was cut from)
//     ──► sections long enough to be caught in (a live server takes tens of milliseconds to
//         come back, a proxy a millisecond to cut), where the simulator says the class holds
//     ──► checked in the simulator on the lock it was found on, three seeds: the most forced
//         form that still violates in all three is kept ("forced"), else the roles alone
//     ──► DIR/<case>.json, a case file about no lock; DIR/promoted.json, one entry a class:
//         {case, class, run, violation, failure_class, covered_by, forced, simulated}
//
// The catalog's classes (catalog_classes) let a class be named: each case's faults as the
// search would class them, with points and sizes left out (class_signature), so that "pause
// at after_acquire, longer than the TTL" falls in gc-pause like the case's pause at
// before_write; failing that, the class of the cases that open with its first fault; a story of
// the store's link alone (but the held write) is a slow holder, whose case has no fault. A
// class none of these names is "new"; the ones no case tells (`covered_by` empty) are those
// worth keeping under scenarios/discovered/.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/case_file.h"
#include "sim/engine/lock_file.h"

namespace lockbench::sim {

// A class with what does not change its story left out: points, sizes against the TTL, and
// lock nodes counted by role ("2 of 5 lock nodes" → "a minority of the lock nodes").
std::string class_signature(const std::string& klass);

// The catalog's cases by the signature of their faults (as composed with `locks`, lockbench's
// own: the classes the search gives), each with its failure class.
struct CatalogClass {
    std::string case_name;
    std::optional<std::string> failure_class;
};
using CatalogClasses = std::multimap<std::string, CatalogClass>;
CatalogClasses catalog_classes(const std::vector<CaseFile>& cases, const std::vector<LockFile>& locks);

// The catalog class a class falls in ("gc-pause", ...), or "new"; and the cases that share it.
std::string catalog_class_of(const std::string& klass, const CatalogClasses& catalog);
std::vector<std::string> covered_by(const std::string& klass, const CatalogClasses& catalog);

// A shrunk schedule's faults against roles, for a run of `nodes` lock nodes: clients renumbered
// so that the story's is 0 (`story_client` set when one is named), node sets and nodes by role.
nlohmann::json faults_by_role(const nlohmann::json& faults, int nodes, bool& story_client);

// A gate at a point only a holder passes (after_acquire, before_write, before_release): it
// holds the holder until another client gets there, which a lock that keeps its lease alive
// never lets happen, and a live run then waits for its end in vain. Such a class is a pause by
// another name (class_signature); it is neither promoted nor run live.
bool holds_the_holder(const nlohmann::json& faults);

// One class's witness (an explicit one-run scenario) as a case file's JSON, about no lock:
// `forced` adds start_after and longer sections where `check` (a simulated run of the case
// against the lock it was found on) says the class still holds. Sets `how` to what was kept.
nlohmann::json promote_witness(const nlohmann::json& witness, const std::string& klass, const std::string& name,
                               const nlohmann::json& provenance, std::string& how, std::string& simulated);

// Every class of an explore folder (its explore.json) promoted into `dir`; returns promoted.json.
nlohmann::json promote_explore(const std::filesystem::path& explore_dir, const std::filesystem::path& dir,
                               const CatalogClasses& catalog);

}  // namespace lockbench::sim
