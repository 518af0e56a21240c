// A Trace as JSON Lines, the file format between whatever ran a model (bo-doctor's runner, a
// recorder inside a real engine, a script in another language) and the checks. Writing is
// deterministic (fixed key order) so traces diff and cache well; reading validates every line
// and reports the first problem as one "FILE:LINE:/json/pointer: message" line with exit 2.
// The format is specified in docs/trace-format.md (schema: docs/trace.schema.json).
#pragma once
#include <cstddef>
#include <iosfwd>
#include <string>

#include "core/result.h"
#include "trace/trace.h"

namespace bod {

// Bounds on what read_trace accepts, so a corrupt or hostile file fails fast with exit 2
// instead of exhausting memory. Each is checked before the work it guards.
struct TraceLimits {
  size_t max_line_bytes = size_t(64) << 20;  // one line, without its '\n'
  int max_depth = 64;                        // JSON nesting of one line (arrays and objects)
  // What analyze and skeleton do within 15 s and 1.5 GB on a loaded 2-core machine
  // (docs/robustness.md): 2^18 calls (without slots: skeleton 9-12 s), 2^19 slots (87k calls
  // of 6 slots: analyze about 6 s, skeleton about 8 s).
  size_t max_calls = size_t(1) << 18;         // call lines in the trace
  size_t max_trace_slots = size_t(1) << 19;   // slots of all calls together
  size_t max_slots = 4096;                    // slots of one kernel or call
  size_t max_string_bytes = size_t(1) << 20;  // one JSON string as written (escapes included)
  size_t max_values = size_t(1) << 21;        // JSON values and keys in one line
  size_t max_rank = 64;                       // dimensions of one shape
};

// Which engine an event line (token, figures) belongs to.
enum class TraceEngine { reuse, no_reuse };

// One line each, without the trailing '\n', so a runner or recorder can stream a trace (header
// first, then calls and events as they happen); write_trace uses them for a whole Trace.
std::string trace_header_line(const Trace& t);
std::string trace_call_line(const Trace& t, const TraceCall& c);
std::string trace_view_read_line(const ViewRead& v);
std::string trace_gap_line(const RecordingGap& g);
std::string trace_token_line(TraceEngine e, const TokenStep& s);
std::string trace_verify_line(const VerifyOutput& v);
std::string trace_figures_line(const Trace& t, TraceEngine e);  // seconds when t.timings
std::string trace_end_line(const Trace& t);                     // wall_seconds when t.timings

// The whole trace, '\n' after every line, in the order: header, calls, view reads, reuse
// tokens, no-reuse tokens, verify outputs (caps.verify), figures of the engines that ran
// (reuse: caps.run; no_reuse: caps.no_reuse or caps.verify), end.
void write_trace(std::ostream& out, const Trace& t);

// Reads and validates a trace file; "-" reads stdin (errors then name "<stdin>"). Anything but a
// regular file (a directory, a FIFO, a device) is refused before it is opened. A trace without an
// "end" line (a run that died) is returned as far as it goes.
Result<Trace> read_trace(const std::string& path, const TraceLimits& limits = {});
// The same from a stream; `name` is the file name errors start with.
Result<Trace> read_trace(std::istream& in, const std::string& name, const TraceLimits& limits = {});

}  // namespace bod
