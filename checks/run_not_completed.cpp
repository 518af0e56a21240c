// run-not-completed: the outputs of a run were read although the run was not known to have
// completed: never waited for, read before the wait, or wait() returned another state.
#include "checks/checks.h"
#include "checks/xrt_util.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "run-not-completed",
    Severity::error,
    "a run's buffers were read back (sync from the device, bo.read) although the run was not "
    "known to have completed: before wait(), without one, or after a wait() that returned "
    "timeout, error or abort",
    "partial or previous outputs, intermittently (e.g. a time-out under load)",
    "a recording at the XRT boundary keeps each run's state after wait() and the host operations "
    "made while it was started and not waited for; a sync from the device or a read of a bound BO "
    "in that window, or after a wait that did not return COMPLETED, is reported",
    "wait for the run and check its state: if run.wait(timeout) != ERT_CMD_STATE_COMPLETED, do not "
    "use the outputs (raise, or retry)",
    kNeedXrt,
    0,
    false,
    "the outputs were read with no completed run behind them"};

}  // namespace

void run_run_not_completed(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls) {
    bool bad_state = !c.xrt.state.empty() && c.xrt.state != "completed";
    for (auto& s : c.slots) {
      if (!s.xrt->is_bo) continue;
      const HostOp* early = nullptr;
      for (auto& op : s.xrt->in_flight)
        if (op.op == "read" || op.op == "sync_from") {
          early = &op;
          break;
        }
      bool read_after = !s.xrt->read.empty() || !s.xrt->synced_from.empty();
      if (!early && !(bad_state && read_after)) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      if (early) {
        f.message = xrt_op_text(*early) + " of " + xrt_bo_name(s) + " before " + xrt_run_name(c) +
                    " was waited for" + (c.xrt.state.empty() ? " (it never was)" : "");
        f.evidence.push_back({"host operation", xrt_op_text(*early)});
      } else {
        f.message = "wait() of " + xrt_run_name(c) + " returned " + c.xrt.state + ", and " +
                    xrt_bo_name(s) + " was read back anyway";
        f.evidence.push_back(
            {"read back", range_text(range_union(s.xrt->read, s.xrt->synced_from))});
      }
      f.evidence.push_back({"run state", c.xrt.state.empty() ? "never waited for" : c.xrt.state});
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& run_not_completed_info() {
  return kInfo;
}

}  // namespace bod
