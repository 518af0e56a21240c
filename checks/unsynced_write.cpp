// unsynced-write: bytes of a kernel argument changed on the host after their last sync to the
// device, then a run used the BO: the device read stale bytes.
#include "checks/checks.h"
#include "checks/xrt_util.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "unsynced-write",
    Severity::error,
    "bytes of a kernel argument changed on the host (bo.write, or a store through map()) after "
    "their last sync to the device, and a run then used the BO",
    "the kernel computes on the old bytes: first token right, later tokens garbage",
    "a recording at the XRT boundary tracks, per BO, the host bytes changed since their last "
    "sync(TO_DEVICE) (write() ranges, and a byte comparison of mapped memory at each sync and "
    "run start); at each run start, changed and not yet synced bytes of a bound BO are reported "
    "with the last host change inside them",
    "sync the bytes you changed before starting the run: bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, size, "
    "offset) with a range covering every write (or the whole BO)",
    kNeedXrt,
    0,
    false,
    "the device side of the BO held other bytes than the host meant when the kernel started"};

}  // namespace

void run_unsynced_write(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (!s.xrt->is_bo || s.xrt->unsynced.empty()) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = range_text(s.xrt->unsynced) + " of " + xrt_bo_name(s) +
                  " changed on the host after their last sync to the device; " + xrt_run_name(c) +
                  " read stale bytes there";
      f.evidence.push_back({"unsynced", range_text(s.xrt->unsynced) + " (" +
                                            std::to_string(range_bytes(s.xrt->unsynced)) +
                                            " bytes)"});
      if (!s.xrt->unsynced_by.op.empty())
        f.evidence.push_back({"last host change", xrt_op_text(s.xrt->unsynced_by)});
      f.evidence.push_back({"synced to the device since the BO's previous run",
                            s.xrt->synced_to.empty() ? "nothing" : range_text(s.xrt->synced_to)});
      sink.add(std::move(f));
    }
}

const CheckInfo& unsynced_write_info() {
  return kInfo;
}

}  // namespace bod
