// Program expansion: loops unrolled, expressions evaluated, bindings and shapes checked.
#include <map>
#include <set>
#include <tuple>

#include "kernels/host_actions.h"
#include "plan/plan.h"

namespace bod {

std::string Where::str() const {
  std::string s = phase;
  if (token >= 0) s += " t=" + std::to_string(token);
  if (layer >= 0) s += " l=" + std::to_string(layer);
  return s;
}

namespace {
bool has(const std::vector<SlotRef>& v, int s) {
  for (auto& r : v)
    if (r.index == s) return true;
  return false;
}
}  // namespace

bool PlanCall::is_static(int s) const {
  return has(statics, s);
}
bool PlanCall::is_inter(int s) const {
  return has(inters, s);
}
bool PlanCall::is_output(int s) const {
  return has(outputs, s);
}

Result<TensorRef> bound_type(const Model& m, const BoundArray& b) {
  TensorRef t;
  const Shape* full = nullptr;
  if (b.kind == Binding::Kind::zeros) return t;
  if (auto* td = m.tensor(b.name)) {
    full = &td->shape;
    t.dtype = td->dtype;
  } else if (auto* vd = m.var(b.name)) {
    full = &vd->shape;
    t.dtype = vd->dtype;
  } else {
    return Error{"", "unknown array " + b.name};
  }
  for (size_t i = 0; i < b.index.size(); ++i)
    if (b.index[i] < 0 || b.index[i] >= (*full)[i])
      return Error{"", "index " + std::to_string(b.index[i]) + " of '" + b.text +
                           "' is out of range; " + b.name + " is " + shape_str(*full)};
  t.shape.assign(full->begin() + static_cast<long>(b.index.size()), full->end());
  if (b.nrows >= 0) {
    if (b.row0 < 0 || b.nrows < 1 || b.row0 + b.nrows > t.shape[0])
      return Error{"", "rows " + std::to_string(b.row0) + ".." + std::to_string(b.row0 + b.nrows) +
                           " of '" + b.text + "' are out of range; the region is " +
                           shape_str(t.shape) +
                           " (expected 0 <= a < b <= " + std::to_string(t.shape[0]) + ")"};
    t.shape[0] = b.nrows;
  }
  return t;
}

TensorRef slice_rows(const TensorRef& t, int64_t row0, int64_t nrows) {
  if (nrows < 0 || t.shape.empty()) return t;
  TensorRef s = t;
  size_t row_bytes = t.shape[0] == 0 ? 0 : t.bytes() / static_cast<size_t>(t.shape[0]);
  if (s.data) s.data += static_cast<size_t>(row0) * row_bytes;
  s.shape[0] = nrows;
  return s;
}

namespace {

class Expander {
 public:
  Expander(const Model& m, const ExpandOptions& o) : m_(m), opt_(o) { plan_.model = &m; }

  Result<Plan> run() {
    BOD_CHECK(count_program());
    for (auto& ph : m_.phases) {
      Env env = m_.dims;
      BOD_TRY(int64_t reps, eval(ph.repeat, env, ph.path + "/repeat"));
      if (reps < 0) return Error{ph.path + "/repeat", "expected a count >= 0"};
      if (!expands(ph.steps)) continue;  // nothing to repeat: costs nothing
      BOD_CHECK(check_count(static_cast<uint64_t>(reps), ph.path + "/repeat"));
      for (int64_t t = 0; t < reps; ++t) {
        Where w{ph.name, ph.token_var.empty() ? -1 : t, -1, ph.path};
        if (!ph.token_var.empty()) env[ph.token_var] = t;
        BOD_CHECK(iteration(ph.steps, env, w, ph.path + "/repeat"));
      }
    }
    BOD_CHECK(check_bodies());
    BOD_CHECK(estimate());
    return std::move(plan_);
  }

 private:
  Result<int64_t> eval(const Expr& e, const Env& env, const std::string& path) {
    auto v = e.eval(env);
    if (!v) return Error{path, v.error().what};
    return v;
  }

