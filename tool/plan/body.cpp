#include "plan/body.h"

#include <algorithm>
#include <limits>

namespace bod {

void Body::run(const std::vector<TensorRef>& slots) const {
  for (auto& op : ops) {
    OpCall c = op.call;
    for (auto& [role, s] : op.slot_of) c.operands[role].data = slots[static_cast<size_t>(s)].data;
    run_op(c);
  }
}

Result<std::map<std::string, double>> eval_params(const OpInfo& op,
                                                  const std::map<std::string, Param>& given,
                                                  const Env& env, const std::string& path) {
  std::map<std::string, double> out;
  for (auto& p : op.params) {
    auto it = given.find(p.name);
    double v = p.default_value;
    if (it != given.end()) {
      auto r = it->second.eval(env);
      if (!r) return Error{path + "/" + p.name, r.error().what};
      v = r.value();
    }
    out[p.name] = v;
  }
  return out;
}

Result<Body> bind_body(const KernelDecl& k, const Env& env, const std::vector<Shape>& shapes) {
  Body b;
  for (auto& d : k.body) {
    BodyOp op;
    op.call.info = d.info;
    for (auto& [role, slot] : d.operands) {
      int s = k.slot_index(slot);
      op.slot_of[role] = s;
      op.call.operands[role] =
          TensorRef{nullptr, k.slots[static_cast<size_t>(s)].dtype, shapes[static_cast<size_t>(s)]};
    }
    BOD_TRY(op.call.params, eval_params(*d.info, d.params, env, d.path));
    b.ops.push_back(std::move(op));
  }
  return b;
}

std::vector<SlotAccess> analyze_access(const Body& b, size_t n_slots) {
  std::vector<SlotAccess> a(n_slots);
  std::vector<bool> full(n_slots, false);
  // Rows: written so far (a leading prefix), the most ever written, and the fewest written
  // when some op read the slot (rows from there on were read before this call wrote them).
  const int64_t none = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> rows(n_slots, 0), most(n_slots, 0), read_at(n_slots, none);
  for (auto& op : b.ops) {
    auto pa = op.call.params.find("accumulate");
    bool accumulate = pa != op.call.params.end() && pa->second != 0;
    // Reads first (an op reads its inputs before writing its output).
    for (auto& spec : op.call.info->operands) {
      auto it = op.slot_of.find(spec.role);
      if (it == op.slot_of.end()) continue;
      auto s = static_cast<size_t>(it->second);
      bool reads = spec.access == Access::read ||
                   (spec.access == Access::write && accumulate);
      if (reads && !full[s]) a[s].read_before_write = true;
      if (reads) read_at[s] = std::min(read_at[s], rows[s]);
    }
    for (auto& spec : op.call.info->operands) {
      auto it = op.slot_of.find(spec.role);
      if (it == op.slot_of.end() || spec.access != Access::write) continue;
      auto s = static_cast<size_t>(it->second);
      a[s].written = true;
      const TensorRef& t = op.call.operand(spec.role);
      bool whole = rows_written(op.call) >= t.rows() && !accumulate;
      if (whole && !a[s].read_before_write) a[s].overwritten = true;
      if (whole) full[s] = true;
      rows[s] = std::max(rows[s], std::min(rows_written(op.call), t.rows()));
      most[s] = std::max(most[s], rows[s]);
    }
  }
  for (size_t s = 0; s < n_slots; ++s)
    a[s].rewritten_before_read = a[s].written && most[s] <= read_at[s];
  return a;
}

}  // namespace bod
