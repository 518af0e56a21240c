#include "checks/check.h"

namespace bod {

Finding make_finding(const CheckInfo& info, const PlanCall& c, int slot, int key_first_call) {
  Finding f;
  f.check = info.id;
  f.severity = info.severity;
  f.call = c.number;
  f.phase = c.where.phase;
  f.token = c.where.token;
  f.layer = c.where.layer;
  f.kernel = c.kernel->name;
  f.bo_key = c.bo_key;
  f.slot = slot;
  if (slot >= 0 && static_cast<size_t>(slot) < c.kernel->slots.size())
    f.slot_name = c.kernel->slots[static_cast<size_t>(slot)].name;
  f.key_first_call = key_first_call;
  f.first_call_of_key = key_first_call == c.number;
  f.fix = info.fix;
  f.path = c.where.path;
  return f;
}

}  // namespace bod