  Result<BoundArray> bind(const Binding& b, const Env& env, const std::string& path) {
    BoundArray a{
        b.kind, b.name, {}, b.kind == Binding::Kind::zeros ? "zeros" : b.name, b.placeholder};
    for (auto& e : b.index) {
      BOD_TRY(int64_t v, eval(e, env, path));
      a.index.push_back(v);
      a.text += "[" + std::to_string(v) + "]";
    }
    if (b.row_stop) {
      BOD_TRY(a.row0, eval(*b.row_start, env, path));
      BOD_TRY(int64_t stop, eval(*b.row_stop, env, path));
      if (__builtin_sub_overflow(stop, a.row0, &a.nrows))
        return Error{path, "overflow in row range of '" + b.text + "'"};
      a.text += "[" + std::to_string(a.row0) + ":" + std::to_string(stop) + "]";
      if (a.nrows < 1)
        return Error{path, "row range [" + std::to_string(a.row0) + ":" + std::to_string(stop) +
                               "] of '" + b.text + "' is empty; expected a < b"};
    }
    auto t = bound_type(m_, a);
    if (!t) return Error{path, t.error().what};
    return a;
  }

  Status steps(const std::vector<StepDecl>& ss, Env& env, Where w) {
    for (auto& s : ss) {
      if (plan_.order.size() >= opt_.max_steps) return too_many_steps(w.path);
      if (auto* c = std::get_if<CallDecl>(&s))
        BOD_CHECK(call(*c, env, w));
      else if (auto* h = std::get_if<HostDecl>(&s))
        BOD_CHECK(host(*h, env, w));
      else
        BOD_CHECK(loop(std::get<LoopDecl>(s), env, w));
    }
    return ok_status();
  }

  // Whether steps can add anything to the plan (a call or host step, at any loop depth).
  static bool expands(const std::vector<StepDecl>& ss) {
    for (auto& s : ss) {
      auto* l = std::get_if<LoopDecl>(&s);
      if (!l || expands(l->steps)) return true;
    }
    return false;
  }

  // The steps the program expands to, counted before anything is built (loop ranges evaluated,
  // loops whose bodies hold no loop counted by multiplying), so a plan past the steps limit is
  // refused from its count: 20,000 x 20,000 calls used to expand for 15 s and 2.9 GB before
  // the limit stopped it. The errors and their paths are the expansion's; an error that is
  // not a limit (a bad range) stops the count, and the expansion reports it.
  Status count_program() {
    for (auto& ph : m_.phases) {
      Env env = m_.dims;
      auto reps = ph.repeat.eval(env);
      if (!reps || *reps < 0) return ok_status();
      if (!expands(ph.steps)) continue;
      BOD_CHECK(check_count(static_cast<uint64_t>(*reps), ph.path + "/repeat"));
      BOD_CHECK(count_loop(ph.steps, env, ph.token_var, 0, *reps, ph.path, ph.path + "/repeat"));
      if (uncounted_) return ok_status();
    }
    return ok_status();
  }

  Error too_many_steps(const std::string& where) const {
    return Error{where, "the program expands to more than " + std::to_string(opt_.max_steps) +
                            " steps; expected a smaller plan (the limit "
                            "ExpandOptions::max_steps)"};
  }

  // Iterations b..e-1 of `ss` with `var` (if any) stepping; `where` is the path expansion
  // errors name (the phase's), `range` the loop's count.
  Status count_loop(const std::vector<StepDecl>& ss, Env& env, const std::string& var, int64_t b,
                    int64_t e, const std::string& where, const std::string& range) {
    bool flat = true;
    for (auto& s : ss) flat = flat && !std::holds_alternative<LoopDecl>(s);
    if (flat) {  // every iteration adds ss.size() steps (e - b <= max_steps: checked)
      uint64_t add = (static_cast<uint64_t>(e) - static_cast<uint64_t>(b)) * ss.size();
      if (counted_ + add > opt_.max_steps) return too_many_steps(where);
      counted_ += add;
      return ok_status();
    }
    for (int64_t i = b; i < e; ++i) {
      if (!var.empty()) env[var] = i;
      size_t before = counted_;
      BOD_CHECK(count_steps(ss, env, where));
      if (uncounted_) return ok_status();
      if (counted_ == before && ++idle_counted_ > opt_.max_steps)
        return Error{range, "the program's loops run more than " + std::to_string(opt_.max_steps) +
                                " iterations that expand to no step; expected smaller counts "
                                "(the limit ExpandOptions::max_steps)"};
    }
    if (!var.empty()) env.erase(var);
    return ok_status();
  }

