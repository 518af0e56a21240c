#include "plan/body.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace bod {

void Body::run(const std::vector<TensorRef>& slots) const {
  std::vector<std::vector<uint8_t>> local(locals.size());
  for (size_t i = 0; i < locals.size(); ++i) local[i].assign(locals[i].bytes(), 0);
  std::vector<uint8_t> gathered;  // a strided (read-only) operand, copied row by row
  for (auto& op : ops) {
    OpCall c = op.call;
    std::vector<std::vector<uint8_t>> copies;
    for (auto& [role, p] : op.at) {
      TensorRef& t = c.operands[role];
      uint8_t* base = p.slot >= 0 ? slots[static_cast<size_t>(p.slot)].data
                                  : local[static_cast<size_t>(p.local)].data();
      size_t row_bytes = static_cast<size_t>(p.cols) * dtype_size(t.dtype);
      if (p.step == 1) {
        t.data = base + static_cast<size_t>(p.row0) * row_bytes;
        continue;
      }
      copies.emplace_back(static_cast<size_t>(p.nrows) * row_bytes);
      for (int64_t r = 0; r < p.nrows; ++r)
        std::memcpy(copies.back().data() + static_cast<size_t>(r) * row_bytes,
                    base + static_cast<size_t>(p.row0 + r * p.step) * row_bytes, row_bytes);
      t.data = copies.back().data();
    }
    run_op(c);
  }
}

