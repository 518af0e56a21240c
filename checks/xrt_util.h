// Shared by the checks of hand-managed BOs (capability xrt): how a slot and its ranges are named
// in a message.
#pragma once
#include <string>

#include "checks/check.h"

namespace bod {

// "BO 2 (arg3, 256 B)".
inline std::string xrt_bo_name(const TraceSlot& s) {
  return "BO " + std::to_string(s.xrt->bo) + " (" + s.name + ", " +
         std::to_string(s.xrt->bo_bytes) + " B)";
}

// "a store through map() at run.py:12" / "bo.write of bytes 0..256".
inline std::string xrt_op_text(const HostOp& op) {
  std::string what = op.op == "store"       ? "a store through map()"
                     : op.op == "write"     ? "bo.write"
                     : op.op == "sync_to"   ? "sync to the device"
                     : op.op == "sync_from" ? "sync from the device"
                     : op.op == "read"      ? "a read"
                                            : op.op;
  what += " of " + range_text({op.range});
  if (!op.at.empty()) what += " at " + op.at;
  return what;
}

// "run 3 (scale)".
inline std::string xrt_run_name(const TraceCall& c) {
  return "run " + std::to_string(c.number) + " (" + c.kernel + ")";
}

}  // namespace bod
