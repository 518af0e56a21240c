// The trace contract, once: every record of a trace line (header, call, slot, host array, BO,
// access, probe, outputs, events) is a table of fields. A row names its JSON key, the
// capability that gates it, whether it may be absent, the member it maps to (through a codec
// that writes, reads and describes one JSON value), its limit and one line of documentation.
// One generic writer and one generic reader walk the tables (key order = table order), and the
// same tables print docs/trace.schema.json and the field reference in docs/trace-format.md
// (trace_schema.h). Adding a trace fact is one row here, plus its producer and its consumer.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"
#include "trace/trace_cursor.h"
#include "trace/trace_io.h"

namespace bod::trace_json {

// What a field depends on: a capability the header declares, or measured times.
enum class Gate : uint8_t { none, run, no_reuse, byte_diffs, access, probe, verify, timings, xrt };
const char* gate_name(Gate g);  // "run", ... ("" for none)

enum class Presence : uint8_t {
  required,  // present whenever its gate is open
  optional,  // may be absent (older traces, facts that are rare); absent reads as the default
};

struct WriteCtx {
  const Capabilities& caps;
  bool timings = false;
};

// The reader's state across the lines of one trace.
struct ReadCtx {
  explicit ReadCtx(const TraceLimits& l) : lim(l) {}
  const TraceLimits& lim;
  Trace t;
  bool have_header = false;
  std::map<std::string, size_t> kernels;  // name -> index in t.header.kernels
  bool figures[2] = {false, false};       // per TraceEngine: a figures line was read
  size_t end_line = 0;                    // line of the "end" event, 0 before it
  int ref_hi = 0;         // the highest call number a call reference on this line may name
  size_t slots_read = 0;  // slots of the calls so far (TraceLimits::max_trace_slots)
};

bool gate_open(Gate g, const Capabilities& caps, bool timings);

template <class R>
struct Field {
  const char* key;
  Gate gate;
  Presence presence;
  const char* want;  // what the value is, for "missing required field (expected WANT)"
  const char* doc;
  void (*write)(const R&, const WriteCtx&, ojson& value);
  Status (*read)(Cursor&, const rjson& value, R&, ReadCtx&);  // the cursor is at the key
  ojson (*schema)();
  bool (*present)(const R&) = nullptr;  // written only when this is true (null: always)
};

template <class R>
struct Record {
  const char* name;  // the $defs name; for a line also its "type"
  bool line;         // a line of its own, "type" first
  const char* want;  // what an element that is not an object was expected to be
  const char* doc;
  std::vector<Field<R>> fields;
  Status (*check)(Cursor&, const rjson&, R&, ReadCtx&) = nullptr;  // after the fields
  std::vector<const char*> keys = {};  // "type" (lines), then the fields' keys: see keyed()
  // The keys sorted as an object's keys iterate, each with its field's index (-1: "type"):
  // read_record matches an object to its fields in one merge (see there).
  std::vector<std::pair<std::string_view, int>> sorted = {};

