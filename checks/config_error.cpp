// config-error: the declared reuse settings of a call contradict each other or the kernel.
#include <set>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "config-error", Severity::error,
    "the declared plan is inconsistent: an index out of range, a slot both static and "
    "intermediate, an output slot declared static, or a duplicate index",
    "the engine indexes the wrong BO or skips a write it needed",
    "lint reads every call's static_input_indices, intermediate_indices and output_indices "
    "against the kernel's slot list",
    "make every index name a real slot once; a slot is static, intermediate or a plain input, "
    "never two of them; outputs are never static"};

class ConfigError final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void lint(const Plan& p, FindingSink& sink) override {
    for (auto& c : p.calls) {
      int n = static_cast<int>(c.kernel->slots.size());
      auto list = [&](const std::vector<SlotRef>& refs, const char* what) {
        std::set<int> seen;
        for (auto& r : refs) {
          if (r.index < 0 || r.index >= n) {
            emit(sink, c, -1, r.path,
                 std::string(what) + " index " + std::to_string(r.index) + " is out of range; " +
                     c.kernel->name + " has slots 0.." + std::to_string(n - 1));
          } else if (!seen.insert(r.index).second) {
            emit(sink, c, r.index, r.path, std::string(what) + " lists slot " +
                                                std::to_string(r.index) + " twice");
          }
        }
      };
      list(c.statics, "static_input_indices");
      list(c.inters, "intermediate_indices");
      list(c.outputs, "output_indices");
      for (auto& [slot, pool] : c.alias)
        if (slot < 0 || slot >= n)
          emit(sink, c, -1, c.where.path + "/shared_alias",
               "shared_alias slot " + std::to_string(slot) + " is out of range; " +
                   c.kernel->name + " has slots 0.." + std::to_string(n - 1));
      for (auto& s : c.statics) {
        if (c.is_inter(s.index))
          emit(sink, c, s.index, s.path, "slot is both static and intermediate");
        if (c.is_output(s.index))
          emit(sink, c, s.index, s.path, "output slot is declared static");
      }
    }
  }

 private:
  static void emit(FindingSink& sink, const PlanCall& c, int slot, const std::string& path,
                   const std::string& msg) {
    Finding f = make_finding(kInfo, c, slot, 0);
    f.path = path;
    f.message = msg;
    sink.add(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Check> make_config_error() { return std::make_unique<ConfigError>(); }
const CheckInfo& config_error_info() { return kInfo; }

}  // namespace bod
