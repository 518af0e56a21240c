// size-mismatch: a reused BO set or pool sees arrays of another size, or another slot count,
// than at its first call.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "size-mismatch", Severity::error,
    "a reused BO set or pool gets arrays of another size or another slot count than at its "
    "first call",
    "stale tail bytes, missing scratch, or a failed call",
    "lint compares each call's slot sizes and count with the first call of its bo_key or alias "
    "pool; the run records every write into a BO of another size",
    "give calls with other shapes or slot lists their own bo_key (or pool name)"};

class SizeMismatch final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }

  void lint(const Plan& p, FindingSink& sink) override {
    std::map<std::string, const PlanCall*> first;
    std::map<std::string, std::pair<size_t, const PlanCall*>> pools;
    for (auto& c : p.calls) {
      auto [it, fresh] = first.emplace(c.bo_key, &c);
      const PlanCall& f0 = *it->second;
      if (!fresh && f0.slot_bytes.size() != c.slot_bytes.size()) {
        emit(sink, c, -1, f0.number,
             "bo_key '" + c.bo_key + "' was created with " + std::to_string(f0.slot_bytes.size()) +
                 " slots at call " + std::to_string(f0.number) + " (" + f0.kernel->name +
                 "); this call passes " + std::to_string(c.slot_bytes.size()));
      }
      for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
        int si = static_cast<int>(s);
        if (c.alias.count(si)) {
          auto [pi, pf] = pools.emplace(c.alias.at(si), std::make_pair(c.slot_bytes[s], &c));
          if (!pf && pi->second.first != c.slot_bytes[s])
            emit(sink, c, si, pi->second.second->number,
                 "alias pool '" + c.alias.at(si) + "' holds " + std::to_string(pi->second.first) +
                     " bytes; slot " + c.kernel->slots[s].name + " needs " +
                     std::to_string(c.slot_bytes[s]));
          continue;
        }
        if (c.shared_nonstatic && !c.is_static(si)) continue;  // pools are keyed by size
        if (fresh || s >= f0.slot_bytes.size() || f0.slot_bytes[s] == c.slot_bytes[s]) continue;
        emit(sink, c, si, f0.number,
             "slot " + c.kernel->slots[s].name + " is " + std::to_string(c.slot_bytes[s]) +
                 " bytes but the BO of '" + c.bo_key + "' was sized " +
                 std::to_string(f0.slot_bytes[s]) + " bytes at call " + std::to_string(f0.number));
      }
    }
  }

  void on_call(const CallRecord& r, FindingSink& sink) override {
    for (auto& s : r.slots)
      if (s.size_mismatch) emit(sink, *r.call, s.slot, r.key_first_call, s.size_note);
  }

 private:
  static void emit(FindingSink& sink, const PlanCall& c, int slot, int first,
                   const std::string& msg) {
    Finding f = make_finding(kInfo, c, slot, first);
    f.message = msg;
    sink.add(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Check> make_size_mismatch() { return std::make_unique<SizeMismatch>(); }
const CheckInfo& size_mismatch_info() { return kInfo; }

}  // namespace bod
