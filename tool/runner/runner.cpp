#include "runner/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "checks/checks.h"
#include "core/hash.h"
#include "engine/engine.h"
#include "kernels/host_actions.h"
#include "runner/metrics.h"
#include "runner/probe.h"
#include "runner/var_store.h"

namespace bod {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct TokenStep {
  int32_t token;
  std::vector<int32_t> topk;
};

class Runner {
 public:
  Runner(const Plan& p, const HostData& d, Backend& b, std::vector<std::unique_ptr<Check>>& checks,
         FindingSink& sink, const RunOptions& opt)
      : p_(p), m_(*p.model), data_(d), b_(b), checks_(checks), sink_(sink), opt_(opt),
        reuse_(b), shadow_(b), rstore_(m_), bstore_(m_) {
    size_t most = 0;  // one zero buffer for every unbound slot; never reallocated later
    for (auto& c : p.calls)
      for (auto b : c.slot_bytes) most = std::max(most, b);
    zeros_.assign(most, 0);
  }

  RunResult run() {
    auto t0 = Clock::now();
    res_.backend = b_.name();
    for (auto& step : p_.order) {
      if (step.is_call) call(p_.calls[step.index]);
      else host(p_.hosts[step.index]);
    }
    if (opt_.shadow) {
      verify();
      for (auto& c : checks_) c->finish(res_.records, sink_);
    }
    res_.wall_s = since(t0);
    return std::move(res_);
  }

 private:
  const uint8_t* zeros(size_t) const { return zeros_.data(); }

  void stale_view(const std::string& var, ViewRef& v, const std::string& reader, int read_call) {
    v.reported = true;
    split_ = true;  // the reuse dataflow now reads other bytes than the baseline's
    ViewEvent e;
    e.var = var;
    e.reader = reader;
    e.read_call = read_call;
    e.captured_call = v.call->number;
    e.kernel = v.call->kernel->name;
    e.bo_key = v.call->bo_key;
    e.slot = v.slot;
    e.slot_name = v.call->kernel->slots[static_cast<size_t>(v.slot)].name;
    e.phase = v.call->where.phase;
    e.token = v.call->where.token;
    e.layer = v.call->where.layer;
    e.path = v.call->where.path;
    e.overwritten_by = reuse_.last_change(v.bo);
    for (auto& c : checks_) c->on_view(e, sink_);
  }

  // The array a binding names, for the reuse dataflow (`base` false) or the baseline.
  TensorRef resolve(const BoundArray& a, bool base, bool placeholder_as_zeros, size_t bytes,
                    const std::string& reader, int call_no, bool* from_view = nullptr) {
    switch (a.kind) {
      case Binding::Kind::zeros: return TensorRef{const_cast<uint8_t*>(zeros(bytes)), DType::i8, {static_cast<int64_t>(bytes)}};
      case Binding::Kind::placeholder:
        if (placeholder_as_zeros)
          return TensorRef{const_cast<uint8_t*>(zeros(bytes)), DType::i8, {static_cast<int64_t>(bytes)}};
        return data_.tensor(m_, a);
      case Binding::Kind::tensor: return data_.tensor(m_, a);
      case Binding::Kind::var:
        if (base) return bstore_.read(a, [](const std::string&, ViewRef&) {});
        return rstore_.read(
            a, [&](const std::string& var, ViewRef& v) { stale_view(var, v, reader, call_no); },
            from_view);
    }
    return {};
  }

  void host(const PlanHost& h) {
    run_host(h, false);
    if (opt_.shadow) run_host(h, true);
  }

  void run_host(const PlanHost& h, bool base) {
    OpCall oc;
    oc.info = h.decl->op;
    oc.params = h.params;
    std::string reader = "host step " + h.decl->action + " (" + h.where.path + ")";
    for (auto& spec : oc.info->operands) {
      auto it = h.operands.find(spec.role);
      if (it == h.operands.end()) continue;
      if (spec.access == Access::write) {
        oc.operands[spec.role] = base ? bstore_.write(it->second) : rstore_.write(it->second);
      } else {
        oc.operands[spec.role] = resolve(it->second, base, false, 0, reader, 0);
      }
    }
    if (find_op(h.decl->action)) {
      run_op(oc);
      return;
    }
    std::vector<int32_t> toks;
    std::string err = run_host_action(oc, &toks);
    if (!err.empty()) throw FatalError{{h.where.path, err, Exit::bad_input}};
    if (!toks.empty()) (base ? tokens_base_ : tokens_reuse_).push_back({toks[0], topk(oc.operand("src"))});
  }

