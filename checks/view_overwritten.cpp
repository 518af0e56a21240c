// view-overwritten: a zero-copy output view is read after a later call overwrote its BO.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "view-overwritten", Severity::error,
    "a zero-copy output view is read after a later call overwrote its BO (shared pools, "
    "per-layer captures)",
    "captured activations all equal the last layer's",
    "every output kept as a view remembers the hash of its bytes; reading it later with other "
    "bytes behind it is reported with the call that returned it",
    "keep the output as a copy (\"as\": \"copy\", i.e. np.copy / .clone()) before the next call "
    "that reuses the BO"};

class ViewOverwritten final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_view(const ViewEvent& e, FindingSink& sink) override {
    Finding f;
    f.check = kInfo.id;
    f.severity = kInfo.severity;
    f.call = e.captured_call;
    f.phase = e.phase;
    f.token = e.token;
    f.layer = e.layer;
    f.kernel = e.kernel;
    f.bo_key = e.bo_key;
    f.slot = e.slot;
    f.slot_name = e.slot_name;
    f.path = e.path;
    f.fix = kInfo.fix;
    f.message = "'" + e.var + "' is a view of output " + e.slot_name + " returned by call " +
                std::to_string(e.captured_call) + "; " + e.overwritten_by +
                " overwrote that BO before " + e.reader + " read it";
    f.evidence = {{"returned by call", std::to_string(e.captured_call)}, {"read by", e.reader}};
    sink.add(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Check> make_view_overwritten() { return std::make_unique<ViewOverwritten>(); }
const CheckInfo& view_overwritten_info() { return kInfo; }

}  // namespace bod
