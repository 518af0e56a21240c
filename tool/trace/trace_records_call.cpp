// The record tables of a call line and its slots (trace_records.h).
#include <algorithm>

#include "trace/trace_codecs.h"
#include "trace/trace_records.h"

namespace bod::trace_json {

using namespace codec;

namespace {

constexpr Gate kRun = Gate::run, kNoReuse = Gate::no_reuse;

// Slot indices as the call declared them: out-of-range ones are the config-error check's.
// At most TraceLimits::max_slots of them, checked before they are read.
struct SlotIndices : Ints<int, INT_MIN, INT_MAX> {
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx& st) {
    if (v.is_array() && v.size() > st.lim.max_slots)
      return c.err(std::to_string(v.size()) + " indices; expected at most " +
                   std::to_string(st.lim.max_slots) +
                   " per list, one per slot (the limit TraceLimits::max_slots)");
    return Ints::get(c, v, st);
  }
  static ojson schema() { return {{"type", "array"}, {"items", ref("slot_index")}}; }
};

// A shape: at most TraceLimits::max_rank dimensions, checked before they are read.
struct Shape : Ints<int64_t, 0, LLONG_MAX> {
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx& st) {
    if (v.is_array() && v.size() > st.lim.max_rank)
      return c.err(std::to_string(v.size()) + " dimensions; expected at most " +
                   std::to_string(st.lim.max_rank) +
                   " dimensions per shape (the limit TraceLimits::max_rank)");
    return Ints::get(c, v, st);
  }
};

// slot index (a decimal string, as std::to_string writes it) -> alias pool name
struct Alias {
  using T = std::map<int, std::string>;
  static constexpr const char* want = "an object";
  static ojson put(const T& a, const WriteCtx&) {
    ojson o = ojson::object();
    for (auto& [slot, name] : a) o[std::to_string(slot)] = name;
    return o;
  }
  // One spelling per slot: no leading zeros, no "+", no "-0".
  static Result<int> slot_key(Cursor& c, const std::string& k) {
    size_t d = !k.empty() && k[0] == '-' ? 1 : 0;
    bool ok = k.size() > d && k.size() - d <= 10 && (k[d] != '0' || k.size() == d + 1) &&
              !(d == 1 && k[1] == '0');
    for (size_t i = d; ok && i < k.size(); ++i) ok = k[i] >= '0' && k[i] <= '9';
    long long v = ok ? std::stoll(k) : 0;
    if (ok && v >= INT_MIN && v <= INT_MAX) return static_cast<int>(v);
    return c.err("expected a slot index as the key (a decimal integer such as \"2\"), found \"" +
                 excerpt(k, kMsgBytes) + "\"");
  }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) {
    BOD_CHECK(object_v(c, v, "an object"));
    T a;
    for (auto it = v.begin(); it != v.end(); ++it) {
      auto at = c.in(it.key());
      BOD_TRY(int slot, slot_key(c, it.key()));
      BOD_TRY(a[slot], str_v(c, it.value()));
    }
    return a;
  }
  static ojson schema() {
    return {{"type", "object"},
            {"propertyNames", {{"pattern", "^(0|-?[1-9][0-9]{0,9})$"}}},
            {"additionalProperties", {{"type", "string"}}}};
  }
};

// "n": the call's number, consecutive from 1 (the reader sets TraceCall::number first).
void put_n(const TraceCall& c, const WriteCtx&, ojson& v) {
  v = c.number;
}
Status get_n(Cursor& c, const rjson& v, TraceCall& call, ReadCtx&) {
  BOD_TRY(long long n, int_v(c, v, LLONG_MIN, LLONG_MAX));
  if (n == call.number) return ok_status();
  return c.err(
      expected(std::to_string(call.number) + " (calls are numbered consecutively from 1)", v));
}

// "kernel": one the header lists.
Status get_kernel(Cursor& c, const rjson& v, TraceCall& call, ReadCtx& st) {
  BOD_TRY(call.kernel, str_v(c, v));
  if (st.kernels.count(call.kernel)) return ok_status();
  std::string names;
  for (auto& k : st.t.header.kernels) names += (names.empty() ? "" : ", ") + k.name;
  return c.err("unknown kernel \"" + excerpt(call.kernel, kMsgBytes) +
               "\"; expected one of the header's kernels: " + excerpt(names, 200));
}

