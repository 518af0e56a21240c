// A finding: one diagnosed reuse problem (or opportunity), as data. Checks produce them,
// renderers print them; nothing throws for a finding.
#pragma once
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bod {

enum class Severity { note = 0, warning = 1, error = 2 };
const char* severity_name(Severity s);

// What the report's gate made of a finding (report/gate.h): new findings count toward
// --fail-on; a finding in the --baseline is known, one matched by a model.json suppression is
// suppressed, and neither fails the run.
enum class FindingStatus { active, known, suppressed };
const char* finding_status_name(FindingStatus s);  // "new" | "known" | "suppressed"

struct Finding {
  std::string check;
  Severity severity = Severity::error;
  int call = 0;  // 1-based call number of the first occurrence (0: not tied to a call)
  std::string phase;
  long long token = -1, layer = -1;
  std::string kernel, bo_key;
  std::string ns;  // the bo_key's cache instance (TraceCall::ns; "" when the trace has none)
  int slot = -1;
  std::string slot_name;
  bool first_call_of_key = false;  // true when the key's first call is the faulty one
  int key_first_call = 0;          // call number of the bo_key's first call
  bool latent = false;             // found by probing, outputs not diverging yet
  std::string message;             // what happened, one sentence
  std::vector<std::pair<std::string, std::string>> evidence;  // ordered facts
  std::string fix;                                            // one sentence
  std::string path;     // JSON pointer of the call step in model.json
  int occurrences = 1;  // distinct calls with the same (check, kernel, bo_key, slot)
  int last_call = 0;
  std::vector<int> calls;  // every call it was seen on, ascending (set by FindingSink::sorted)
  // The check's reason for its default severity: added to the evidence as the `severity` line
  // when the check gave none (not reported on its own).
  const char* severity_basis = nullptr;
  // Set by the report's gate, not by checks (report/gate.h).
  std::string fingerprint;  // stable identity: check, kernel, bo_key, slot (not the position)
  FindingStatus status = FindingStatus::active;
  std::string status_reason;  // suppressed: the suppression's reason and where it is declared
};

// A bo_key as lists name it: "ns/bo_key" when its cache instance has a name, else "bo_key"
// (two caches may use one key name).
std::string key_label(const std::string& ns, const std::string& bo_key);

// Collects findings, merging repeats of one problem (same check, kernel, bo_key, slot) into
// the first occurrence with a count, so a bug that bites on every token is one finding. A
// repeat is found by its identity in a hash map (one lookup per finding, not a scan).
class FindingSink {
 public:
  void add(Finding f);
  // Findings in a stable order: by first call, then check id, kernel, slot.
  std::vector<Finding> sorted() const;
  bool has_error() const;

 private:
  std::vector<Finding> items_;
  std::vector<std::set<int>> calls_;               // per item: the calls it was seen on
  std::unordered_map<std::string, size_t> index_;  // identity (check, kernel, bo_key, slot, ns)
};

}  // namespace bod
