// The gate: what a CI job tunes between the checks' findings and the exit code. Selects
// checks (--checks, --skip-checks), marks findings known (--baseline) or suppressed (model.json
// "suppressions"), groups findings that share one root cause, and decides which severities
// fail the run (--fail-on). Findings stay data: the gate sets their status and fingerprint,
// it never drops detail (JSON keeps every finding). docs/report-format.md, "The gate".
#pragma once
#include <set>
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/result.h"

namespace bod {

// The lowest severity that fails the run (exit 1); `never` reports only.
enum class FailOn { note = 0, warning = 1, error = 2, never = 3 };
const char* fail_on_name(FailOn f);
Result<FailOn> parse_fail_on(const std::string& s);  // case-insensitive

// A model.json suppression as the gate applies it (the model's SuppressionDecl, with the
// file its pointer is in).
struct Suppression {
  std::string check, kernel, bo_key, slot, reason;
  std::string where;  // "model.json:/suppressions/0"
};

struct GateOptions {
  std::vector<std::string> checks;       // only these ids (empty: all)
  std::vector<std::string> skip_checks;  // not these
  FailOn fail_on = FailOn::error;
  bool has_baseline = false;
  std::set<std::string> baseline;  // fingerprints of known findings
  std::vector<Suppression> suppressions;
  size_t print_limit = 20;  // finding groups in text output (0: all)
};

// Refuses ids no check has, naming the closest one and the valid ones (exit 2).
Status validate_check_ids(const std::vector<std::string>& ids, const std::string& flag);

// The checks a gate reports on, by registry order (every check when none is selected).
std::vector<const CheckInfo*> selected_checks(const GateOptions& g);

// A finding's stable identity: 16 hex digits of XXH3-64 over its check, kernel, bo_key and
// slot (name, else index), never its position, so it survives reformatting and reordering
// of model.json and is the same in every run.
std::string fingerprint(const Finding& f);

// Findings that share a cause: same check, same kernel, same call site (else same bo_key),
// same status; several slots, keys or calls become one group.
struct FindingGroup {
  std::vector<size_t> members;  // indices into the report's findings, in report order
  size_t lead = 0;              // the member shown: the first of the highest severity
  Severity severity = Severity::note;
  FindingStatus status = FindingStatus::active;
  std::vector<std::string> slots;    // distinct "2 (wq)", in order of first appearance
  std::vector<std::string> bo_keys;  // distinct key_label()s, in order
  std::vector<int> calls;            // the members' first calls, distinct and sorted
  std::vector<int> every_call;       // every call any member was seen on, distinct and sorted
  int occurrences = 0;               // calls over all members
  std::string fingerprint;           // of the group: its members' fingerprints
};

// The baseline file (--baseline, --write-baseline): JSON listing fingerprints with enough
// context to read it; only the fingerprints are compared.
Result<std::set<std::string>> read_baseline(const std::string& path);

// The id of the gate's own finding (an unused suppression) and its texts, for explain.
const CheckInfo& unused_suppression_info();

}  // namespace bod
