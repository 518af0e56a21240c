// model.json "program": phases, loops, kernel calls with their reuse settings, host steps.
#include <algorithm>

#include "core/suggest.h"
#include "kernels/host_actions.h"
#include "model/loader_internal.h"

namespace bod {

Result<Binding> parse_binding(const LoadCtx& c, const json& j, const std::string& path,
                              const std::vector<std::string>& scope) {
  Binding b;
  std::string text;
  if (j.is_object()) {
    BOD_CHECK(only_keys(j, path, {"placeholder", "as"}));
    if (!j.contains("placeholder")) return bad(path, "expected {\"placeholder\": \"tensor[...]\"}");
    BOD_TRY(text, get_string(j["placeholder"], at(path, "placeholder")));
    b.kind = Binding::Kind::placeholder;
    if (j.contains("as")) {
      BOD_TRY(std::string as, get_string(j["as"], at(path, "as")));
      if (as == "empty")
        b.placeholder = Binding::Placeholder::empty;
      else if (as == "broadcast")
        b.placeholder = Binding::Placeholder::broadcast;
      else if (as != "zeros")
        return bad(at(path, "as"), "unknown placeholder kind '" + excerpt(as) +
                                       "'; expected zeros, empty (np.empty(0)) or broadcast "
                                       "(np.broadcast_to)");
    }
  } else {
    BOD_TRY(text, get_string(j, path));
    if (text == "zeros") return b;
  }
  b.text = text;
  size_t lb = text.find('[');
  b.name = text.substr(0, lb);
  while (lb != std::string::npos) {
    size_t rb = text.find(']', lb);
    if (rb == std::string::npos) return bad(path, "missing ']' in '" + excerpt(text) + "'");
    std::string inner = text.substr(lb + 1, rb - lb - 1);
    auto colon = inner.find(':');
    if (b.row_stop)
      return bad(path, "a row range must be the last index in '" + excerpt(text) + "'");
    std::vector<std::string> parts{inner.substr(0, colon)};
    if (colon != std::string::npos) {
      parts.push_back(inner.substr(colon + 1));
      if (parts[1].find(':') != std::string::npos)
        return bad(path, "strided range in '" + excerpt(text) +
                             "': a host array passed with a step is "
                             "not C-contiguous (the real engine refuses to write it); ranges are "
                             "[a:b]");
      if (parts[0].empty() || parts[1].empty())
        return bad(path, "row range in '" + excerpt(text) + "' needs both ends: [a:b]");
    }
    std::vector<Expr> es;
    for (auto& part : parts) {
      auto e = Expr::parse(part);
      if (!e) return bad(path, e.error().what);
      for (auto& n : e->names())
        if (std::find(scope.begin(), scope.end(), n) == scope.end())
          return bad(path, "unknown name '" + excerpt(n) + "' in '" + excerpt(text) +
                               "'; expected a dim or a loop variable in scope");
      es.push_back(e.value());
    }
    if (es.size() == 2) {
      b.row_start = es[0];
      b.row_stop = es[1];
    } else {
      b.index.push_back(es[0]);
    }
    lb = rb + 1 < text.size() ? rb + 1 : std::string::npos;
    if (lb != std::string::npos && text[lb] != '[')
      return bad(path, "unexpected '" + excerpt(text.substr(lb)) + "' after index in '" +
                           excerpt(text) + "'");
  }
  const Shape* shape = nullptr;
  if (auto* t = c.m.tensor(b.name)) {
    shape = &t->shape;
    if (b.kind != Binding::Kind::placeholder) b.kind = Binding::Kind::tensor;
  } else if (auto* v = c.m.var(b.name)) {
    shape = &v->shape;
    if (b.kind == Binding::Kind::placeholder)
      return bad(path, "a placeholder stands in for a tensor; '" + excerpt(b.name) + "' is a var");
    b.kind = Binding::Kind::var;
  } else {
    std::vector<std::string> names;
    for (auto& t : c.m.tensors) names.push_back(t.name);
    for (auto& v : c.m.vars) names.push_back(v.name);
    return bad(path, "unknown tensor or var '" + excerpt(b.name) + "'" +
                         did_you_mean(b.name, names) + " (tensors and vars: " + name_list(names) +
                         ")");
  }
  if (b.row_stop && b.index.size() >= shape->size())
    return bad(path, "'" + excerpt(text) + "' has no dimension left for its row range; " + b.name +
                         " is " + shape_str(*shape));
  if (b.index.size() >= shape->size() && !b.index.empty())
    return bad(path, "'" + excerpt(text) + "' has " + std::to_string(b.index.size()) +
                         " indices but " + b.name + " is " + shape_str(*shape) +
                         "; expected fewer indices than dims");
  return b;
}

namespace {

// Loops nest by recursion here and in expansion: deeper than kMaxLoopDepth is refused.

struct Scope {
  std::vector<std::string> names;
  int loops = 0;  // loops open around the steps being read
};

Status parse_steps(LoadCtx& c, const json& j, const std::string& path, Scope& s,
                   std::vector<StepDecl>& out);

Result<SlotRef> parse_slot_ref(const KernelDecl& k, const json& j, const std::string& path) {
  SlotRef r;
  r.path = path;
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    r.index = v < -1000000 || v > 1000000 ? 1000000 : static_cast<int>(v);  // range: lint
    return r;
  }
  if (!j.is_string()) return expected(path, "a slot index or slot name", j);
  r.index = k.slot_index(j.get<std::string>());
  if (r.index < 0) return bad(path, unknown_slot(k, j.get<std::string>()));
  return r;
}

Result<std::vector<SlotRef>> parse_slot_list(const KernelDecl& k, const json& j,
                                             const std::string& path) {
  BOD_CHECK(require_array(j, path));
  std::vector<SlotRef> r;
  for (size_t i = 0; i < j.size(); ++i) {
    BOD_TRY(SlotRef s, parse_slot_ref(k, j[i], at(path, i)));
    r.push_back(s);
  }
  return r;
}

Status check_template(const std::string& t, const std::string& path, const Scope& s) {
  auto names = template_names(t);
  if (!names) return bad(path, names.error().what);
  for (auto& n : names.value())
    if (std::find(s.names.begin(), s.names.end(), n) == s.names.end())
      return bad(path, "unknown name '" + excerpt(n) + "' in template '" + excerpt(t) +
                           "'; expected a dim or a loop variable in scope");
  return ok_status();
}

// "keep": output slot name -> var binding, or {"to": binding, "as": "view"|"copy"}.
Status parse_keep(LoadCtx& c, const json& keep, const std::string& kp, const Scope& s,
                  const KernelDecl& k, CallDecl& d) {
  BOD_CHECK(require_object(keep, kp));
  for (auto it = keep.begin(); it != keep.end(); ++it) {
    std::string ep = at(kp, it.key());
    OutputDecl o;
    o.slot = k.slot_index(it.key());
    if (o.slot < 0) return bad(ep, unknown_slot(k, it.key()));
    const json* target = &it.value();
    if (it.value().is_object()) {
      BOD_CHECK(only_keys(it.value(), ep, {"to", "as"}));
      if (!it.value().contains("to")) return bad(ep, "missing field 'to'");
      target = &it.value()["to"];
      if (it.value().contains("as")) {
        BOD_TRY(std::string as, get_string(it.value()["as"], at(ep, "as")));
        if (as != "view" && as != "copy")
          return bad(at(ep, "as"), "expected \"view\" or \"copy\", found \"" + excerpt(as) + "\"");
        o.view = as == "view";
      }
      ep = at(ep, "to");
    }
    BOD_TRY(o.target, parse_binding(c, *target, ep, s.names));
    if (o.target.kind != Binding::Kind::var)
      return bad(ep, "outputs are kept in vars; '" + excerpt(o.target.name) + "' is not a var");
    d.keep.push_back(std::move(o));
  }
  return ok_status();
}

Result<CallDecl> parse_call(LoadCtx& c, const json& j, const std::string& path, const Scope& s) {
  BOD_CHECK(only_keys(
      j, path,
      {"call", "args", "params", "static_input_indices", "intermediate_indices", "output_indices",
       "bo_key", "shared_nonstatic", "shared_alias", "keep", "cache", "doc"}));
  CallDecl d;
  d.path = path;
  BOD_TRY(std::string kn, get_string(j["call"], at(path, "call")));
  d.kernel = c.m.kernel_index(kn);
  if (d.kernel < 0) {
    std::vector<std::string> names;
    for (auto& kd : c.m.kernels) names.push_back(kd.name);
    return bad(at(path, "call"), "unknown kernel '" + excerpt(kn) + "'" + did_you_mean(kn, names) +
                                     " (kernels: " + name_list(names) + ")");
  }
  const KernelDecl& k = c.m.kernels[d.kernel];
  if (j.contains("args")) {
    std::string ap = at(path, "args");
    BOD_CHECK(require_object(j["args"], ap));
    for (auto it = j["args"].begin(); it != j["args"].end(); ++it) {
      int slot = k.slot_index(it.key());
      if (slot < 0) return bad(at(ap, it.key()), unknown_slot(k, it.key()));
      BOD_TRY(d.args[slot], parse_binding(c, it.value(), at(ap, it.key()), s.names));
    }
  }
  if (j.contains("params")) {
    std::string pp = at(path, "params");
    BOD_CHECK(require_object(j["params"], pp));
    for (auto it = j["params"].begin(); it != j["params"].end(); ++it) {
      if (std::find(k.params.begin(), k.params.end(), it.key()) == k.params.end())
        return bad(at(pp, it.key()),
                   "kernel " + excerpt(kn) + " has no param '" + excerpt(it.key()) + "'");
      BOD_TRY(d.params[it.key()], get_scoped_expr(it.value(), at(pp, it.key()), s.names));
    }
  }
  for (auto& p : k.params)
    if (!d.params.count(p))
      return bad(path, "missing value for kernel param '" + p + "' of " + excerpt(kn));
  if (j.contains("static_input_indices")) {
    BOD_TRY(d.static_inputs,
            parse_slot_list(k, j["static_input_indices"], at(path, "static_input_indices")));
  }
  if (j.contains("intermediate_indices")) {
    BOD_TRY(d.intermediates,
            parse_slot_list(k, j["intermediate_indices"], at(path, "intermediate_indices")));
  }
  if (j.contains("output_indices")) {
    BOD_TRY(d.outputs, parse_slot_list(k, j["output_indices"], at(path, "output_indices")));
  }
  if (j.contains("bo_key")) {
    BOD_TRY(d.bo_key, get_string(j["bo_key"], at(path, "bo_key")));
    BOD_CHECK(check_template(*d.bo_key, at(path, "bo_key"), s));
  }
  if (j.contains("cache")) {
    BOD_TRY(d.cache, get_string(j["cache"], at(path, "cache")));
  }
  if (j.contains("shared_nonstatic")) {
    BOD_TRY(d.shared_nonstatic, get_bool(j["shared_nonstatic"], at(path, "shared_nonstatic")));
  }
  if (j.contains("shared_alias")) {
    std::string ap = at(path, "shared_alias");
    BOD_CHECK(require_object(j["shared_alias"], ap));
    for (auto it = j["shared_alias"].begin(); it != j["shared_alias"].end(); ++it) {
      std::string key = it.key();
      bool digits = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
      int slot = digits ? std::stoi(key.substr(0, 7)) : k.slot_index(key);
      if (slot < 0) return bad(at(ap, key), unknown_slot(k, key));
      BOD_TRY(std::string pool, get_string(it.value(), at(ap, key)));
      BOD_CHECK(check_template(pool, at(ap, key), s));
      d.shared_alias[slot] = pool;
    }
  }
  if (j.contains("keep")) BOD_CHECK(parse_keep(c, j["keep"], at(path, "keep"), s, k, d));
  return d;
}

Result<HostDecl> parse_host(LoadCtx& c, const json& j, const std::string& path, const Scope& s) {
  HostDecl h;
  h.path = path;
  BOD_TRY(h.action, get_string(j["host"], at(path, "host")));
  h.op = find_op(h.action);
  if (!h.op) h.op = find_host_action(h.action);
  if (!h.op)
    return bad(at(path, "host"), "unknown host step '" + excerpt(h.action) + "'; expected one of " +
                                     host_action_names() + ", " + op_names());
  std::map<std::string, std::string> operands;
  BOD_CHECK(parse_op_fields(j, path, *h.op, s.names, h.params, operands));
  for (auto& [role, text] : operands) {
    BOD_TRY(h.operands[role], parse_binding(c, json(text), at(path, role), s.names));
    bool writes = false;
    for (auto& o : h.op->operands)
      if (o.role == role) writes = o.access == Access::write;
    if (writes && h.operands[role].kind != Binding::Kind::var)
      return bad(at(path, role), "host steps write vars only; '" + excerpt(text) + "' is a tensor");
  }
  return h;
}

Result<LoopDecl> parse_loop(LoadCtx& c, const json& j, const std::string& path, Scope& s) {
  BOD_CHECK(only_keys(j, path, {"loop", "range", "steps", "doc"}));
  if (s.loops >= kMaxLoopDepth)
    return bad(path, "loops nested deeper than " + std::to_string(kMaxLoopDepth) +
                         " levels; expected at most " + std::to_string(kMaxLoopDepth));
  LoopDecl l;
  l.path = path;
  BOD_TRY(l.var, get_string(j["loop"], at(path, "loop")));
  if (std::find(s.names.begin(), s.names.end(), l.var) != s.names.end())
    return bad(at(path, "loop"),
               "loop variable '" + excerpt(l.var) + "' shadows a dim or outer variable");
  if (!j.contains("range")) return bad(path, "missing field 'range' (a count or [begin, end])");
  std::string rp = at(path, "range");
  if (j["range"].is_array()) {
    if (j["range"].size() != 2) return bad(rp, "expected [begin, end]");
    BOD_TRY(l.begin, get_scoped_expr(j["range"][0], at(rp, 0), s.names));
    BOD_TRY(l.end, get_scoped_expr(j["range"][1], at(rp, 1), s.names));
  } else {
    l.begin = Expr::constant(0);
    BOD_TRY(l.end, get_scoped_expr(j["range"], rp, s.names));
  }
  if (!j.contains("steps")) return bad(path, "missing field 'steps'");
  s.names.push_back(l.var);
  ++s.loops;
  Status st = parse_steps(c, j["steps"], at(path, "steps"), s, l.steps);
  --s.loops;
  s.names.pop_back();
  if (!st) return st.error();
  return l;
}

Status parse_steps(LoadCtx& c, const json& j, const std::string& path, Scope& s,
                   std::vector<StepDecl>& out) {
  BOD_CHECK(require_array(j, path));
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = at(path, i);
    BOD_CHECK(require_object(j[i], p));
    if (j[i].contains("call")) {
      BOD_TRY(CallDecl d, parse_call(c, j[i], p, s));
      out.emplace_back(std::move(d));
    } else if (j[i].contains("host")) {
      BOD_TRY(HostDecl d, parse_host(c, j[i], p, s));
      out.emplace_back(std::move(d));
    } else if (j[i].contains("loop")) {
      BOD_TRY(LoopDecl d, parse_loop(c, j[i], p, s));
      out.emplace_back(std::move(d));
    } else {
      return bad(p, "expected a step with 'call', 'host' or 'loop'");
    }
  }
  return ok_status();
}

}  // namespace

