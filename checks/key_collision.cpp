// key-collision: one bo_key serves calls that bind different static data (the key lacks the
// layer index), so later layers run on the first layer's resident weights.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "key-collision",
    Severity::error,
    "one bo_key serves calls that bind different static data (layer 1 runs on layer 0's "
    "weights: the bo_key lacks the layer index, or falls back to the kernel name)",
    "garbage or NaN from the second layer on",
    "lint: calls of one bo_key bind different tensors to a static slot; run: a skipped static "
    "slot's BO differs from what the no-reuse engine writes there (its fresh BO, or without "
    "--shadow the host array the call passed), and the data the calls of the key pass in that "
    "slot comes back after other data (A, B, A): several data sets share one BO",
    "make bo_key unique per distinct weight set, e.g. bo_key=\"<kernel>_L{l}\"",
    kNeedRun,
    kNeedNoReuse,
    true,
    "calls of one bo_key bind different static data, and the later ones run on what the first call "
    "uploaded"};

// From the declarations alone: one key, one static slot, two tensors.
void declared(const Trace& t, FindingSink& sink) {
  if (!t.header.named_bindings) return;  // a recorder's names (its labels) are no evidence
  // (namespace, key, slot) -> first binding
  // (std::less<>: looked up by reference, so no key is copied on the calls that find one)
  std::map<std::tuple<std::string, std::string, int>, std::string, std::less<>> bound;
  for (auto& c : t.calls) {
    for (int s : c.statics) {
      if (s < 0 || static_cast<size_t>(s) >= c.slots.size()) continue;
      const HostArray& h = c.slots[static_cast<size_t>(s)].host;
      if (h.source != ArraySource::tensor && h.source != ArraySource::placeholder) continue;
      auto it = bound.find(std::tie(c.ns, c.bo_key, s));
      if (it == bound.end()) {
        bound.emplace(std::make_tuple(c.ns, c.bo_key, s), h.name);
        continue;
      }
      if (it->second == h.name) continue;
      Finding f = make_finding(kInfo, c, s, c.key_first_call);
      f.message = "bo_key '" + c.bo_key + "' already holds '" + it->second + "' in static slot " +
                  f.slot_name + "; this call binds '" + h.name + "', which will not be written";
      f.evidence = {{"resident binding", it->second}, {"this binding", h.name}};
      sink.add(std::move(f));
    }
  }
}

}  // namespace

void run_key_collision(const Trace& t, FindingSink& sink) {
  declared(t, sink);
  if (lacks(t, kInfo)) return;
  for (const StaleStatic& x : stale_statics(t)) {
    if (!x.collision) continue;  // data that moves on: stale-static
    const TraceCall& c = *x.call;
    const TraceSlot& s = *x.slot;
    const Resident& r = x.resident;
    Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
    f.message = "static slot " + s.name + " should hold '" + s.host.name + "' but the BO of '" +
                c.bo_key + "' still holds '" + std::string(r.binding) + "' from call " +
                std::to_string(r.call);
    f.evidence = before_evidence(t, s);
    f.evidence.push_back({"resident binding", std::string(r.binding)});
    benign_by_outputs(t, c, f);
    sink.add(std::move(f));
  }
}

const CheckInfo& key_collision_info() {
  return kInfo;
}

}  // namespace bod
