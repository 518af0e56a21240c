// write-in-flight: the host wrote or synced a BO while a started run that uses it had not been
// waited for: the kernel may read either version, or the sync races the kernel's writes.
#include "checks/checks.h"
#include "checks/xrt_util.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "write-in-flight",
    Severity::error,
    "a host write or sync of a BO while a started run that uses it had not been waited for",
    "outputs that change from run to run, or hold a mix of two iterations' data",
    "a recording at the XRT boundary keeps the runs started and not yet waited for; every host "
    "change, sync to the device and sync from the device of a BO one of them binds is recorded "
    "on that run's slot",
    "wait for the run (run.wait()) before touching its buffers, or double-buffer: write the next "
    "iteration's data into another BO",
    kNeedXrt,
    0,
    false,
    "the host changed or moved the BO's bytes while the kernel could be reading or writing them"};

}  // namespace

void run_write_in_flight(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (!s.xrt->is_bo) continue;
      for (auto& op : s.xrt->in_flight) {
        if (op.op == "read") continue;  // reads before completion: run-not-completed
        if (op.op == "sync_from") continue;
        Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
        f.message = xrt_op_text(op) + " of " + xrt_bo_name(s) + " while " + xrt_run_name(c) +
                    ", which binds it, was started and not yet waited for";
        f.evidence.push_back({"host operation", xrt_op_text(op)});
        f.evidence.push_back({"run state", c.xrt.state.empty() ? "never waited for"
                                                               : "waited later: " + c.xrt.state});
        sink.add(std::move(f));
        break;  // one finding per slot and run
      }
    }
}

const CheckInfo& write_in_flight_info() {
  return kInfo;
}

}  // namespace bod
