// The per-kernel reuse view of a recording at the XRT boundary (capability xrt): for each
// kernel, which BO arguments the host re-sends (syncs to the device before a run) and which stay
// resident, on its first run and its later runs, with the advice classify gives for a KernelCache
// engine's slots. An argument that stays resident while its host bytes change is the hand-managed
// stale-static. A function of the trace, like the key table (docs/recording.md, "Hand-managed
// BOs").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace bod {

struct XrtArgReuse {
  int slot = -1;
  std::string name;
  bool is_bo = false;
  uint64_t bytes = 0;  // the BO's size on the kernel's first run
  // First run: bytes synced to the device since the BO's previous run (0: none).
  uint64_t first_sent = 0;
  // Later runs (the kernel's runs after its first): how many re-sent bytes, and how many bytes
  // in all; runs whose host bytes had new values; runs it was not re-sent although host bytes
  // changed after their last sync (resident but changed), the first such run.
  int later_runs = 0, later_resent = 0, later_new = 0, resident_changed = 0;
  int first_resident_changed = 0;
  uint64_t later_sent_bytes = 0;
  int read_back = 0;      // runs after which the host read it back
  std::string role;       // static, input, output, resident, scalar
  std::string advice;     // "" when the handling fits the role
  bool corrupts = false;  // resident but changed: the device computed on stale bytes
};

struct XrtKernelReuse {
  std::string ns, kernel;
  int runs = 0, first_run = 0;
  std::vector<XrtArgReuse> args;
};

// Empty unless the trace has capability xrt.
std::vector<XrtKernelReuse> xrt_reuse(const Trace& t);

// The view's cells, one wording for every report format: "sent 256 B" / "not sent" for the
// first run; "re-sent 3 of 3, 768 B", "resident on 3", "not sent" or "-" for the later runs.
std::string xrt_first_run_text(const XrtArgReuse& a);
std::string xrt_later_runs_text(const XrtArgReuse& a);

}  // namespace bod
