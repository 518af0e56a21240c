// A check: one kind of reuse bug (or opportunity) with a stable id, as a function of a Trace.
// Checks read the trace and nothing else (no plan, no engine), so bo-doctor's own replay and a
// trace recorded from a real engine are judged by the same code. What a check needs from the
// trace is declared here and documented per check in docs/checks.md.
#pragma once
#include <string>
#include <vector>

#include "checks/finding.h"
#include "trace/trace.h"

namespace bod {

// Trace capabilities a check's rule needs (bit set).
enum Need : unsigned {
  kNeedRun = 1,        // the reuse engine's writes and BO hashes
  kNeedNoReuse = 2,    // the no-reuse engine's hashes and output metrics
  kNeedByteDiffs = 4,  // byte counts where the engines' BOs differ after dispatch
  kNeedAccess = 8,     // the kernel's access to each slot (reference body analysis)
  kNeedProbe = 16,     // canary probes (latent findings)
  kNeedVerify = 32,    // the end-to-end comparison
  kNeedXrt = 64,       // a recording at the XRT boundary: the host's BO operations per run
};
unsigned trace_has(const Capabilities& c);  // the Need bits a trace's capabilities cover
std::string need_names(unsigned needs);     // "run, no_reuse"

// The text and requirements of a check, shared by list-checks, explain, docs and findings.
struct CheckInfo {
  const char* id;
  Severity severity;
  const char* title;      // what happened
  const char* symptom;    // what the user sees
  const char* detection;  // how bo-doctor detects it
  const char* fix;        // how to fix it
  unsigned needs;         // for its rule to run at all (beyond call identities)
  unsigned optional;      // for extra findings (e.g. latent ones from probes)
  bool identity_part;     // part of the rule runs on call identities alone (lint)
  // Why a finding of this check has its default severity, in one line (each finding states
  // the evidence for its severity; a check that sets another severity says why itself).
  const char* severity_basis = nullptr;
};

using CheckFn = void (*)(const Trace&, FindingSink&);

// A finding pre-filled from a call: where, kernel, key, slot, severity and fix of `info`.
Finding make_finding(const CheckInfo& info, const TraceCall& c, int slot, int key_first_call);

}  // namespace bod