  Status count_steps(const std::vector<StepDecl>& ss, Env& env, const std::string& where) {
    for (auto& s : ss) {
      if (counted_ >= opt_.max_steps) return too_many_steps(where);
      auto* l = std::get_if<LoopDecl>(&s);
      if (!l) {
        counted_++;
        continue;
      }
      auto b = l->begin.eval(env), e = l->end.eval(env);
      if (!b || !e) {
        uncounted_ = true;
        return ok_status();
      }
      if (*e <= *b || !expands(l->steps)) continue;
      BOD_CHECK(
          check_count(static_cast<uint64_t>(*e) - static_cast<uint64_t>(*b), l->path + "/range"));
      BOD_CHECK(count_loop(l->steps, env, l->var, *b, *e, where, l->path + "/range"));
      if (uncounted_) return ok_status();
    }
    return ok_status();
  }

  // A loop's count is bounded by the steps limit before it runs: every iteration of a body
  // that expands adds a step, unless its inner loops are empty (counted by iteration()).
  Status check_count(uint64_t n, const std::string& path) {
    if (n > opt_.max_steps)
      return Error{path,
                   "the loop runs " + std::to_string(n) +
                       " times; the program may expand "
                       "to at most " +
                       std::to_string(opt_.max_steps) +
                       " steps, expected a smaller count (the limit ExpandOptions::max_steps)"};
    return ok_status();
  }

  // One iteration of a loop body; iterations that add no step are counted and bounded by
  // the steps limit too, so nested loops over empty ranges cannot spin.
  Status iteration(const std::vector<StepDecl>& ss, Env& env, const Where& w,
                   const std::string& path) {
    size_t before = plan_.order.size();
    BOD_CHECK(steps(ss, env, w));
    if (plan_.order.size() == before && ++idle_ > opt_.max_steps)
      return Error{path, "the program's loops run more than " + std::to_string(opt_.max_steps) +
                             " iterations that expand to no step; expected smaller counts (the "
                             "limit ExpandOptions::max_steps)"};
    return ok_status();
  }

  Status loop(const LoopDecl& l, Env& env, Where w) {
    BOD_TRY(int64_t b, eval(l.begin, env, l.path + "/range"));
    BOD_TRY(int64_t e, eval(l.end, env, l.path + "/range"));
    if (e <= b || !expands(l.steps)) return ok_status();  // an empty body costs nothing
    BOD_CHECK(check_count(static_cast<uint64_t>(e) - static_cast<uint64_t>(b), l.path + "/range"));
    for (int64_t i = b; i < e; ++i) {
      env[l.var] = i;
      if (l.var == m_.layer_var) w.layer = i;
      Status st = iteration(l.steps, env, w, l.path + "/range");
      if (!st) {
        env.erase(l.var);
        return st;
      }
    }
    env.erase(l.var);
    return ok_status();
  }

