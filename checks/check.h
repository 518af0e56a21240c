// A check: one kind of reuse bug (or opportunity) with a stable id. Checks are observers:
// the lint pass shows them the plan, the shadow runner shows them each CallRecord and view
// read, and at the end the whole run; they turn what they see into findings.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/plan.h"
#include "report/finding.h"
#include "runner/call_record.h"

namespace bod {

// The text of a check, shared by list-checks, explain, docs and findings.
struct CheckInfo {
  const char* id;
  Severity severity;
  const char* title;      // what happened
  const char* symptom;    // what the user sees
  const char* detection;  // how bo-doctor detects it
  const char* fix;        // how to fix it
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  // Static analysis of the expanded plan (no execution): lint and the start of check.
  virtual void lint(const Plan&, FindingSink&) {}
  virtual void on_call(const CallRecord&, FindingSink&) {}
  virtual void on_view(const ViewEvent&, FindingSink&) {}
  // After the last call: checks that need every call of a key (notes on missed reuse).
  virtual void finish(const std::vector<CallRecord>&, FindingSink&) {}
};

// A finding pre-filled from a call: where, kernel, key, slot, severity and fix of `info`.
Finding make_finding(const CheckInfo& info, const PlanCall& c, int slot, int key_first_call);

}  // namespace bod
