// view-overwritten: a zero-copy output view is read after a later call overwrote its BO.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "view-overwritten",
    Severity::error,
    "a zero-copy output view is read after a later call overwrote its BO (shared pools, "
    "per-layer captures)",
    "captured activations all equal the last layer's",
    "every output kept as a view remembers the hash of its bytes; reading it later with other "
    "bytes behind it is reported with the call that returned it",
    "keep the output as a copy (\"as\": \"copy\", i.e. np.copy / .clone()) before the next call "
    "that reuses the BO",
    kNeedRun,
    0,
    false,
    "the bytes read through the view are no longer the ones the call returned"};

// "the host write of call 12 (o_ffn)", "call 12 (o_ffn, decode t=0 l=1)".
std::string change_text(const Trace& t, const ViewRead& v) {
  const TraceCall* c = t.call(v.overwritten_by);
  if (!c) return "another call";
  std::string n = std::to_string(c->number);
  return v.overwritten_by_host_write
             ? "the host write of call " + n + " (" + c->kernel + ")"
             : "call " + n + " (" + c->kernel + (c->where().empty() ? "" : ", " + c->where()) + ")";
}

}  // namespace

void run_view_overwritten(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& v : t.view_reads) {
    const TraceCall* c = t.call(v.captured_call);
    if (!c) continue;
    Finding f = make_finding(kInfo, *c, v.slot, 0);
    f.key_first_call = 0;
    f.first_call_of_key = false;
    f.message = "'" + v.var + "' is a view of output " + f.slot_name + " returned by call " +
                std::to_string(v.captured_call) + "; " + change_text(t, v) +
                " overwrote that BO before " + v.reader + " read it";
    f.evidence = {{"returned by call", std::to_string(v.captured_call)}, {"read by", v.reader}};
    sink.add(std::move(f));
  }
}

const CheckInfo& view_overwritten_info() {
  return kInfo;
}

}  // namespace bod
