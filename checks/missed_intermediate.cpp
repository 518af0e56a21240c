// missed-intermediate (note): a slot the kernel always fully overwrites before reading is
// still uploaded each call: a B2 (intermediate BO) opportunity.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "missed-intermediate", Severity::note,
    "a slot is always fully overwritten by the kernel before any read, yet uploaded each call",
    "wasted host->device bytes per call (B2 opportunity)",
    "after the run: for every (bo_key, slot) not intermediate or static, the reference body "
    "writes the whole slot before reading it and the kernel changed it on every call",
    "add the slot to intermediate_indices"};

class MissedIntermediate final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void finish(const std::vector<CallRecord>& records, FindingSink& sink) override {
    struct Acc {
      const CallRecord* first = nullptr;
      int calls = 0;
      bool always = true;
      size_t bytes = 0;
    };
    std::map<std::pair<std::string, int>, Acc> acc;
    for (auto& r : records) {
      if (r.failed) continue;
      for (auto& s : r.slots) {
        auto& a = acc[{r.call->bo_key, s.slot}];
        if (!a.first) {
          a.first = &r;
          a.bytes = s.bytes;
        }
        a.calls++;
        a.always = a.always && s.role == SlotRole::input && s.kernel_overwrites && s.written;
      }
    }
    for (auto& [k, a] : acc) {
      if (!a.always || a.calls < 2) continue;
      const CallRecord& r = *a.first;
      Finding f = make_finding(kInfo, *r.call, k.second, r.key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + k.first + "' is overwritten by the "
                  "kernel before any read on all " + std::to_string(a.calls) +
                  " calls but uploaded each time; intermediate would save " +
                  std::to_string(a.bytes) + " bytes per later call";
      f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_missed_intermediate() {
  return std::make_unique<MissedIntermediate>();
}
const CheckInfo& missed_intermediate_info() { return kInfo; }

}  // namespace bod
