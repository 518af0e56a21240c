// The record tables of the event lines (view reads, tokens, verification, figures, end), and
// the tables as plain data for the schema and documentation printers (trace_records.h).
#include "trace/trace_codecs.h"
#include "trace/trace_records.h"

namespace bod::trace_json {

using namespace codec;

namespace {

// "engine" of a figures line: one that ran, once.
Status get_figures_engine(Cursor& c, const rjson& v, FiguresLine& f, ReadCtx& st) {
  BOD_TRY(f.engine, Enum<Engines>::get(c, v, st));
  bool ran = f.engine == TraceEngine::reuse ? st.t.header.caps.run
                                            : st.t.header.caps.no_reuse || st.t.header.caps.verify;
  int e = static_cast<int>(f.engine);
  if (st.figures[e]) return c.err("a second figures line for this engine");
  if (!ran)
    return c.err(std::string("figures of an engine that did not run: needs capability ") +
                 (f.engine == TraceEngine::reuse ? "\"run\"" : "\"no_reuse\" or \"verify\"") +
                 ", which the header does not declare");
  st.figures[e] = true;
  return ok_status();
}

// The steady-state figures came later than the others: all three or none.
Status steady_all_or_none(Cursor& c, const rjson& o, FiguresLine&, ReadCtx&) {
  const char* keys[] = {"steady_call_median", "steady_calls", "first_calls"};
  int have = 0;
  for (auto* k : keys) have += find(o, k) != nullptr;
  if (have == 0 || have == 3) return ok_status();
  for (auto* k : keys)
    if (!find(o, k)) {
      auto in = c.in(k);
      return missing(c, "a number");
    }
  return ok_status();
}

template <class R>
RecordInfo info(const Record<R>& r) {
  RecordInfo i{r.name, r.line, r.doc, {}};
  for (auto& f : r.fields) i.fields.push_back({f.key, f.gate, f.presence, f.doc, f.schema()});
  return i;
}

}  // namespace

const Record<ViewRead>& view_read_record() {
  using R = ViewRead;
  static const auto r = Record<R>{
      "view_read",
      true,
      "an object",
      "a read of a zero-copy output view whose BO was overwritten since it was returned",
      {
          f<R, &R::var, Str>("var", "the var read, e.g. \"caps[2]\""),
          f<R, &R::reader, Str>("reader", "who read it: \"call 17 (attn)\", a host step, ..."),
          f<R, &R::read_call, CallRef<0>>("read_call", "0 when the reader is not a kernel call"),
          f<R, &R::captured_call, CallRef<1>>("captured_call", "the call that returned the view"),
          f<R, &R::slot, I32>("slot", "its output slot"),
          f<R, &R::overwritten_by, CallRef<1>>("overwritten_by",
                                               "the call that last changed the BO"),
          f<R, &R::overwritten_by_host_write, Bool>("by_host_write",
                                                    "by that call's host write, not its kernel"),
      }}.keyed();
  return r;
}

const Record<RecordingGap>& gap_record() {
  using R = RecordingGap;
  static const auto r = Record<R>{
      "gap",
      true,
      "an object",
      "a stretch of a recording that is missing (bo-doctor record): calls of a process after "
      "after_call are not all in the trace; reports say so beside the verdict",
      {
          f<R, &R::process, Int<0, INT_MAX>>("process", "the recorded process (a call's process)"),
          f<R, &R::after_call, CallRef<0>>("after_call",
                                           "its last call in the trace before the gap; 0: none"),
          f<R, &R::cause, Enum<GapCauses>>(
              "cause",
              "recorder_stopped: the recorder failed at the process's next call and recorded "
              "nothing more there; cut_off: the process died while writing a call's line"),
          f<R, &R::detail, Str>("detail", "what the recorder said, or \"\""),
      }}.keyed();
  return r;
}

const Record<TokenLine>& token_record() {
  using R = TokenLine;
  static const auto r = Record<R>{
      "token",
      true,
      "an object",
      "one generated token (a host argmax) of one engine",
      {
          f<R, &R::engine, Enum<Engines>>("engine", "the engine that generated it"),
          f<R, &TokenStep::token, I32>("token", "the token"),
          f<R, &TokenStep::topk, Ints<int32_t, INT_MIN, INT_MAX>>("topk",
                                                                  "the top-k of its logits"),
      }}.keyed();
  return r;
}

const Record<VerifyOutput>& verify_record() {
  using R = VerifyOutput;
  static const auto r = Record<R>{
      "verify",
      true,
      "an object",
      "capability verify: one output var compared between the two dataflows",
      {
          f<R, &R::var, Str>("var", "the output var"),
          f<R, &R::cosine, Num>("cosine", "cosine similarity"),
          f<R, &R::max_abs, Num>("max_abs", "largest absolute difference"),
          f<R, &R::max_rel, Num>("max_rel", "largest relative difference"),
          f2<R, &R::nan_inf_reuse, &R::nan_inf_noreuse, Count>("nan_inf",
                                                               "NaN or infinite [reuse, no-reuse]"),
      }}.keyed();
  return r;
}

const Record<FiguresLine>& seconds_record() {
  using R = FiguresLine;
  static const auto r =
      Record<R>{
          "seconds",
          false,
          "an object",
          "measured times",
          {
              f<R, &EngineFigures::write_s, Seconds>("write", "host writes and syncs"),
              f<R, &EngineFigures::dispatch_s, Seconds>("dispatch", "kernel dispatches"),
              f<R, &EngineFigures::read_s, Seconds>("read", "output reads"),
              f<R, &EngineFigures::steady_median_s, Seconds>(
                  "steady_call_median", "median time of a call after its key's first call",
                  Gate::none, Presence::optional),
              f<R, &EngineFigures::steady_calls, Int<0>>("steady_calls", "calls in that median",
                                                         Gate::none, Presence::optional),
              f<R, &EngineFigures::first_calls_s, Seconds>(
                  "first_calls", "total of the keys' first calls", Gate::none, Presence::optional),
          },
          &steady_all_or_none}
          .keyed();
  return r;
}

const Record<FiguresLine>& figures_record() {
  using R = FiguresLine;
  static const auto r = Record<R>{
      "figures",
      true,
      "an object",
      "one per engine that ran (reuse: capability run; no_reuse: capability no_reuse or verify)",
      {
          {"engine", Gate::none, Presence::required, "a string", "the engine",
           &put_member<R, Enum<Engines>, &R::engine>, get_figures_engine, &Enum<Engines>::schema},
          f<R, &EngineFigures::calls, Int<0>>("calls", "calls it ran"),
          f<R, &EngineFigures::h2d_bytes, Count>("h2d_bytes", "host-to-device bytes"),
          f<R, &EngineFigures::writes, Int<0>>("bo_writes", "BO writes"),
          obj<R, nullptr, R, seconds_record>("seconds", "when the run measured times",
                                             Gate::timings, Presence::optional),
      }}.keyed();
  return r;
}

const Record<Trace>& end_record() {
  using R = Trace;
  static const auto r = Record<R>{
      "end",
      true,
      "an object",
      "the last line of a finished run",
      {
          f<R, &R::noreuse_extra_calls, Int<0, INT_MAX>>(
              "no_reuse_extra_calls", "calls the no-reuse dataflow ran alone after the split"),
          f<R, &R::wall_s, Seconds>("wall_seconds", "the run's wall time", Gate::timings,
                                    Presence::optional),
      }}.keyed();
  return r;
}

std::vector<RecordInfo> all_records() {
  return {info(header_record()),      info(call_record()),          info(view_read_record()),
          info(gap_record()),         info(token_record()),         info(verify_record()),
          info(figures_record()),     info(end_record()),           info(model_record()),
          info(backend_record()),     info(caps_record()),          info(kernel_record()),
          info(kernel_slot_record()), info(header_verify_record()), info(verify_spec_record()),
          info(labels_record()),      info(slot_record()),          info(host_record()),
          info(bo_record()),          info(access_record()),        info(probe_record()),
          info(output_record()),      info(seconds_record()),       info(xrt_slot_record()),
          info(host_op_record()),     info(xrt_run_record())};
}

ojson shared_defs() {
  auto pair = [](const char* item, const char* doc) {
    return ojson{{"type", "array"}, {"prefixItems", {ref(item), ref(item)}},
                 {"items", false},  {"minItems", 2},
                 {"maxItems", 2},   {"description", doc}};
  };
  ojson d = ojson::object();
  d["x"] = {{"type", "object"},
            {"description", "writer extensions: any content, ignored by the reader"}};
  d["hash"] = {{"type", "string"},
               {"pattern", "^[0-9a-f]{16}$"},
               {"description",
                "XXH3-64 (seed 0) of raw bytes in C order (above 64 KiB: of the 64 KiB chunks' "
                "hashes; trace-format.md, Hashes), 16 lower-case hex digits"}};
  d["num"] = {{"oneOf", {{{"type", "number"}}, {{"enum", {"nan", "inf", "-inf"}}}}},
              {"description", "a number; NaN and infinities as strings"}};
  d["count"] = {{"type", "integer"}, {"minimum", 0}};
  d["int32"] = {{"type", "integer"}, {"minimum", INT_MIN}, {"maximum", INT_MAX}};
  d["call_ref"] = {{"type", "integer"},
                   {"minimum", 0},
                   {"maximum", INT_MAX},
                   {"description",
                    "a call number; the reader also checks that the call was read before (or is "
                    "this call)"}};
  d["slot_index"] = {{"$ref", "#/$defs/int32"},
                     {"description",
                      "as declared; out-of-range indices are reported by the config-error check, "
                      "not refused"}};
  d["dtype"] = Enum<DTypes>::list();
  d["engine"] = Enum<Engines>::list();
  d["counts"] = pair("count", "[reuse engine, no-reuse engine]");
  d["hashes"] = pair("hash", "[before dispatch, after dispatch]");
  return d;
}

}  // namespace bod::trace_json