Status parse_program(LoadCtx& c, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  BOD_CHECK(only_keys(j, path, {"layer_var", "phases", "doc"}));
  if (j.contains("layer_var")) {
    BOD_TRY(c.m.layer_var, get_string(j["layer_var"], at(path, "layer_var")));
  }
  if (!j.contains("phases")) return bad(path, "missing field 'phases'");
  std::string pp = at(path, "phases");
  BOD_CHECK(require_array(j["phases"], pp));
  for (size_t i = 0; i < j["phases"].size(); ++i) {
    const json& ph = j["phases"][i];
    std::string p = at(pp, i);
    BOD_CHECK(require_object(ph, p));
    BOD_CHECK(only_keys(ph, p, {"name", "repeat", "var", "steps", "doc"}));
    PhaseDecl d;
    d.path = p;
    if (!ph.contains("name")) return bad(p, "missing field 'name'");
    BOD_TRY(d.name, get_string(ph["name"], at(p, "name")));
    Scope s{c.dim_names()};
    d.repeat = Expr::constant(1);
    if (ph.contains("repeat")) {
      BOD_TRY(d.repeat, get_scoped_expr(ph["repeat"], at(p, "repeat"), s.names));
      if (!ph.contains("var")) return bad(p, "a repeated phase needs 'var' (the token variable)");
    }
    if (ph.contains("var")) {
      BOD_TRY(d.token_var, get_string(ph["var"], at(p, "var")));
      if (c.m.dims.count(d.token_var))
        return bad(at(p, "var"),
                   "token variable '" + excerpt(d.token_var) + "' hides the dim of that name");
      s.names.push_back(d.token_var);
    }
    if (!ph.contains("steps")) return bad(p, "missing field 'steps'");
    BOD_CHECK(parse_steps(c, ph["steps"], at(p, "steps"), s, d.steps));
    c.m.phases.push_back(std::move(d));
  }
  return ok_status();
}

}  // namespace bod