  Status call(const CallDecl& d, const Env& env, const Where& w) {
    PlanCall c;
    c.number = static_cast<int>(plan_.calls.size()) + 1;
    c.where = w;
    c.where.path = d.path;
    c.kernel = &m_.kernels[static_cast<size_t>(d.kernel)];
    c.env = env;
    for (auto& [name, e] : d.params) {
      BOD_TRY(c.env[name], eval(e, env, d.path + "/params/" + name));
    }
    const KernelDecl& k = *c.kernel;
    for (size_t s = 0; s < k.slots.size(); ++s) {
      Shape sh;
      int64_t n = 1;
      for (size_t i = 0; i < k.slots[s].shape.size(); ++i) {
        std::string sp = k.path + "/slots/" + std::to_string(s) + "/shape/" + std::to_string(i);
        BOD_TRY(int64_t v, eval(k.slots[s].shape[i], c.env, sp));
        if (v <= 0)
          return Error{sp, "slot " + k.slots[s].name + " dimension '" + k.slots[s].shape[i].text() +
                               "' = " + std::to_string(v) + " at call " + std::to_string(c.number) +
                               "; expected a positive size"};
        if (v > kMaxElements / n)
          return Error{sp, "slot " + k.slots[s].name + " dimension '" + k.slots[s].shape[i].text() +
                               "' = " + std::to_string(v) + " at call " + std::to_string(c.number) +
                               " makes the shape more than 2^40 elements; expected a size that "
                               "fits in memory"};
        n *= v;
        sh.push_back(v);
      }
      c.slot_shapes.push_back(sh);
      c.slot_bytes.push_back(static_cast<size_t>(n) * dtype_size(k.slots[s].dtype));
      BoundArray a{Binding::Kind::zeros, "", {}, "zeros"};
      auto it = d.args.find(static_cast<int>(s));
      std::string ap = d.path + "/args/" + k.slots[s].name;
      if (it != d.args.end() && it->second.kind != Binding::Kind::zeros) {
        BOD_TRY(a, bind(it->second, env, ap));
        auto t = bound_type(m_, a).value();
        if (t.numel() != n || t.dtype != k.slots[s].dtype)
          return Error{ap, "'" + a.text + "' is " + shape_str(t.shape) + " " + dtype_name(t.dtype) +
                               " but slot " + k.slots[s].name + " is " + shape_str(sh) + " " +
                               dtype_name(k.slots[s].dtype) +
                               "; expected the same element count and dtype"};
      }
      c.args.push_back(a);
    }
    c.statics = d.static_inputs;
    c.inters = d.intermediates;
    if (d.outputs)
      c.outputs = *d.outputs;
    else
      c.outputs = {SlotRef{static_cast<int>(k.slots.size()) - 1, d.path}};
    if (d.bo_key) {
      auto key = expand_template(*d.bo_key, env);
      if (!key) return Error{d.path + "/bo_key", key.error().what};
      c.key.bo_key = key.value();
      c.bo_key_template = *d.bo_key;
    } else {
      c.key.bo_key = c.bo_key_template = k.name;
    }
    c.shared_nonstatic = d.shared_nonstatic;
    c.key.ns = d.cache;
    for (auto& [slot, tmpl] : d.shared_alias) {
      auto pool = expand_template(tmpl, env);
      if (!pool) return Error{d.path + "/shared_alias", pool.error().what};
      c.alias[slot] = pool.value();
    }
    place(c);
    for (auto& o : d.keep) {
      std::string kp = d.path + "/keep/" + k.slots[static_cast<size_t>(o.slot)].name;
      if (!c.is_output(o.slot))
        return Error{kp, "slot " + k.slots[static_cast<size_t>(o.slot)].name +
                             " is not in output_indices; only outputs are returned"};
      BOD_TRY(BoundArray t, bind(o.target, env, kp));
      if (t.nrows >= 0)
        return Error{kp, "a kept output goes to a whole var region; '" + t.text +
                             "' is a row range (use a host write_rows step)"};
      auto tt = bound_type(m_, t).value();
      if (static_cast<size_t>(tt.numel()) * dtype_size(tt.dtype) !=
          c.slot_bytes[static_cast<size_t>(o.slot)])
        return Error{kp, "'" + t.text + "' is " + shape_str(tt.shape) + " " + dtype_name(tt.dtype) +
                             " but output slot is " +
                             shape_str(c.slot_shapes[static_cast<size_t>(o.slot)]) +
                             "; expected the same size"};
      c.keep.push_back({o.slot, t, o.view});
    }
    BOD_CHECK(account(meta_bytes(c), d.path));
    plan_.order.push_back({true, plan_.calls.size()});
    plan_.calls.push_back(std::move(c));
    return ok_status();
  }

  // What the real engine raises before touching a BO for this call's shared_alias settings
  // ("" when nothing): an alias on a static index, out of range, or with an empty name.
  static std::string alias_raises(const PlanCall& c) {
    std::string bad_static, bad_range, bad_name;
    int n = static_cast<int>(c.kernel->slots.size());
    for (auto& [slot, name] : c.alias) {
      if (c.is_static(slot)) bad_static += (bad_static.empty() ? "" : ", ") + std::to_string(slot);
      if (slot < 0 || slot >= n)
        bad_range += (bad_range.empty() ? "" : ", ") + std::to_string(slot);
      if (name.empty()) bad_name += (bad_name.empty() ? "" : ", ") + std::to_string(slot);
    }
    if (!bad_static.empty())
      return "ValueError: shared_alias must not target static_input_indices [" + bad_static + "]";
    if (!bad_range.empty())
      return "ValueError: shared_alias indices [" + bad_range + "] out of range for " +
             std::to_string(n) + " args";
    if (!bad_name.empty())
      return "ValueError: shared_alias pool names must be non-empty strings; bad at arg indices [" +
             bad_name + "]";
    return "";
  }

