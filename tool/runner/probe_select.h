// Which calls and slots a run canary-probes (probe.h runs the probes). A probe's outcome
// depends on the kernel body and its shapes, the kernel params, where each slot lives and what
// kind of host data it gets; a later call of a bo_key that repeats a probed combination would
// repeat its outcome, so it is not probed again.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace bod {

struct ProbeRule {
  // Every slot, one at a time, on the first `calls_per_key` calls of each bo_key (classify,
  // --probe=all).
  bool all = false;
  // The intermediate slots of every call, not only of calls whose outcome could differ.
  bool every_call = false;
  int calls_per_key = 2;
};

class ProbeSelection {
 public:
  explicit ProbeSelection(const ProbeRule& rule) : rule_(rule) {}
  // The slots of call `c` to probe, as groups probed together (none: the call is not probed).
  // With `all`: each slot alone, on each bo_key's first calls_per_key calls. Otherwise the
  // call's intermediate slots that are not also static, as one group, on each (cache, bo_key)'s
  // first calls_per_key calls with such slots and on every later call whose signature (below)
  // no earlier call of the key had; with `every_call`, on every call. Called once per call,
  // in execution order: it counts the calls it has seen.
  std::vector<std::vector<int>> select(const PlanCall& c);
  // What a probe's outcome depends on, as numbers: the bound body (by address), the kernel
  // params, and per slot its shape, bytes, BO, kind of host data and static/intermediate flags.
  static std::vector<int64_t> signature(const PlanCall& c);

 private:
  ProbeRule rule_;
  std::map<std::string, int> calls_all_;  // bo_key -> calls probed (`all`)
  struct Seen {
    int calls = 0;
    std::set<std::vector<int64_t>> signatures;
  };
  std::map<BoKeyId, Seen> seen_;
};

}  // namespace bod