// "slots": as many as the call's kernel has (at most TraceLimits::max_slots).
Status call_slots_count(Cursor& c, const rjson& v, TraceCall& call, ReadCtx& st) {
  BOD_CHECK(slot_limit(c, v, st, "call"));
  // Memory and time follow the slots (about 0.6 KB and 20 us each through analyze, 1 KB
  // through skeleton): counted over the calls before this call's are read.
  if (v.size() > st.lim.max_trace_slots - std::min(st.slots_read, st.lim.max_trace_slots))
    return c.err("more than " + std::to_string(st.lim.max_trace_slots) +
                 " slots in the trace's calls; expected at most " +
                 std::to_string(st.lim.max_trace_slots) +
                 " slots over all calls (the limit TraceLimits::max_trace_slots)");
  st.slots_read += v.size();
  const KernelInfo& k = st.t.header.kernels[st.kernels.at(call.kernel)];
  if (v.size() == k.slots.size()) return ok_status();
  return c.err("expected " + std::to_string(k.slots.size()) + " slots (kernel \"" +
               excerpt(k.name, kMsgBytes) + "\" has " + std::to_string(k.slots.size()) +
               " in the header), found " + std::to_string(v.size()));
}

// Slots take their index and name from the kernel.
Status name_slots(Cursor&, const rjson&, TraceCall& call, ReadCtx& st) {
  const KernelInfo& k = st.t.header.kernels[st.kernels.at(call.kernel)];
  for (size_t i = 0; i < call.slots.size(); ++i) {
    call.slots[i].slot = static_cast<int>(i);
    call.slots[i].name = k.slots[i].name;
  }
  return ok_status();
}

// "view_of_call": the call a view points into, 0 for every other source.
void put_view_of(const HostArray& a, const WriteCtx&, ojson& v) {
  v = a.view_of_call;
}
Status get_view_of(Cursor& c, const rjson& v, HostArray& a, ReadCtx& st) {
  if (a.source == ArraySource::view) {
    BOD_TRY(a.view_of_call, CallRef<1>::get(c, v, st));
    return ok_status();
  }
  BOD_TRY(long long x, int_v(c, v, INT_MIN, INT_MAX));
  if (x == 0) return ok_status();
  return c.err(expected(
      "0 (the source is \"" + std::string(array_source_name(a.source)) + "\", not \"view\")", v));
}

bool probed(const TraceSlot& s) {
  return s.probe.probed;
}
Status mark_probed(Cursor&, const rjson&, ProbeResult& p, ReadCtx&) {
  p.probed = true;
  return ok_status();
}

bool on_another_thread(const TraceCall& c) {
  return c.thread != 0;
}

bool in_another_process(const TraceCall& c) {
  return c.process != 0;
}

bool not_shadowed(const TraceCall& c) {
  return c.shadow_like != 0;
}

// "shadow_like": an earlier call (the no-reuse run of this one was not made); such a call
// compares no outputs.
Status get_shadow_like(Cursor& c, const rjson& v, TraceCall& call, ReadCtx& st) {
  BOD_TRY(call.shadow_like, CallRef<1>::get(c, v, st));
  if (call.shadow_like >= call.number)
    return c.err(
        expected("an earlier call than this one (" + std::to_string(call.number) + ")", v));
  if (!call.outputs_cmp.empty())
    return c.err("a call that was not shadowed has no output comparisons; found " +
                 std::to_string(call.outputs_cmp.size()) + " in \"outputs\"");
  return ok_status();
}

bool rewritten(const BodyAccess& a) {
  return a.rewritten_before_read;
}

}  // namespace

const Record<TraceCall>& labels_record() {
  using R = TraceCall;
  static const auto r = Record<R>{
      "labels",
      false,
      "an object",
      "where the call sits in the program",
      {
          f<R, &R::phase, Str>("phase", "prefill, decode, ...; empty when unknown"),
          f<R, &R::token, Int<-1>>("token", "token index; -1 when unknown"),
          f<R, &R::layer, Int<-1>>("layer", "layer index; -1 when unknown"),
      }}.keyed();
  return r;
}

const Record<HostArray>& host_record() {
  using R = HostArray;
  static const auto r = Record<R>{
      "host",
      false,
      "an object",
      "the host array the caller passed",
      {
          f<R, &R::shape, Shape>("shape", "its shape"),
          f<R, &R::dtype, Enum<DTypes>>("dtype", "its element type"),
          f<R, &R::bytes, Count>("bytes", "its size in bytes"),
          f<R, &R::hash, Hash>("hash", "hash of the bytes the reuse engine was given"),
          f<R, &R::source, Enum<Sources>>("source", "where it came from"),
          f<R, &R::name, Str>("name", "the binding as written: \"wq[2]\", \"x\", \"zeros\""),
          {"view_of_call", Gate::none, Presence::required, "an integer",
           "source view: the call whose BO it points into; otherwise 0", put_view_of, get_view_of,
           &CallRef<0>::schema},
      }}.keyed();
  return r;
}

