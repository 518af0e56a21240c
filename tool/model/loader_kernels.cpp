// model.json "kernels": ordered slots, call params, the reference body, an optional NPU binary.
#include <filesystem>

#include "core/suggest.h"
#include "model/loader_internal.h"

namespace bod {

namespace fs = std::filesystem;

Result<SlotDecl> parse_slot(const json& j, const std::string& path,
                            const std::vector<std::string>& scope) {
  BOD_CHECK(require_object(j, path));
  BOD_CHECK(only_keys(j, path, {"name", "dtype", "shape", "doc"}));
  SlotDecl s;
  if (!j.contains("name")) return bad(path, "missing field 'name'");
  BOD_TRY(s.name, get_string(j["name"], at(path, "name")));
  if (j.contains("dtype")) {
    BOD_TRY(std::string d, get_string(j["dtype"], at(path, "dtype")));
    auto t = parse_dtype(d);
    if (!t)
      return bad(at(path, "dtype"),
                 "unknown dtype '" + excerpt(d) + "'; expected one of bf16, f32, i32, i8");
    s.dtype = *t;
  }
  if (!j.contains("shape")) return bad(path, "missing field 'shape'");
  BOD_CHECK(require_array(j["shape"], at(path, "shape")));
  for (size_t i = 0; i < j["shape"].size(); ++i) {
    BOD_TRY(Expr e, get_scoped_expr(j["shape"][i], at(at(path, "shape"), i), scope));
    s.shape.push_back(e);
  }
  return s;
}

Status parse_op_fields(const json& j, const std::string& path, const OpInfo& info,
                       const std::vector<std::string>& scope, std::map<std::string, Param>& params,
                       std::map<std::string, std::string>& operands) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "op" || k == "host" || k == "doc") continue;
    std::string p = at(path, k);
    bool known = false;
    for (auto& o : info.operands) {
      if (k != o.role) continue;
      known = true;
      BOD_TRY(operands[k], get_string(it.value(), p));
    }
    for (auto& pr : info.params) {
      if (k != pr.name) continue;
      known = true;
      if (it.value().is_boolean()) {
        params[k] = Param{Expr::constant(it.value().get<bool>() ? 1 : 0), 0};
      } else if (it.value().is_number_float()) {
        BOD_TRY(params[k].real, get_number(it.value(), p));
      } else {
        BOD_TRY(Expr e, get_scoped_expr(it.value(), p, scope));
        params[k] = Param{e, 0};
      }
    }
    if (!known) {
      std::string list;
      for (auto& o : info.operands) list += std::string(list.empty() ? "" : ", ") + o.role;
      for (auto& pr : info.params) list += std::string(list.empty() ? "" : ", ") + pr.name;
      return bad(p, std::string("unknown field '") + k + "' for op " + info.name +
                        "; expected one of " + list);
    }
  }
  for (auto& o : info.operands)
    if (o.required && !operands.count(o.role))
      return bad(path, std::string("op ") + info.name + " needs operand '" + excerpt(o.role) + "'");
  for (auto& pr : info.params)
    if (pr.required && !params.count(pr.name))
      return bad(path, std::string("op ") + info.name + " needs param '" + excerpt(pr.name) + "'");
  return ok_status();
}

