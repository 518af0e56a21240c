// A recorder's spool turned into a trace. The Python recorder that `bo-doctor record` injects
// cannot write a trace header first (it learns the kernels as they are called), so it appends
// one JSON object per line to a spool, flushed per call: {"kind": "header" | "kernel" | "call" |
// "end", ...}. This assembles the trace (docs/trace-format.md) from it: the header with the
// kernel table gathered from the kernel lines, the call lines as recorded, figures and end.
#pragma once
#include <iosfwd>
#include <string>

#include "core/result.h"

namespace bod {

struct SpoolSummary {
  size_t calls = 0;
  bool ended = false;   // the program reached the recorder's exit hook
  bool torn = false;    // the last line was cut off (the program died mid-write) and dropped
  bool shadow = false;  // calls carry shadow (no-reuse) runs
  double recorder_seconds = 0;  // time the recorder spent outside the engine
};

// The trace's text (JSON Lines, '\n' after each line). `name` starts error messages.
Result<std::string> trace_text_from_spool(std::istream& in, const std::string& name,
                                          SpoolSummary& summary);

}  // namespace bod
