// A recorder's spool turned into a trace. The Python recorder that `bo-doctor record` injects
// cannot write a trace header first (it learns the kernels as they are called), so it appends
// one JSON object per line to a spool file, flushed per call: {"kind": "header" | "kernel" |
// "call" | "view_read" | "end", ...}. Every recorded process (the program, each child
// interpreter, each fork) writes its own spool file in one spool folder. This assembles one
// trace (docs/trace-format.md) from them: the header with the kernel table gathered from the
// kernel lines, then each process's calls in the order the processes started, numbered on
// across processes, each call of a process after the first carrying "process": its index, its
// cache namespaces suffixed "@p<index>" (two processes never share a BO), then figures and end.
//
// Bounded memory: a first pass reads each file's header, kernel lines and call count; a second
// streams the calls out one line at a time. What is kept is per process and per kernel, plus
// the first call of each BO of the processes after the first (their BO first calls are numbered
// anew: a forked child's BOs are its own copies).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "core/result.h"

namespace bod {

struct SpoolSummary {
  size_t calls = 0;
  bool ended = false;           // the first process reached the recorder's exit hook
  bool torn = false;            // a last line was cut off (a process died mid-write) and dropped
  size_t stopped = 0;           // processes whose recorder stopped after a failure of its own
  bool shadow = false;          // calls carry shadow (no-reuse) runs
  size_t shadowed = 0;          // with shadow: the calls that ran on the no-reuse engine
  double recorder_seconds = 0;  // time the recorder spent outside the engine, all processes
  size_t processes = 0;         // spool files with a header
  size_t processes_ended = 0;   // of which reached the recorder's exit hook
};

// The trace from the spool files (any order: they are ordered by their headers), written to
// `out`. Errors name the file and line.
Status assemble_spools(const std::vector<std::string>& files, std::ostream& out,
                       SpoolSummary& summary);

// One process's spool as a stream (tests): the trace's text (JSON Lines, '\n' after each line).
// `name` starts error messages.
Result<std::string> trace_text_from_spool(std::istream& in, const std::string& name,
                                          SpoolSummary& summary);

}  // namespace bod
