#include "checks/check.h"

namespace bod {

unsigned trace_has(const Capabilities& c) {
  return (c.run ? kNeedRun : 0u) | (c.no_reuse ? kNeedNoReuse : 0u) |
         (c.byte_diffs ? kNeedByteDiffs : 0u) | (c.access ? kNeedAccess : 0u) |
         (c.probe ? kNeedProbe : 0u) | (c.verify ? kNeedVerify : 0u) | (c.xrt ? kNeedXrt : 0u);
}

std::string need_names(unsigned needs) {
  static const char* names[] = {"run",   "no_reuse", "byte_diffs", "access",
                                "probe", "verify",   "xrt"};
  std::string s;
  for (unsigned i = 0; i < 7; ++i)
    if (needs & (1u << i)) s += (s.empty() ? "" : ", ") + std::string(names[i]);
  return s;
}

Finding make_finding(const CheckInfo& info, const TraceCall& c, int slot, int key_first_call) {
  Finding f;
  f.check = info.id;
  f.severity = info.severity;
  f.severity_basis = info.severity_basis;
  f.call = c.number;
  f.phase = c.phase;
  f.token = c.token;
  f.layer = c.layer;
  f.kernel = c.kernel;
  f.bo_key = c.bo_key;
  f.ns = c.ns;
  f.slot = slot;
  if (slot >= 0 && static_cast<size_t>(slot) < c.slots.size())
    f.slot_name = c.slots[static_cast<size_t>(slot)].name;
  f.key_first_call = key_first_call;
  f.first_call_of_key = key_first_call == c.number;
  f.fix = info.fix;
  f.path = c.path;
  return f;
}

}  // namespace bod