  // The BO of one slot as the engine looks it up at a key's first call: the alias pool
  // (name, bytes), the shared_nonstatic pool (kernel, slot, bytes), or the key's own BO.
  static Placement first_call_placement(const PlanCall& c, int s) {
    Placement p;
    p.ns = c.key.ns;
    p.bytes = c.slot_bytes[static_cast<size_t>(s)];
    p.index = s;
    if (c.alias.count(s)) {
      p.pool = BoPool::alias;
      p.name = c.alias.at(s);
      p.index = -1;
    } else if (c.shared_nonstatic && !c.is_static(s)) {
      p.pool = BoPool::shared;
      p.name = c.kernel->name;
    } else {
      p.pool = BoPool::key;
      p.name = c.key.bo_key;
    }
    return p;
  }

  // The BO each slot lands in, as the real KernelCache picks it (docs/ARCHITECTURE.md: the
  // one place placements are computed). Pools are looked up only at a key's first call; later
  // calls reuse that call's BO list whatever their sizes or flags, and an argument beyond its
  // length has no BO. A call the engine raises on does not create its key.
  void place(PlanCall& c) {
    c.raises = alias_raises(c);
    auto kit = keys_.find(c.key);
    bool first = kit == keys_.end();
    c.key_first_call = first ? c.number : kit->second.first;
    for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
      int si = static_cast<int>(s);
      Placement p;
      if (first) {
        p = first_call_placement(c, si);
      } else if (s < kit->second.second.size()) {
        p = kit->second.second[s];
      } else {
        p.ns = c.key.ns;
        p.pool = BoPool::unbound;
        p.name = c.key.bo_key;
        p.index = si;
        p.bo = -1;
        p.first_call = kit->second.first;
      }
      if (first) {
        auto it = bo_first_.find(p.identity());
        if (it == bo_first_.end())
          it = bo_first_.emplace(p.identity(), std::make_pair(c.number, int(bo_first_.size()) + 1))
                   .first;
        p.first_call = it->second.first;
        p.bo = it->second.second;
      }
      c.place.push_back(std::move(p));
    }
    if (first && c.raises.empty()) keys_.emplace(c.key, std::make_pair(c.number, c.place));
  }

  Status host(const HostDecl& d, const Env& env, const Where& w) {
    PlanHost h;
    h.where = w;
    h.where.path = d.path;
    h.decl = &d;
    OpCall oc;
    oc.info = d.op;
    for (auto& [role, b] : d.operands) {
      BOD_TRY(h.operands[role], bind(b, env, d.path + "/" + role));
      bool writes = false;
      for (auto& o : d.op->operands)
        writes = writes || (o.role == role && o.access == Access::write);
      if (writes && h.operands[role].nrows >= 0)
        return Error{d.path + "/" + role, "'" + h.operands[role].text +
                                              "' is a row range: ranges "
                                              "are read-only (write rows with a write_rows step)"};
      oc.operands[role] = bound_type(m_, h.operands[role]).value();
    }
    BOD_TRY(h.params, eval_params(*d.op, d.params, env, d.path));
    oc.params = h.params;
    std::string msg = d.op->run ? check_host_action(oc) : check_op_shapes(oc);
    if (!msg.empty()) return Error{d.path, msg};
    BOD_CHECK(account(meta_bytes(h), d.path));
    plan_.order.push_back({false, plan_.hosts.size()});
    plan_.hosts.push_back(std::move(h));
    return ok_status();
  }

  // Binds every kernel body once per distinct (slot shapes, kernel params), checks its ops'
  // operand shapes and analyses its slot access; every call shares the result.
  Status check_bodies() {
    using Key = std::tuple<const KernelDecl*, std::vector<Shape>, std::vector<int64_t>>;
    std::map<Key, std::shared_ptr<const BoundKernel>> seen;
    for (auto& c : plan_.calls) {
      std::vector<int64_t> params;
      for (auto& p : c.kernel->params) params.push_back(c.env.at(p));
      auto [it, fresh] = seen.try_emplace(Key{c.kernel, c.slot_shapes, params});
      if (fresh) {
        auto body = bind_body(*c.kernel, c.env, c.slot_shapes);
        if (!body) return body.error();
        for (size_t k = 0; k < body->ops.size(); ++k) {
          std::string msg = check_op_shapes(body->ops[k].call);
          if (!msg.empty())
            return Error{c.kernel->body[k].path,
                         msg + " (slot shapes of call " + std::to_string(c.number) + ")"};
        }
        auto access = analyze_access(body.value(), c.kernel->slots.size());
        it->second = std::make_shared<const BoundKernel>(
            BoundKernel{std::move(body.value()), std::move(access)});
      }
      c.bound = it->second;
    }
    return ok_status();
  }