  Record&& keyed() && {
    if (line) keys.push_back("type");
    for (auto& f : fields) keys.push_back(f.key);
    if (line) sorted.emplace_back("type", -1);
    for (size_t i = 0; i < fields.size(); ++i)
      sorted.emplace_back(fields[i].key, static_cast<int>(i));
    std::sort(sorted.begin(), sorted.end());
    return std::move(*this);
  }
};

template <class R>
ojson write_record(const Record<R>& rec, const R& r, const WriteCtx& w) {
  ojson j = ojson::object();
  if (rec.line) j["type"] = rec.name;
  for (auto& f : rec.fields)
    if (gate_open(f.gate, w.caps, w.timings) && (!f.present || f.present(r)))
      f.write(r, w, j[f.key]);
  return j;
}

// Unknown keys, then fields of capabilities the header does not declare, then every field in
// table order; the record's own check last. An object's keys iterate sorted (rjson's objects are
// std::maps), so one merge with the record's sorted keys finds every field's value and the
// first unknown key: linear in keys + fields, no lookup per field.
template <class R>
Status read_record(Cursor& c, const rjson& o, const Record<R>& rec, R& r, ReadCtx& st) {
  constexpr size_t kInline = 64;
  const rjson* inline_vals[kInline];
  std::vector<const rjson*> more;
  const rjson** vals = inline_vals;
  if (rec.fields.size() > kInline) {
    more.resize(rec.fields.size());
    vals = more.data();
  }
  std::fill(vals, vals + rec.fields.size(), nullptr);
  auto k = rec.sorted.begin(), k_end = rec.sorted.end();
  for (auto it = o.begin(); it != o.end(); ++it) {
    std::string_view key = it.key();
    while (k != k_end && k->first < key) ++k;
    if (k != k_end && k->first == key) {
      if (k->second >= 0) vals[k->second] = &it.value();
      continue;
    }
    BOD_CHECK(unknown_key(c, key, it.value(), rec.keys));
  }
  const Capabilities& caps = st.t.header.caps;
  for (size_t i = 0; i < rec.fields.size(); ++i)
    if (vals[i] && !gate_open(rec.fields[i].gate, caps, true)) {
      auto in = c.in(rec.fields[i].key);
      return c.err("found " + quote(*vals[i]) + ", but this field needs capability \"" +
                   gate_name(rec.fields[i].gate) + "\", which the header does not declare");
    }
  for (size_t i = 0; i < rec.fields.size(); ++i) {
    auto& f = rec.fields[i];
    if (!gate_open(f.gate, caps, true)) continue;
    auto in = c.in(f.key);
    if (!vals[i]) {
      if (f.presence == Presence::optional) continue;
      return missing(c, f.want);
    }
    BOD_CHECK(f.read(c, *vals[i], r, st));
  }
  if (rec.check) BOD_CHECK(rec.check(c, o, r, st));
  return ok_status();
}

// The lines whose record is not a Trace type of its own.
struct TokenLine : TokenStep {
  TraceEngine engine = TraceEngine::reuse;
};
struct FiguresLine : EngineFigures {
  TraceEngine engine = TraceEngine::reuse;
};

// The lines.
const Record<TraceHeader>& header_record();
const Record<TraceCall>& call_record();
const Record<ViewRead>& view_read_record();
const Record<RecordingGap>& gap_record();
const Record<TokenLine>& token_record();
const Record<VerifyOutput>& verify_record();
const Record<FiguresLine>& figures_record();
const Record<Trace>& end_record();
// The objects inside them.
const Record<TraceHeader>& model_record();
const Record<TraceHeader>& backend_record();
const Record<Capabilities>& caps_record();
const Record<KernelInfo>& kernel_record();
const Record<KernelSlotInfo>& kernel_slot_record();
const Record<TraceHeader>& header_verify_record();
const Record<VerifySpec>& verify_spec_record();
const Record<TraceCall>& labels_record();
const Record<TraceSlot>& slot_record();
const Record<HostArray>& host_record();
const Record<Placement>& bo_record();
const Record<BodyAccess>& access_record();
const Record<ProbeResult>& probe_record();
const Record<OutputMetrics>& output_record();
const Record<FiguresLine>& seconds_record();
const Record<XrtSlot>& xrt_slot_record();  // trace_records_xrt.cpp
const Record<HostOp>& host_op_record();
const Record<XrtRun>& xrt_run_record();

// The tables without their types, for the schema and documentation printers.
struct FieldInfo {
  const char* key;
  Gate gate;
  Presence presence;
  const char* doc;
  ojson schema;
};
struct RecordInfo {
  const char* name;
  bool line;
  const char* doc;
  std::vector<FieldInfo> fields;
};
std::vector<RecordInfo> all_records();  // every record, lines first, in the order of the format
ojson shared_defs();                    // the value types the records refer to ($defs)

}  // namespace bod::trace_json
