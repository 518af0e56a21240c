// unsynced-read: the host read bytes of a run's output that no sync from the device covered
// after the run: it read its own cache, not what the kernel wrote.
#include "checks/checks.h"
#include "checks/xrt_util.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "unsynced-read",
    Severity::error,
    "the host read bytes of a kernel output (bo.read, or a view of map() such as "
    "np.frombuffer(bo.map(), ..., offset=...)) that no sync from the device covered after the run",
    "the output holds the previous run's values, zeros, or a mix (a read-back range past the "
    "synced one)",
    "a recording at the XRT boundary attributes every read of a BO to the BO's last run and "
    "compares it with the ranges synced FROM_DEVICE since that run started; reads of BOs the host "
    "only ever sends (synced to the device, never fetched back) are the host's own data and do "
    "not count",
    "sync the range you read: bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, size, offset) covering every "
    "byte read, after the run's wait()",
    kNeedXrt,
    0,
    false,
    "the bytes read were never fetched from the device after the kernel wrote them"};

}  // namespace

void run_unsynced_read(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (!s.xrt->is_bo || s.xrt->unsynced_read.empty()) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "the host read " + range_text(s.xrt->unsynced_read) + " of " + xrt_bo_name(s) +
                  " after " + xrt_run_name(c) + " without a sync from the device covering them";
      f.evidence.push_back({"read", xrt_op_text(s.xrt->read_by)});
      f.evidence.push_back(
          {"synced from the device after the run",
           s.xrt->synced_from.empty() ? "nothing" : range_text(s.xrt->synced_from)});
      f.evidence.push_back({"not covered", range_text(s.xrt->unsynced_read) + " (" +
                                               std::to_string(range_bytes(s.xrt->unsynced_read)) +
                                               " bytes)"});
      sink.add(std::move(f));
    }
}

const CheckInfo& unsynced_read_info() {
  return kInfo;
}

}  // namespace bod
