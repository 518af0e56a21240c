// The record tables of the trace format, version 1 (trace_records.h). One table per record, its
// rows in the order the writer writes them; each row's doc is the field's line in the reference
// (docs/trace-format.md, "Fields") and its schema description (docs/trace.schema.json).
#include "trace/trace_records.h"

#include "trace/trace_codecs.h"

namespace bod::trace_json {

const char* gate_name(Gate g) {
  static const char* const names[] = {"",      "run",    "no_reuse", "byte_diffs", "access",
                                      "probe", "verify", "timings",  "xrt"};
  return names[static_cast<int>(g)];
}

bool gate_open(Gate g, const Capabilities& caps, bool timings) {
  switch (g) {
    case Gate::none:
      return true;
    case Gate::run:
      return caps.run;
    case Gate::no_reuse:
      return caps.no_reuse;
    case Gate::byte_diffs:
      return caps.byte_diffs;
    case Gate::access:
      return caps.access;
    case Gate::probe:
      return caps.probe;
    case Gate::verify:
      return caps.verify;
    case Gate::timings:
      return timings;
    case Gate::xrt:
      return caps.xrt;
  }
  return false;
}

using namespace codec;

namespace {

Status no_read(Cursor&, const rjson&, TraceHeader&, ReadCtx&) {
  return ok_status();  // "trace" and "version" are read first, by the line reader
}

// no_reuse needs run or xrt, probe needs run, byte_diffs needs no_reuse.
Status caps_need(Cursor& c, const rjson&, Capabilities& caps, ReadCtx&);
Status kernel_slots_limit(Cursor& c, const rjson& v, KernelInfo&, ReadCtx& st) {
  return slot_limit(c, v, st, "kernel");
}
Status unique_kernels(Cursor& c, const rjson&, TraceHeader& h, ReadCtx&);
bool xrt_recorded(const Capabilities& c) {
  return c.xrt;
}
bool made_up_names(const TraceHeader& h) {
  return !h.named_bindings;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Header

const Record<TraceHeader>& model_record() {
  using R = TraceHeader;
  static const auto r = Record<R>{
      "model",
      false,
      "an object",
      "what ran",
      {
          f<R, &R::model_name, Str>("name", "the model's name"),
          f<R, &R::model_path, Str>("path", "the file call paths point into"),
      }}.keyed();
  return r;
}

const Record<TraceHeader>& backend_record() {
  using R = TraceHeader;
  static const auto r = Record<R>{
      "backend",
      false,
      "an object",
      "where it ran",
      {
          f<R, &R::backend, Str>("name", "cpu, xrt, npu, or a recorder's device name"),
          f<R, &R::host_emulated, Bool>("host_emulated", "kernels ran as host reference bodies"),
          f<R, &R::npu_launched, Bool>("npu_launched", "kernels ran on an NPU"),
      }}.keyed();
  return r;
}

namespace {
Status caps_need(Cursor& c, const rjson&, Capabilities& caps, ReadCtx&) {
  struct Need {
    bool has;
    const char* key;
    bool met;
    const char* need;
    const char* why;
  };
  for (const Need& n :
       {Need{caps.no_reuse, "no_reuse", caps.run || caps.xrt, "run\" or \"xrt",
             "no-reuse results are compared with the reuse engine's, or with the recorded "
             "runs'"},
        Need{caps.byte_diffs, "byte_diffs", caps.no_reuse, "no_reuse",
             "byte diffs compare the two engines' slots"},
        Need{caps.probe, "probe", caps.run, "run", "probes are runs of the reuse engine"}})
    if (n.has && !n.met) {
      auto k = c.in(n.key);
      return c.err(std::string("true needs \"") + n.need + "\": true as well (" + n.why + ")");
    }
  return ok_status();
}
}  // namespace

const Record<Capabilities>& caps_record() {
  using R = Capabilities;
  static const auto r =
      Record<R>{
          "capabilities",
          false,
          "an object",
          "what the trace carries beyond the calls' identities; no_reuse needs run (or xrt: "
          "record --xrt --shadow), byte_diffs needs no_reuse, probe needs run",
          {
              f<R, &R::run, Bool>("run", "the reuse engine ran: placements, writes, BO hashes"),
              f<R, &R::no_reuse, Bool>("no_reuse", "each call also ran on the no-reuse engine"),
              f<R, &R::byte_diffs, Bool>("byte_diffs",
                                         "byte counts of slots that differ after dispatch"),
              f<R, &R::access, Bool>("access",
                                     "per slot: read before written, overwritten, written"),
              f<R, &R::probe, Bool>("probe", "canary probes of (some) slots"),
              f<R, &R::verify, Bool>("verify", "end-to-end comparison of the two dataflows"),
              f<R, &R::xrt, Bool>("xrt",
                                  "recorded at the XRT boundary (hand-managed BOs); written only "
                                  "when true",
                                  Gate::none, Presence::optional, xrt_recorded),
          },
          &caps_need}
          .keyed();
  return r;
}

const Record<KernelSlotInfo>& kernel_slot_record() {
  using R = KernelSlotInfo;
  static const auto r = Record<R>{
      "kernel_slot",
      false,
      "an object {\"name\", \"dtype\"}",
      "one argument of a kernel",
      {
          f<R, &R::name, Str>("name", "the slot's name"),
          f<R, &R::dtype, Enum<DTypes>>("dtype", "its element type"),
      }}.keyed();
  return r;
}

const Record<KernelInfo>& kernel_record() {
  using R = KernelInfo;
  static const auto r = Record<R>{
      "kernel",
      false,
      "an object {\"name\", \"slots\", \"binary\"}",
      "one kernel the calls name",
      {
          f<R, &R::name, Str>("name", "unique in the header"),
          list<R, &R::slots, KernelSlotInfo, kernel_slot_record, kernel_slots_limit>(
              "slots", "its arguments, in order (at most TraceLimits::max_slots)"),
          f<R, &R::binary, Str>("binary", "NPU binary path; empty when none"),
      }}.keyed();
  return r;
}

const Record<VerifySpec>& verify_spec_record() {
  using R = VerifySpec;
  static const auto r = Record<R>{
      "verify_spec",
      false,
      "an object {\"var\", \"min_cosine\", \"atol\", \"rtol\"}",
      "tolerances of one end-to-end output",
      {
          f<R, &R::var, Str>("var", "the output variable"),
          f<R, &R::min_cosine, Num>("min_cosine", "lowest cosine that passes"),
          f<R, &R::atol, Num>("atol", "absolute tolerance; negative: not checked"),
          f<R, &R::rtol, Num>("rtol", "relative tolerance; negative: not checked"),
      }}.keyed();
  return r;
}

const Record<TraceHeader>& header_verify_record() {
  using R = TraceHeader;
  static const auto r = Record<R>{
      "header_verify",
      false,
      "an object",
      "how the end-to-end verification judges",
      {
          f<R, &R::top_k, Int<0, INT_MAX>>("top_k", "greedy tokens are compared within the top k"),
          list<R, &R::verify, VerifySpec, verify_spec_record>("outputs", "the outputs compared"),
      }}.keyed();
  return r;
}

namespace {
// Kernel names are unique.
Status unique_kernels(Cursor& c, const rjson&, TraceHeader& h, ReadCtx&) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < h.kernels.size(); ++i) {
    auto [it, fresh] = seen.emplace(h.kernels[i].name, i);
    if (fresh) continue;
    auto in = c.in("kernels");
    auto at = c.in(i);
    auto n = c.in("name");
    return c.err("kernel \"" + excerpt(h.kernels[i].name, kMsgBytes) +
                 "\" is already listed at /kernels/" + std::to_string(it->second) +
                 "; kernel names must be unique");
  }
  return ok_status();
}

}  // namespace

const Record<TraceHeader>& header_record() {
  using R = TraceHeader;
  auto magic = [](const R&, const WriteCtx&, ojson& v) { v = "bo-doctor"; };
  auto version = [](const R&, const WriteCtx&, ojson& v) { v = kTraceVersion; };
  static const auto r =
      Record<R>{
          "header",
          false,
          "an object",
          "line 1",
          {
              {"trace", Gate::none, Presence::required, "\"bo-doctor\"", "always \"bo-doctor\"",
               magic, no_read,
               [] {
                 return ojson{{"const", "bo-doctor"}};
               }},
              {"version", Gate::none, Presence::required, "an integer",
               "format version; readers refuse newer ones", version, no_read,
               [] {
                 return ojson{{"const", kTraceVersion}};
               }},
              f<R, &R::producer, Str>("producer",
                                      "what wrote the trace: \"bo-doctor 0.1.0 check\", ..."),
              obj<R, nullptr, R, model_record>("model", "what ran"),
              obj<R, nullptr, R, backend_record>("backend", "where it ran"),
              obj<R, &R::caps, Capabilities, caps_record>("capabilities", "what the trace carries"),
              list<R, &R::kernels, KernelInfo, kernel_record>("kernels", "kernel names are unique"),
              obj<R, nullptr, R, header_verify_record>("verify", "the verification's tolerances"),
              f<R, &R::named_bindings, Bool>("named_bindings",
                                             "false when host binding names were made up by a "
                                             "recorder (no check relies on them); "
                                             "written only when false",
                                             Gate::none, Presence::optional, made_up_names),
          },
          &unique_kernels}
          .keyed();
  return r;
}

}  // namespace bod::trace_json