  // Peak bytes of a check run on the CPU device: the process and the plan, the model's
  // tensors and vars, and what BOs add (docs/benchmarks.md, "The memory estimate").
  // Sharing (copy on write): a BO side holding a model tensor's bytes or the zeros costs
  // nothing; a BO costs one block for a kernel that writes it and one for host writes from
  // a var. Copying (a timed run): both sides of every BO. Plus the largest call's no-reuse
  // buffers and the device's spares of them (at most 1 GiB), and the largest kernel body's
  // scratch (locals, gathered strided operands).
  Status estimate() {
    struct Pool {
      size_t bytes = 0;
      bool body_writes = false, host_copies = false;
    };
    std::map<decltype(Placement{}.identity()), Pool> pools;
    size_t noreuse = 0, scratch = 0;
    for (auto& c : plan_.calls) {
      if (c.bound) scratch = std::max(scratch, c.bound->body.scratch_bytes());
      size_t per_call = 0;
      for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
        bool body = !c.bound || s >= c.bound->access.size() || c.bound->access[s].written;
        bool copied = c.args[s].kind == Binding::Kind::var;  // vars change: never shared
        size_t blocks = !opt_.share ? 2 : size_t(body) + size_t(copied);
        per_call += blocks * c.slot_bytes[s];
        if (c.place[s].pool == BoPool::unbound) continue;
        Pool& p = pools[c.place[s].identity()];
        p.bytes = std::max(p.bytes, c.slot_bytes[s]);
        p.body_writes = p.body_writes || body;
        p.host_copies = p.host_copies || copied;
      }
      noreuse = std::max(noreuse, per_call);
    }
    size_t bos = 0;
    for (auto& [k, p] : pools)
      bos += p.bytes * (!opt_.share ? 2 : size_t(p.body_writes) + size_t(p.host_copies));
    Plan::Memory& mem = plan_.memory;
    mem = Plan::Memory{host_bytes(), bos,          noreuse + std::min(noreuse, size_t(1) << 30),
                       scratch,      meta_total(), kProcessBytes};
    size_t buffers = mem.host + mem.bos + mem.noreuse + mem.scratch;
    plan_.estimated_bytes = mem.plan_needs();
    if (plan_.estimated_bytes > opt_.max_bytes)
      return Error{"/program", "the plan needs about " + gib(plan_.estimated_bytes) + " (" +
                                   gib(buffers) + " of buffers, " + gib(meta_total()) +
                                   " of plan metadata), over the memory cap of " +
                                   gib(opt_.max_bytes) +
                                   "; shrink the model or raise --max-memory"};
    return ok_status();
  }
  // The process before any plan: code, libraries, heap (measured: 8-12 MB for a tiny model).
  static constexpr size_t kProcessBytes = size_t(10) << 20;

  // Bytes of the model's tensors and vars (vars twice: the store and its snapshot).
  size_t host_bytes() const {
    size_t host = 0;
    for (auto& t : m_.tensors) host += static_cast<size_t>(numel(t.shape)) * dtype_size(t.dtype);
    for (auto& v : m_.vars) host += 2 * static_cast<size_t>(numel(v.shape)) * dtype_size(v.dtype);
    return host;
  }

