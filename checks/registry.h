// The one registry of checks: list-checks, explain, docs/checks.md's test and the runner all
// read it, so ids and texts cannot drift.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "checks/check.h"

namespace bod {

struct CheckEntry {
  const CheckInfo* info;
  std::function<std::unique_ptr<Check>()> make;
};

const std::vector<CheckEntry>& check_registry();
const CheckEntry* find_check(const std::string& id);
std::vector<std::unique_ptr<Check>> make_all_checks();

}  // namespace bod