  std::vector<int32_t> topk(const TensorRef& src) {
    int64_t base = (src.rows() - 1) * src.cols();
    std::vector<int32_t> idx(static_cast<size_t>(src.cols()));
    std::iota(idx.begin(), idx.end(), 0);
    size_t k = std::min(idx.size(), static_cast<size_t>(m_.verify.top_k));
    std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(), [&](int32_t a, int32_t b) {
      float x = src.get(base + a), y = src.get(base + b);
      return x > y || (x == y && a < b);
    });
    idx.resize(k);
    return idx;
  }

  void call(const PlanCall& c) {
    size_t n = c.kernel->slots.size();
    std::string reader = "call " + std::to_string(c.number) + " (" + c.kernel->name + ")";
    std::vector<HostSlot> rh(n), sh(n);
    CallRecord rec;
    rec.call = &c;
    rec.slots.resize(n);
    // Inputs read through a zero-copy view are snapshotted: the reuse engine's own writes may
    // change that BO, and both engines must see the bytes the caller passed.
    std::vector<std::vector<uint8_t>> snap(n);
    for (size_t s = 0; s < n; ++s) {
      const BoundArray& a = c.args[s];
      bool from_view = false;
      TensorRef r = resolve(a, false, true, c.slot_bytes[s], reader, c.number, &from_view);
      if (from_view) {
        snap[s].assign(r.data, r.data + c.slot_bytes[s]);
        r.data = snap[s].data();
      }
      rh[s] = HostSlot{r.data, c.slot_bytes[s], a.kind == Binding::Kind::placeholder, a.text};
      TensorRef sr = a.kind == Binding::Kind::placeholder ? data_.tensor(m_, a) : r;
      sh[s] = HostSlot{sr.data, c.slot_bytes[s], false, a.text};
    }
    const BoundKernel& bk = bound(c, c);
    const Result<Body>& body = bk.body;

    auto tw = Clock::now();
    Prepared rp = reuse_.prepare(c, rh);
    res_.reuse.write_s += since(tw);
    res_.reuse.h2d_bytes += rp.h2d_bytes;
    res_.reuse.writes += rp.writes;
    res_.reuse.calls++;
    if (!opt_.shadow) {
      reuse_only(c, rp, body.value());
      return;
    }
    // Baseline inputs: the same as the shadow's while both dataflows agree.
    std::vector<HostSlot> bh = sh;
    bool agree = true;
    for (size_t s = 0; split_ && s < n; ++s) {
      if (c.args[s].kind != Binding::Kind::var) continue;
      TensorRef t = bstore_.read(c.args[s], [](const std::string&, ViewRef&) {});
      bh[s].data = t.data;
      if (std::memcmp(t.data, sh[s].data, c.slot_bytes[s]) != 0) agree = false;
    }
    tw = Clock::now();
    size_t sh_before = shadow_.h2d_bytes;
    int sw_before = shadow_.writes;
    std::vector<BoHandle> sbos = shadow_.prepare(c, sh);
    res_.shadow.write_s += since(tw);
    res_.shadow.h2d_bytes += shadow_.h2d_bytes - sh_before;
    res_.shadow.writes += shadow_.writes - sw_before;
    res_.shadow.calls++;

    rec.first_of_key = rp.first_of_key;
    rec.key_first_call = rp.key_first_call;
    rec.failed = rp.failed;
    rec.fail_reason = rp.fail_reason;
    rec.h2d_reuse = rp.h2d_bytes;
    rec.writes_reuse = rp.writes;
    rec.h2d_shadow = shadow_.h2d_bytes - sh_before;
    rec.writes_shadow = shadow_.writes - sw_before;
    const auto& access = bk.access;
    // With the reference body running (no NPU binary), a slot the body never writes keeps its
    // pre-dispatch bytes: its post hash is its pre hash, no second pass over (weight) bytes.
    bool body_is_kernel = c.kernel->npu.mode == NpuBinary::Mode::none;
    std::vector<std::vector<uint8_t>> reuse_pre(n);
    for (size_t s = 0; s < n; ++s) {
      SlotRecord& sr = rec.slots[s];
      const Placement& pl = rp.slots[s];
      int si = static_cast<int>(s);
      sr.slot = si;
      sr.name = c.kernel->slots[s].name;
      sr.role = c.is_static(si) ? SlotRole::static_input
                : c.is_inter(si) ? SlotRole::intermediate : SlotRole::input;
      sr.output = c.is_output(si);
      sr.bytes = c.slot_bytes[s];
      sr.binding = c.args[s];
      sr.placeholder = rh[s].placeholder;
      sr.host_hash = hash_bytes(rh[s].data, rh[s].bytes);
      uint64_t shadow_host = rh[s].data == sh[s].data ? sr.host_hash : hash_bytes(sh[s].data, sr.bytes);
      sr.bo_id = pl.bo_id;
      sr.bo_bytes = pl.bo_bytes;
      sr.written = pl.written;
      sr.written_bytes = pl.written_bytes;
      sr.resident = pl.resident;
      sr.resident_call = pl.resident_call;
      sr.resident_hash = pl.resident_hash;
      sr.size_mismatch = pl.size_mismatch;
      sr.size_note = pl.size_note;
      sr.shared_with_other_slot = pl.shared;
      sr.kernel_overwrites = access[s].overwritten;
      sr.kernel_reads_first = access[s].read_before_write;
      size_t cmp = std::min(sr.bytes, pl.bo_bytes);
      // A slot just written whole holds the host bytes: their hash is the BO's hash.
      bool whole = pl.written && pl.written_bytes == sr.bytes && cmp == sr.bytes;
      const uint8_t* rd = whole ? nullptr : b_.device_bytes(pl.bo);
      sr.reuse_pre = whole ? sr.host_hash : hash_bytes(rd, cmp);
      sr.shadow_pre = shadow_host;  // the shadow writes every slot whole
      if (sr.reuse_pre != sr.shadow_pre) {
        if (!rd) rd = b_.device_bytes(pl.bo);
        reuse_pre[s].assign(rd, rd + cmp);
      }
    }

    // Dispatch both engines; which goes first alternates per call so neither one always
    // finds the weights already in cache.
    auto dispatch_reuse = [&] {
      auto td = Clock::now();
      if (!rp.failed) {
        std::vector<BoHandle> rbos;
        for (auto& pl : rp.slots) rbos.push_back(pl.bo);
        const PlanCall& sc = *rp.shape_call;
        if (&sc == &c) {
          note(dispatch_body(b_, c, rbos, c.slot_shapes, body.value()));
        } else {
          note(dispatch_body(b_, c, rbos, sc.slot_shapes, bound(c, sc).body.value()));
        }
        reuse_.note_dispatch(c, rp);
      }
      res_.reuse.dispatch_s += since(td);
    };
    auto dispatch_shadow = [&] {
      auto td = Clock::now();
      dispatch_body(b_, c, sbos, c.slot_shapes, body.value());
      res_.shadow.dispatch_s += since(td);
    };
    if (c.number % 2) {
      dispatch_reuse();
      dispatch_shadow();
    } else {
      dispatch_shadow();
      dispatch_reuse();
    }

    for (size_t s = 0; s < n; ++s) {
      SlotRecord& sr = rec.slots[s];
      if (body_is_kernel && !access[s].written && !rp.failed && !sr.shared_with_other_slot) {
        sr.reuse_post = sr.reuse_pre;
        sr.shadow_post = sr.shadow_pre;
        continue;
      }
      const uint8_t* rd = b_.device_bytes(rp.slots[s].bo);
      const uint8_t* sd = b_.device_bytes(sbos[s]);
      size_t cmp = std::min(sr.bytes, sr.bo_bytes);
      sr.reuse_post = hash_bytes(rd, cmp);
      sr.shadow_post = hash_bytes(sd, sr.bytes);
      if (sr.reuse_post == sr.shadow_post || cmp != sr.bytes) continue;
      for (size_t i = 0; i < cmp; ++i) {
        if (rd[i] == sd[i]) continue;
        sr.diff_bytes++;
        if (!reuse_pre[s].empty() && reuse_pre[s][i] == rd[i]) sr.stale_diff_bytes++;
      }
    }

    // Readback of outputs: zero-copy views for the reuse engine.
    auto tr = Clock::now();
    std::vector<uint8_t*> rout(n, nullptr);
    for (auto& o : c.outputs) {
      if (o.index < 0 || static_cast<size_t>(o.index) >= n) continue;
      auto s = static_cast<size_t>(o.index);
      if (!rp.failed) rout[s] = reuse_.read_output(rp, o.index);
    }
    res_.reuse.read_s += since(tr);
    tr = Clock::now();
    std::vector<uint8_t*> sout(n, nullptr);
    for (auto& o : c.outputs) {
      if (o.index < 0 || static_cast<size_t>(o.index) >= n) continue;
      auto s = static_cast<size_t>(o.index);
      b_.sync_from_device(sbos[s]);
      sout[s] = b_.map(sbos[s]);
    }
    res_.shadow.read_s += since(tr);
    for (auto& o : c.outputs) {
      if (o.index < 0 || static_cast<size_t>(o.index) >= n || rp.failed) continue;
      auto s = static_cast<size_t>(o.index);
      DType dt = c.kernel->slots[s].dtype;
      Divergence d = compare(TensorRef{rout[s], dt, c.slot_shapes[s]},
                             TensorRef{sout[s], dt, c.slot_shapes[s]});
      rec.outputs.push_back({o.index, d.bit_exact, d.cosine, d.max_abs, d.max_rel, d.nan_a,
                             d.inf_a, d.nan_b, d.inf_b, d.elements});
    }
    if (opt_.probe || opt_.probe_all) probe(c, rec, sh, sout, body.value());
    for (auto& ch : checks_) ch->on_call(rec, sink_);
    for (auto& k : c.keep)
      for (auto& o : rec.outputs)
        if (o.slot == k.slot && !o.bit_exact) split_ = true;

    // Dataflow: the reuse engine's outputs feed later calls as a real engine's would.
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      if (k.view && !rp.failed) {
        ViewRef v{rp.slots[s].bo, rout[s], c.slot_bytes[s], hash_bytes(rout[s], c.slot_bytes[s]),
                  &c, k.slot, false};
        rstore_.keep_view(k.target, v);
      } else {
        std::memcpy(rstore_.write(k.target).data, rp.failed ? sout[s] : rout[s], c.slot_bytes[s]);
      }
    }
    if (agree) {
      for (auto& k : c.keep)
        std::memcpy(bstore_.write(k.target).data, sout[static_cast<size_t>(k.slot)],
                    c.slot_bytes[static_cast<size_t>(k.slot)]);
    }
    shadow_.release(sbos);
    if (!agree) baseline_call(c, bh, body.value());
    res_.records.push_back(std::move(rec));
  }

  void probe(const PlanCall& c, CallRecord& rec, const std::vector<HostSlot>& sh,
             const std::vector<uint8_t*>& sout, const Body& body) {
    std::vector<const uint8_t*> ref(sout.begin(), sout.end());
    auto store = [&](const std::vector<SlotProbe>& probes) {
      for (auto& p : probes) {
        SlotRecord& s = rec.slots[static_cast<size_t>(p.slot)];
        s.probed = true;
        s.probe_read = p.read;
        s.probe_unwritten_bytes = p.unwritten_bytes;
      }
    };
    if (opt_.probe_all) {
      if (++probed_calls_[c.bo_key] > opt_.probe_calls_per_key) return;
      for (size_t s = 0; s < sh.size(); ++s)
        store(probe_slots(b_, c, body, sh, ref, {static_cast<int>(s)}));
      return;
    }
    std::vector<int> slots;
    for (auto& r : c.inters)
      if (r.index >= 0 && static_cast<size_t>(r.index) < sh.size() && !c.is_static(r.index))
        slots.push_back(r.index);
    store(probe_slots(b_, c, body, sh, ref, slots));
  }

  // The no-reuse baseline's own call, needed once its dataflow differs from the reuse one.
  void baseline_call(const PlanCall& c, const std::vector<HostSlot>& bh, const Body& body) {
    res_.verify.baseline_extra_calls++;
    std::vector<BoHandle> bos = shadow_.prepare(c, bh);
    dispatch_body(b_, c, bos, c.slot_shapes, body);
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      b_.sync_from_device(bos[s]);
      std::memcpy(bstore_.write(k.target).data, b_.map(bos[s]), c.slot_bytes[s]);
    }
    shadow_.release(bos);
  }

  void reuse_only(const PlanCall& c, const Prepared& rp, const Body& body) {
    if (rp.failed) throw FatalError{{c.where.path, rp.fail_reason, Exit::findings}};
    std::vector<BoHandle> rbos;
    for (auto& pl : rp.slots) rbos.push_back(pl.bo);
    auto td = Clock::now();
    note(dispatch_body(b_, c, rbos, c.slot_shapes, body));
    reuse_.note_dispatch(c, rp);
    res_.reuse.dispatch_s += since(td);
    td = Clock::now();
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      uint8_t* v = reuse_.read_output(rp, k.slot);
      if (k.view)
        rstore_.keep_view(k.target, ViewRef{rp.slots[s].bo, v, c.slot_bytes[s], 0, &c, k.slot, true});
      else
        std::memcpy(rstore_.write(k.target).data, v, c.slot_bytes[s]);
    }
    res_.reuse.read_s += since(td);
  }

  // A kernel's body bound to one call's shapes, with its access analysis; cached because a
  // kernel runs with the same params on many calls.
  struct BoundKernel {
    Result<Body> body;
    std::vector<SlotAccess> access;
  };
  const BoundKernel& bound(const PlanCall& c, const PlanCall& shapes_of) {
    std::vector<int64_t> key;
    for (auto& p : c.kernel->params) key.push_back(shapes_of.env.at(p));
    auto k = std::make_pair(c.kernel, key);
    auto it = bodies_.find(k);
    if (it == bodies_.end()) {
      auto b = bind_body(*c.kernel, shapes_of.env, shapes_of.slot_shapes);
      if (!b) throw FatalError{b.error()};
      auto access = analyze_access(b.value(), c.kernel->slots.size());
      it = bodies_.emplace(k, BoundKernel{std::move(b), std::move(access)}).first;
    }
    return it->second;
  }

  void note(const DispatchInfo& d) {
    res_.host_emulated = res_.host_emulated && d.host_emulated;
    res_.npu_launched = res_.npu_launched || d.npu_launched;
  }

  void verify() {
    Verification& v = res_.verify;
    v.top_k = m_.verify.top_k;
    for (auto& [name, tol] : m_.verify.outputs) {
      BoundArray a{Binding::Kind::var, name, {}, name};
      TensorRef r = rstore_.read(a, [&](const std::string& var, ViewRef& w) {
        stale_view(var, w, "the end-to-end verification", 0);
      });
      TensorRef b = bstore_.read(a, [](const std::string&, ViewRef&) {});
      Divergence d = compare(r, b);
      OutputCheck oc{name, d.cosine, d.max_abs, d.max_rel, tol.cosine, d.nan_a + d.inf_a,
                     d.nan_b + d.inf_b, true};
      oc.pass = d.cosine >= tol.cosine && oc.nan_reuse <= oc.nan_base &&
                (tol.atol < 0 || d.max_abs <= tol.atol) && (tol.rtol < 0 || d.max_rel <= tol.rtol);
      v.pass = v.pass && oc.pass;
      v.outputs.push_back(oc);
    }
    for (auto& t : tokens_reuse_) v.tokens_reuse.push_back(t.token);
    for (auto& t : tokens_base_) v.tokens_base.push_back(t.token);
    for (size_t i = 0; i < tokens_reuse_.size() && i < tokens_base_.size(); ++i) {
      if (tokens_reuse_[i].token == tokens_base_[i].token) continue;
      v.first_token_divergence = static_cast<int>(i);
      auto& tk = tokens_base_[i].topk;
      v.topk_agree = std::find(tk.begin(), tk.end(), tokens_reuse_[i].token) != tk.end();
      v.pass = false;
      break;
    }
    // The gate must not pass a run whose end result diverged: when no error finding explains
    // it (only sub-threshold per-call warnings), the failed verification is one.
    if (!v.pass && !sink_.has_error()) {
      Finding f;
      f.check = output_divergence_info().id;
      f.severity = Severity::error;
      f.message = "end-to-end verification failed although no single call crossed the error "
                  "threshold: small per-call differences added up";
      f.evidence = {{"first token divergence", std::to_string(v.first_token_divergence)}};
      for (auto& o : v.outputs)
        f.evidence.push_back({o.var + " cosine", std::to_string(o.cosine)});
      f.fix = output_divergence_info().fix;
      sink_.add(std::move(f));
    }
  }

  const Plan& p_;
  const Model& m_;
  const HostData& data_;
  Backend& b_;
  std::vector<std::unique_ptr<Check>>& checks_;
  FindingSink& sink_;
  RunOptions opt_;
  ReuseEngine reuse_;
  ShadowEngine shadow_;
  VarStore rstore_, bstore_;
  std::vector<uint8_t> zeros_;
  std::vector<TokenStep> tokens_reuse_, tokens_base_;
  // False while the reuse and baseline dataflows are known to hold identical vars, so the
  // shadow call doubles as the baseline call without comparing inputs.
  bool split_ = false;
  std::map<std::string, int> probed_calls_;  // bo_key -> calls probed (classify)
  std::map<std::pair<const KernelDecl*, std::vector<int64_t>>, BoundKernel> bodies_;
  RunResult res_;
};

}  // namespace

bool CallRecord::diverged() const {
  for (auto& o : outputs)
    if (!o.bit_exact) return true;
  return false;
}

RunResult run_shadow(const Plan& plan, const HostData& data, Backend& backend,
                     std::vector<std::unique_ptr<Check>>& checks, FindingSink& sink,
                     const RunOptions& opt) {
  return Runner(plan, data, backend, checks, sink, opt).run();
}

}  // namespace bod
