// missed-static (note): a slot's data is identical on every call of a key but uploaded each
// time: a B1 (weight BO) opportunity.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "missed-static", Severity::note,
    "a slot's host data is identical on every call of a bo_key, the kernel never writes it, "
    "yet it is uploaded each time",
    "wasted host->device bytes per call (B1 opportunity)",
    "after the run: for every (bo_key, slot) not static, the host hash never changed over two "
    "or more calls and the BO was never modified by the kernel",
    "add the slot to static_input_indices (and keep bo_key unique per weight set)",
    kNeedRun | kNeedNoReuse, 0, false};

struct Acc {
  const TraceCall* first = nullptr;
  int calls = 0;
  uint64_t hash = 0;
  bool constant = true;
  size_t bytes = 0;
};

}  // namespace

void run_missed_static(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  std::map<std::tuple<std::string, std::string, int>, Acc> acc;  // (ns, key, slot)
  for (auto& c : t.calls) {
    if (c.failed) continue;
    for (auto& s : c.slots) {
      auto& a = acc[{c.ns, c.bo_key, s.slot}];
      bool eligible = s.role == SlotRole::input && !s.output && s.noreuse_post == s.noreuse_pre &&
                      s.host.source != ArraySource::zeros;
      if (!a.first) {
        a.first = &c;
        a.hash = s.host.hash;
        a.bytes = s.host.bytes;
      }
      a.calls++;
      a.constant = a.constant && eligible && s.host.hash == a.hash;
    }
  }
  for (auto& [k, a] : acc) {
    if (!a.constant || a.calls < 2) continue;
    Finding f = make_finding(kInfo, *a.first, std::get<2>(k), a.first->key_first_call);
    f.message = "slot " + f.slot_name + " of bo_key '" + std::get<1>(k) + "' is re-uploaded with "
                "the same " + std::to_string(a.bytes) + " bytes on all " + std::to_string(a.calls) +
                " calls; static would save " + std::to_string(a.bytes) + " bytes per later call";
    f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
    sink.add(std::move(f));
  }
}

const CheckInfo& missed_static_info() { return kInfo; }

}  // namespace bod