  // ---- plan metadata: the memory of the plan itself, counted against --max-memory as the
  // expansion goes, so a small model whose loops unroll to millions of steps is refused before
  // it exhausts memory. Estimates of heap bytes (node and string overheads included).
  static constexpr size_t kNode = 48;  // a std::map node's overhead besides its value
  static size_t str(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }
  template <typename T>
  static size_t vec(const std::vector<T>& v) {
    return v.capacity() * sizeof(T);
  }
  static size_t bound(const BoundArray& a) { return str(a.name) + str(a.text) + vec(a.index); }
  static size_t refs(const std::vector<SlotRef>& v) {
    size_t n = vec(v);
    for (auto& r : v) n += str(r.path);
    return n;
  }
  static size_t where(const Where& w) { return str(w.phase) + str(w.path); }
  static size_t meta_bytes(const PlanCall& c) {
    size_t n = where(c.where) + vec(c.slot_shapes) + vec(c.slot_bytes) + vec(c.args) +
               refs(c.statics) + refs(c.inters) + refs(c.outputs) + str(c.key.bo_key) +
               str(c.bo_key_template) + vec(c.keep) + str(c.key.ns) + str(c.raises) + vec(c.place);
    for (auto& [k, v] : c.env) n += kNode + sizeof(std::pair<const std::string, int64_t>) + str(k);
    for (auto& sh : c.slot_shapes) n += vec(sh);
    for (auto& a : c.args) n += bound(a);
    for (auto& [k, v] : c.alias) n += kNode + sizeof(std::pair<const int, std::string>) + str(v);
    for (auto& k : c.keep) n += bound(k.target);
    for (auto& p : c.place) n += str(p.ns) + str(p.name);
    return n;
  }
  static size_t meta_bytes(const PlanHost& h) {
    size_t n =
        where(h.where) + h.params.size() * (kNode + sizeof(std::pair<const std::string, double>));
    for (auto& [k, a] : h.operands)
      n += kNode + sizeof(std::pair<const std::string, BoundArray>) + str(k) + bound(a);
    for (auto& [k, v] : h.params) n += str(k);
    return n;
  }
  // The plan's metadata now: the objects' own heap, plus the vectors holding them (at the
  // capacity they will have after the next push).
  size_t meta_total() const {
    auto next = [](size_t size, size_t cap) {
      return size < cap ? cap : std::max<size_t>(1, 2 * cap);
    };
    return meta_ + next(plan_.calls.size(), plan_.calls.capacity()) * sizeof(PlanCall) +
           next(plan_.hosts.size(), plan_.hosts.capacity()) * sizeof(PlanHost) +
           next(plan_.order.size(), plan_.order.capacity()) * sizeof(PlanStep);
  }
  // Counts one more step's metadata; refuses when metadata and the model's own tensors (the
  // buffers known before the plan is complete) pass the memory cap.
  Status account(size_t bytes, const std::string& path) {
    if (host_ > opt_.max_bytes)  // the model's own tensors are over: no step needed to say so
      return Error{"/program", "the plan needs about " + gib(host_) +
                                   " of buffers for the "
                                   "model's tensors and vars alone, over the memory cap of " +
                                   gib(opt_.max_bytes) +
                                   "; shrink the model or raise --max-memory"};
    meta_ += bytes;
    size_t total = meta_total() + host_;
    if (total > opt_.max_bytes)
      return Error{"/program",
                   "the plan's metadata reaches about " + gib(meta_total()) + " at step " +
                       std::to_string(plan_.order.size() + 1) + " (" + path + "; " + gib(total) +
                       " with the model's tensors), over the memory cap of " + gib(opt_.max_bytes) +
                       "; expected fewer steps (smaller loop counts) or raise --max-memory"};
    return ok_status();
  }

  static std::string gib(size_t b) {
    char s[32];
    if (b >= (size_t(1) << 30))
      std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(b) / (1 << 30));
    else if (b >= (size_t(1) << 20))
      std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
    else
      std::snprintf(s, sizeof s, "%zu bytes", b);
    return s;
  }

  const Model& m_;
  ExpandOptions opt_;
  size_t idle_ = 0;             // loop iterations that added no step
  size_t counted_ = 0;          // count_program: steps counted so far
  size_t idle_counted_ = 0;     // count_program: iterations that added no step
  bool uncounted_ = false;      // count_program met an error the expansion reports
  size_t meta_ = 0;             // heap bytes of the plan's calls and host steps so far
  size_t host_ = host_bytes();  // the model's tensors and vars
  Plan plan_;
  // key -> (first call, its BO list)
  std::map<BoKeyId, std::pair<int, std::vector<Placement>>> keys_;
  // BO -> (first call, BO number)
  std::map<decltype(Placement{}.identity()), std::pair<int, int>> bo_first_;
};

}  // namespace

Result<Plan> expand(const Model& m, const ExpandOptions& opt) {
  return Expander(m, opt).run();
}

}  // namespace bod