const Record<Placement>& bo_record() {
  using R = Placement;
  static const auto r = Record<R>{
      "bo",
      false,
      "an object",
      "the BO the reuse engine puts the slot in",
      {
          f<R, &R::ns, Str>("ns", "cache instance; empty when the engine has one"),
          f<R, &R::pool, Enum<Pools>>("pool", "the table that owns the BO"),
          f<R, &R::name, Str>("name",
                              "key, unbound: the bo_key; shared: the kernel; alias: the pool"),
          f<R, &R::index, I32>("index", "key, shared, unbound: slot index; alias: -1"),
          f<R, &R::bytes, Count>("bytes", "the BO's size, set by the key's first call"),
          f<R, &R::first_call, CallRef<1>>("first_call", "first call that used this BO"),
      }}.keyed();
  return r;
}

const Record<BodyAccess>& access_record() {
  using R = BodyAccess;
  static const auto r = Record<R>{
      "access",
      false,
      "an object",
      "the kernel's access to the slot",
      {
          f<R, &R::reads_before_write, Bool>("reads_before_write",
                                             "some op reads it before it is fully written"),
          f<R, &R::overwritten, Bool>("overwritten", "fully written before any read"),
          f<R, &R::written, Bool>("written", "written at all"),
          f<R, &R::rewritten_before_read, Bool>(
              "rewritten_before_read",
              "every byte the kernel writes it writes before reading it; written only when true",
              Gate::none, Presence::optional, rewritten),
      }}.keyed();
  return r;
}

const Record<ProbeResult>& probe_record() {
  using R = ProbeResult;
  static const auto r =
      Record<R>{
          "probe",
          false,
          "an object",
          "a canary run of the slot",
          {
              f<R, &R::read, Bool>("read", "a canary in this slot changed the outputs"),
              f<R, &R::unwritten_bytes, Count>("unwritten_bytes", "bytes that kept the canary"),
          },
          &mark_probed}
          .keyed();
  return r;
}

const Record<TraceSlot>& slot_record() {
  using R = TraceSlot;
  static const auto r = Record<R>{
      "slot",
      false,
      "an object (a slot)",
      "one kernel slot; capability fields are present exactly when the header declares the "
      "capability (checked by the reader)",
      {
          f<R, &R::role, Enum<Roles>>("role", "as the call declared it"),
          f<R, &R::output, Bool>("output", "an output slot of the call"),
          obj<R, &R::host, HostArray, host_record>("host", "the host array"),
          obj<R, &R::place, Placement, bo_record>("bo", "its BO in the reuse engine"),
          obj<R, &R::access, BodyAccess, access_record>("access", "the kernel's access",
                                                        Gate::access),
          f<R, &R::bo_bytes, Count>("bo_bytes", "the BO's size", kRun),
          f<R, &R::written, Bool>("written", "host write and sync happened this call", kRun),
          f<R, &R::written_bytes, Count>("written_bytes", "bytes written", kRun),
          f<R, &R::written_hash, Hash>("written_hash", "hash of the bytes written; 0 when none",
                                       kRun),
          f2<R, &R::reuse_pre, &R::reuse_post, Hash>("reuse", "reuse BO [before, after] dispatch",
                                                     kRun),
          f2<R, &R::noreuse_pre, &R::noreuse_post, Hash>(
              "no_reuse", "no-reuse BO [before, after] dispatch", kNoReuse),
          f2<R, &R::diff_bytes, &R::stale_diff_bytes, Count>(
              "diff", "[bytes that differ after dispatch, of which stale]", Gate::byte_diffs),
          obj<R, &R::probe, ProbeResult, probe_record>("probe", "only on probed slots", Gate::probe,
                                                       Presence::optional, probed),
          obj<R, &R::xrt, XrtSlot, xrt_slot_record>(
              "xrt", "the host's operations on the slot's BO around the run", Gate::xrt),
      }}.keyed();
  return r;
}