namespace {

// "name", "name[r]", "name[a:b]", "name[a:b:k]" (a, b, k: expressions; a defaults to 0, b to
// the row count, k to 1).
Status parse_operand(const std::string& text, const std::string& path,
                     const std::vector<std::string>& scope, std::string& name,
                     std::optional<RowRange>& rows) {
  auto open = text.find('[');
  name = text.substr(0, open);
  if (open == std::string::npos) return ok_status();
  if (text.back() != ']' || text.find('[', open + 1) != std::string::npos)
    return bad(path, "bad operand '" + excerpt(text) +
                         "'; expected slot, slot[r], slot[a:b] or slot[a:b:k]");
  std::string inner = text.substr(open + 1, text.size() - open - 2);
  std::vector<std::string> parts{""};
  for (char ch : inner) {
    if (ch == ':')
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  if (parts.size() > 3 || (parts.size() == 1 && parts[0].empty()))
    return bad(path, "bad row range in '" + excerpt(text) + "'; expected [r], [a:b] or [a:b:k]");
  RowRange r;
  r.text = text.substr(open);
  r.single = parts.size() == 1;
  auto expr = [&](const std::string& e, Expr& out) -> Status {
    BOD_TRY(out, get_scoped_expr(json(e), path, scope));
    return ok_status();
  };
  BOD_CHECK(expr(parts[0].empty() ? "0" : parts[0], r.start));
  BOD_CHECK(expr(parts.size() == 3 && !parts[2].empty() ? parts[2] : "1", r.step));
  if (r.single || !parts[1].empty()) {
    Expr stop;
    BOD_CHECK(expr(r.single ? "(" + parts[0] + ")+1" : parts[1], stop));
    r.stop = stop;
  }
  rows = r;
  return ok_status();
}

Status parse_npu(const LoadCtx& c, KernelDecl& k, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  BOD_CHECK(only_keys(j, path, {"xclbin", "elf", "kernel", "instructions"}));
  auto file = [&](const char* key, std::string& out) -> Status {
    BOD_TRY(out, get_string(j[key], at(path, key)));
    fs::path p(out);
    if (p.is_relative()) p = fs::path(c.m.dir) / p;
    out = p.lexically_normal().string();
    return ok_status();
  };
  if (j.contains("xclbin") == j.contains("elf"))
    return bad(path, "give exactly one of 'xclbin' or 'elf'");
  if (j.contains("xclbin")) {
    k.npu.mode = NpuBinary::Mode::xclbin;
    BOD_CHECK(file("xclbin", k.npu.path));
    if (!j.contains("instructions"))
      return bad(path, "xclbin mode needs 'instructions' (the instruction stream file)");
    BOD_CHECK(file("instructions", k.npu.instructions));
  } else {
    k.npu.mode = NpuBinary::Mode::elf;
    BOD_CHECK(file("elf", k.npu.path));
  }
  k.npu.kernel_name = k.name;
  if (j.contains("kernel")) {
    BOD_TRY(k.npu.kernel_name, get_string(j["kernel"], at(path, "kernel")));
  }
  return ok_status();
}

Status parse_kernel(LoadCtx& c, KernelDecl& k, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  BOD_CHECK(only_keys(j, path, {"slots", "params", "body", "locals", "npu", "doc"}));
  std::vector<std::string> scope = c.dim_names();
  if (j.contains("params")) {
    BOD_CHECK(require_array(j["params"], at(path, "params")));
    for (size_t i = 0; i < j["params"].size(); ++i) {
      BOD_TRY(std::string n, get_string(j["params"][i], at(at(path, "params"), i)));
      if (c.m.dims.count(n))
        return bad(at(at(path, "params"), i),
                   "kernel param '" + excerpt(n) + "' hides the dim of that name");
      k.params.push_back(n);
      scope.push_back(n);
    }
  }
  if (!j.contains("slots")) return bad(path, "missing field 'slots'");
  BOD_CHECK(require_array(j["slots"], at(path, "slots")));
  if (j["slots"].empty()) return bad(at(path, "slots"), "a kernel needs at least one slot");
  for (size_t i = 0; i < j["slots"].size(); ++i) {
    std::string sp = at(at(path, "slots"), i);
    BOD_TRY(SlotDecl s, parse_slot(j["slots"][i], sp, scope));
    if (k.slot_index(s.name) >= 0)
      return bad(at(sp, "name"), "duplicate slot name '" + excerpt(s.name) + "'");
    k.slots.push_back(std::move(s));
  }
  if (j.contains("locals")) {
    BOD_CHECK(require_array(j["locals"], at(path, "locals")));
    for (size_t i = 0; i < j["locals"].size(); ++i) {
      std::string lp = at(at(path, "locals"), i);
      BOD_TRY(SlotDecl s, parse_slot(j["locals"][i], lp, scope));
      if (k.slot_index(s.name) >= 0 || k.local_index(s.name) >= 0)
        return bad(at(lp, "name"),
                   "duplicate name '" + excerpt(s.name) + "' (slots and locals share names)");
      k.locals.push_back(std::move(s));
    }
  }
  if (!j.contains("body")) return bad(path, "missing field 'body' (the reference ops)");
  BOD_CHECK(require_array(j["body"], at(path, "body")));
  for (size_t i = 0; i < j["body"].size(); ++i) {
    std::string op_path = at(at(path, "body"), i);
    const json& o = j["body"][i];
    BOD_CHECK(require_object(o, op_path));
    if (!o.contains("op")) return bad(op_path, "missing field 'op'");
    BOD_TRY(std::string name, get_string(o["op"], at(op_path, "op")));
    OpDecl d;
    d.info = find_op(name);
    d.path = op_path;
    if (!d.info)
      return bad(at(op_path, "op"),
                 "unknown op '" + excerpt(name) + "'; expected one of " + op_names());
    BOD_CHECK(parse_op_fields(o, op_path, *d.info, scope, d.params, d.operands));
    for (auto& [role, slot] : d.operands) {
      std::optional<RowRange> rows;
      std::string name;
      BOD_CHECK(parse_operand(slot, at(op_path, role), scope, name, rows));
      if (k.slot_index(name) < 0 && k.local_index(name) < 0)
        return bad(at(op_path, role), unknown_slot(k, name, true));
      if (rows) d.rows[role] = *rows;
      slot = name;
    }
    k.body.push_back(std::move(d));
  }
  if (j.contains("npu")) BOD_CHECK(parse_npu(c, k, j["npu"], at(path, "npu")));
  return ok_status();
}

}  // namespace

Status parse_kernels(LoadCtx& c, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  if (j.empty()) return bad(path, "no kernels; a model needs at least one");
  for (auto it = j.begin(); it != j.end(); ++it) {
    KernelDecl k;
    k.name = it.key();
    k.path = at(path, it.key());
    BOD_CHECK(parse_kernel(c, k, it.value(), k.path));
    c.m.kernels.push_back(std::move(k));
  }
  return ok_status();
}

std::string unknown_slot(const KernelDecl& k, const std::string& name, bool with_locals) {
  std::vector<std::string> names;
  for (auto& s : k.slots) names.push_back(s.name);
  if (with_locals)
    for (auto& s : k.locals) names.push_back(s.name);
  return "unknown slot '" + excerpt(name) + "' in kernel " + excerpt(k.name) +
         did_you_mean(name, names) + " (its " + (with_locals ? "slots and locals" : "slots") +
         ": " + name_list(names) + ")";
}

}  // namespace bod
