// The one registry of checks: list-checks, explain, docs/checks.md's test, lint, check and
// analyze all read it, so ids, texts and requirements cannot drift.
#pragma once
#include <string>
#include <vector>

#include "checks/check.h"

namespace bod {

struct CheckEntry {
  const CheckInfo* info;
  CheckFn run;
};

const std::vector<CheckEntry>& check_registry();
const CheckEntry* find_check(const std::string& id);

// What a trace lacks for one check.
struct CoverageGap {
  std::string check;
  bool partly = false;  // the identity part still ran
  std::string missing;  // capability names
};
// The checks a trace cannot (fully) feed; empty when it carries everything they need.
std::vector<CoverageGap> coverage_gaps(const Trace& t);

// False for a check of hand-managed BOs (needs xrt) on a trace that is not a recording at the
// XRT boundary: there the engine syncs by itself, the check has nothing to judge, and it is
// neither a gap nor a pass (reports leave it out).
bool check_applies(const CheckInfo& info, const Capabilities& caps);

// Runs every check on the trace, in registry order.
void run_checks(const Trace& t, FindingSink& sink);

}  // namespace bod
