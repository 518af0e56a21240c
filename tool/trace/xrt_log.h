// A recording at the XRT boundary turned into a trace. `bo-doctor record --xrt` runs the program
// with the preload library (C++ hosts, pyxrt) or the Python module-level wrapper (a pyxrt that
// does not call libxrt); each process appends event lines (JSON, one per XRT call: BO made,
// host change, sync, read, run start, wait) to its own file in the log folder. This replays
// them into a Trace with capability "xrt" (trace_xrt.h): every run start is a call, every
// argument a slot with what the host did to its BO around the run. The event format is in
// docs/recording.md, "Hand-managed BOs".
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "core/result.h"
#include "trace/trace.h"

namespace bod {

struct XrtLogSummary {
  size_t runs = 0, bos = 0, events = 0, processes = 0;
  bool torn = false;  // a process's last line was cut off (it died mid-write) and dropped
  // record --xrt --shadow: runs re-run on fresh BOs by a recorder that can (the Python wrapper),
  // shadow runs that failed (the first error), and runs of processes whose recorder does not
  // shadow (the preload library: a C++ host or a libxrt-backed pyxrt).
  size_t shadowed = 0, shadow_failed = 0, not_shadowed = 0;
  std::string shadow_error;
  // Of the runs not shadowed: those the preload library re-ran on fresh BOs without comparing
  // anything (record --xrt --shadow of a C++ host: plumbing only), of how many it recorded.
  size_t plumbing_shadowed = 0, plumbing_runs = 0;
};

// One process's events; `name` starts error messages ("FILE:LINE: ..."). Calls are appended to
// `t` (its header is filled by the first process). `ns` names the process when several wrote.
Status add_xrt_log(std::istream& in, const std::string& name, const std::string& ns, Trace& t,
                   XrtLogSummary& summary);

// Every *.jsonl file of `dir`, in order of name (the recorder names them by start time and pid).
Result<Trace> trace_from_xrt_logs(const std::string& dir, const std::string& command,
                                  XrtLogSummary& summary);

}  // namespace bod