size_t Body::scratch_bytes() const {
  size_t n = 0, most = 0;
  for (auto& l : locals) n += l.bytes();
  for (auto& op : ops) {
    size_t copies = 0;
    for (auto& [role, p] : op.at) {
      if (p.step == 1) continue;
      auto it = op.call.operands.find(role);
      size_t elem = it == op.call.operands.end() ? 4 : dtype_size(it->second.dtype);
      copies += static_cast<size_t>(p.nrows) * static_cast<size_t>(p.cols) * elem;
    }
    most = std::max(most, copies);
  }
  return n + most;
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

namespace {

int64_t rows_of(const Shape& s) {
  int64_t cols = s.empty() ? 1 : s.back();
  return cols == 0 ? 0 : numel(s) / cols;
}

// Where operand `role` of op `d` lies, with its shape; errors name the operand's path.
Result<OperandPlace> place_operand(const KernelDecl& k, const OpDecl& d, const std::string& role,
                                   const Env& env, const std::vector<Shape>& shapes,
                                   const std::vector<TensorRef>& locals, TensorRef& t) {
  const std::string& name = d.operands.at(role);
  OperandPlace p;
  p.slot = k.slot_index(name);
  p.local = p.slot < 0 ? k.local_index(name) : -1;
  const Shape& full = p.slot >= 0 ? shapes[static_cast<size_t>(p.slot)]
                                  : locals[static_cast<size_t>(p.local)].shape;
  t.dtype = p.slot >= 0 ? k.slots[static_cast<size_t>(p.slot)].dtype
                        : locals[static_cast<size_t>(p.local)].dtype;
  t.shape = full;
  p.total_rows = rows_of(full);
  p.cols = full.empty() ? 1 : full.back();
  p.nrows = p.total_rows;
  auto r = d.rows.find(role);
  if (r == d.rows.end()) return p;
  std::string path = d.path + "/" + role;
  auto value = [&](const Expr& e) -> Result<int64_t> {
    auto v = e.eval(env);
    if (!v) return Error{path, v.error().what};
    return v.value();
  };
  BOD_TRY(p.row0, value(r->second.start));
  BOD_TRY(p.step, value(r->second.step));
  int64_t stop = p.total_rows;
  if (r->second.stop) {
    BOD_TRY(stop, value(*r->second.stop));
  }
  std::string what = "rows " + r->second.text + " of " + name + " (" +
                     std::to_string(p.total_rows) + " rows of " + std::to_string(p.cols) + ")";
  if (p.step < 1) return Error{path, what + ": the step must be at least 1"};
  if (p.row0 < 0 || stop > p.total_rows || p.row0 >= stop)
    return Error{path, what + ": expected 0 <= start < stop <= " + std::to_string(p.total_rows)};
  bool writes = false;
  for (auto& o : d.info->operands)
    if (o.role == role) writes = o.access == Access::write;
  if (p.step > 1 && writes)
    return Error{path, what + ": a strided operand can only be read, not written"};
  p.nrows = (stop - p.row0 + p.step - 1) / p.step;
  t.shape = r->second.single ? Shape{p.cols} : Shape{p.nrows, p.cols};
  return p;
}

}  // namespace

Result<Body> bind_body(const KernelDecl& k, const Env& env, const std::vector<Shape>& shapes) {
  Body b;
  for (auto& l : k.locals) {
    TensorRef t{nullptr, l.dtype, {}};
    for (auto& e : l.shape) {
      auto v = e.eval(env);
      if (!v) return Error{k.path + "/locals", v.error().what};
      if (v.value() < 0)
        return Error{k.path + "/locals", "local " + l.name + " has a negative dimension"};
      t.shape.push_back(v.value());
    }
    b.locals.push_back(std::move(t));
  }
  for (auto& d : k.body) {
    BodyOp op;
    op.call.info = d.info;
    for (auto& [role, name] : d.operands) {
      (void)name;
      TensorRef t;
      BOD_TRY(op.at[role], place_operand(k, d, role, env, shapes, b.locals, t));
      op.call.operands[role] = t;
    }
    BOD_TRY(op.call.params, eval_params(*d.info, d.params, env, d.path));
    b.ops.push_back(std::move(op));
  }
  return b;
}

std::vector<SlotAccess> analyze_access(const Body& b, size_t n_slots) {
  std::vector<SlotAccess> a(n_slots);
  // Per slot and row of its 2-D view: written so far this dispatch, and read before this
  // dispatch wrote it.
  std::vector<std::vector<char>> written(n_slots), read_stale(n_slots);
  std::vector<int64_t> unwritten(n_slots, -1);  // rows not yet written (-1: not touched yet)
  auto touch = [&](const OperandPlace& p) {
    auto s = static_cast<size_t>(p.slot);
    if (unwritten[s] < 0) {
      written[s].assign(static_cast<size_t>(p.total_rows), 0);
      read_stale[s].assign(static_cast<size_t>(p.total_rows), 0);
      unwritten[s] = p.total_rows;
    }
    return s;
  };
  for (auto& op : b.ops) {
    auto pa = op.call.params.find("accumulate");
    bool accumulate = pa != op.call.params.end() && pa->second != 0;
    // Reads first (an op reads its inputs before writing its output).
    for (auto& spec : op.call.info->operands) {
      auto it = op.at.find(spec.role);
      if (it == op.at.end() || it->second.slot < 0) continue;
      bool reads = spec.access == Access::read || (spec.access == Access::write && accumulate);
      if (!reads) continue;
      const OperandPlace& p = it->second;
      size_t s = touch(p);
      int64_t n = spec.access == Access::write ? std::min(rows_written(op.call), p.nrows) : p.nrows;
      for (int64_t r = 0; r < n; ++r) {
        auto row = static_cast<size_t>(p.row0 + r * p.step);
        if (written[s][row]) continue;
        a[s].read_before_write = true;
        read_stale[s][row] = 1;
      }
    }
    for (auto& spec : op.call.info->operands) {
      auto it = op.at.find(spec.role);
      if (it == op.at.end() || it->second.slot < 0 || spec.access != Access::write) continue;
      const OperandPlace& p = it->second;
      size_t s = touch(p);
      a[s].written = true;
      int64_t n = std::min(rows_written(op.call), p.nrows);
      for (int64_t r = 0; r < n; ++r) {
        auto row = static_cast<size_t>(p.row0 + r * p.step);
        if (!written[s][row]) unwritten[s]--;
        written[s][row] = 1;
      }
      if (unwritten[s] == 0 && !a[s].read_before_write) a[s].overwritten = true;
    }
  }
  for (size_t s = 0; s < n_slots; ++s) {
    bool clean = true;  // no row it writes was read before it was written
    for (size_t r = 0; r < written[s].size() && clean; ++r)
      clean = !(written[s][r] && read_stale[s][r]);
    a[s].rewritten_before_read = a[s].written && clean;
    a[s].total_rows = static_cast<int64_t>(written[s].size());
    for (size_t r = 0; r < written[s].size();) {
      if (!written[s][r]) {
        ++r;
        continue;
      }
      size_t end = r;
      while (end < written[s].size() && written[s][end]) ++end;
      a[s].written_rows.emplace_back(static_cast<int64_t>(r), static_cast<int64_t>(end));
      r = end;
    }
  }
  return a;
}

}  // namespace bod