const Record<OutputMetrics>& output_record() {
  using R = OutputMetrics;
  static const auto r = Record<R>{
      "output",
      false,
      "an object (an output comparison)",
      "one output slot compared between the engines",
      {
          f<R, &R::slot, I32>("slot", "the output slot"),
          f<R, &R::bit_exact, Bool>("bit_exact", "the engines' bytes are equal"),
          f<R, &R::cosine, Num>("cosine", "cosine similarity, reuse vs no-reuse"),
          f<R, &R::max_abs, Num>("max_abs", "largest absolute difference"),
          f<R, &R::max_rel, Num>("max_rel", "largest relative difference"),
          f2<R, &R::nan_reuse, &R::nan_noreuse, Count>("nan", "NaN elements [reuse, no-reuse]"),
          f2<R, &R::inf_reuse, &R::inf_noreuse, Count>("inf",
                                                       "infinite elements [reuse, no-reuse]"),
          f<R, &R::elements, Int<0>>("elements", "elements compared"),
      }}.keyed();
  return r;
}

const Record<TraceCall>& call_record() {
  using R = TraceCall;
  static const auto r =
      Record<R>{
          "call",
          true,
          "an object",
          "one kernel call; run and no_reuse fields as the header's capabilities say",
          {
              {"n", Gate::none, Presence::required, "an integer", "1, 2, 3, ... consecutive", put_n,
               get_n,
               [] {
                 return ojson{{"type", "integer"}, {"minimum", 1}};
               }},
              f<R, &R::ns, Str>("ns", "cache instance"),
              {"kernel", Gate::none, Presence::required, "a string", "a kernel of the header",
               &put_member<R, Str, &R::kernel>, get_kernel, &Str::schema},
              f<R, &R::bo_key, Str>("bo_key", "the key the engine keeps the call's BOs under"),
              f<R, &R::bo_key_template, Str>("bo_key_template",
                                             "the key as written, before formatting"),
              f<R, &R::statics, SlotIndices>("static", "static_input_indices as declared"),
              f<R, &R::inters, SlotIndices>("intermediate", "intermediate_indices as declared"),
              f<R, &R::outputs, SlotIndices>("output", "output slots as declared"),
              f<R, &R::shared_nonstatic, Bool>("shared_nonstatic", "non-static slots share pools"),
              f<R, &R::alias, Alias>("alias", "slot index (decimal string) -> alias pool"),
              obj<R, nullptr, R, labels_record>("labels", "phase, token, layer"),
              f<R, &R::path, Str>("path", "source location: a JSON pointer or file:line"),
              f<R, &R::key_first_call, CallRef<1>>("key_first_call",
                                                   "first call of this bo_key in this namespace"),
              list<R, &R::slots, TraceSlot, slot_record, call_slots_count>(
                  "slots", "exactly as many as the kernel has"),
              f<R, &R::failed, Bool>("failed", "the reuse engine raised instead of running", kRun),
              f<R, &R::error, Str>("error", "what it raised", kRun),
              f2<R, &R::h2d_reuse, &R::h2d_noreuse, Count, true>(
                  "h2d", "host-to-device bytes [reuse, no-reuse]; second 0 without no_reuse", kRun),
              f2<R, &R::writes_reuse, &R::writes_noreuse, Count32, true>(
                  "writes", "BO writes [reuse, no-reuse]; second 0 without no_reuse", kRun),
              list<R, &R::outputs_cmp, OutputMetrics, output_record>(
                  "outputs", "output comparisons", kNoReuse),
              {"shadow_like", kNoReuse, Presence::optional, "a call number",
               "the call did not run on the no-reuse engine (record --shadow shadows a "
               "selection): this earlier call, of the same kernel, binary, shapes and kind of "
               "before-state difference, did, with bit-identical outputs and its static slots "
               "unchanged; its no_reuse after-hashes are 0 and \"outputs\" is empty; written "
               "only on such a call",
               &put_member<R, CallRef<1>, &R::shadow_like>, get_shadow_like, &CallRef<1>::schema,
               not_shadowed},
              f<R, &R::thread, Int<0, INT_MAX>>(
                  "thread",
                  "the thread that made the call, in order of first call; written when not 0",
                  Gate::none, Presence::optional, on_another_thread),
              f<R, &R::process, Int<0, INT_MAX>>(
                  "process",
                  "the recorded process that made the call, in order of start (its cache "
                  "namespaces end in @p<process>); written when not 0",
                  Gate::none, Presence::optional, in_another_process),
              obj<R, &R::xrt, XrtRun, xrt_run_record>("xrt", "the run: its number and state",
                                                      Gate::xrt),
          },
          &name_slots}
          .keyed();
  return r;
}

}  // namespace bod::trace_json
