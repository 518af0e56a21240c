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
    "add the slot to static_input_indices (and keep bo_key unique per weight set)"};

class MissedStatic final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void finish(const std::vector<CallRecord>& records, FindingSink& sink) override {
    struct Acc {
      const CallRecord* first = nullptr;
      int calls = 0;
      uint64_t hash = 0;
      bool constant = true;
      size_t bytes = 0;
    };
    std::map<std::pair<std::string, int>, Acc> acc;
    for (auto& r : records) {
      if (r.failed) continue;
      for (auto& s : r.slots) {
        auto& a = acc[{r.call->bo_key, s.slot}];
        bool eligible = s.role == SlotRole::input && !s.output &&
                        s.shadow_post == s.shadow_pre && s.binding.kind != Binding::Kind::zeros;
        if (!a.first) {
          a.first = &r;
          a.hash = s.host_hash;
          a.bytes = s.bytes;
        }
        a.calls++;
        a.constant = a.constant && eligible && s.host_hash == a.hash;
      }
    }
    for (auto& [k, a] : acc) {
      if (!a.constant || a.calls < 2) continue;
      const CallRecord& r = *a.first;
      Finding f = make_finding(kInfo, *r.call, k.second, r.key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + k.first + "' is re-uploaded with the "
                  "same " + std::to_string(a.bytes) + " bytes on all " + std::to_string(a.calls) +
                  " calls; static would save " + std::to_string(a.bytes) + " bytes per later call";
      f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_missed_static() { return std::make_unique<MissedStatic>(); }
const CheckInfo& missed_static_info() { return kInfo; }

}  // namespace bod
