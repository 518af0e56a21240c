#include "runner/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "core/hash.h"
#include "core/pages.h"
#include "engine/engine.h"
#include "kernels/host_actions.h"
#include "runner/bo_hashes.h"
#include "runner/metrics.h"
#include "runner/probe.h"
#include "runner/probe_select.h"
#include "runner/var_store.h"

namespace bod {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One call's host inputs: what the reuse engine is handed (placeholders as zeros), what the
// no-reuse engine is handed (the real weights), and what the no-reuse dataflow's own copy of
// the program holds (the same until the dataflows split).
struct CallInputs {
  std::vector<HostSlot> reuse, noreuse, dataflow;
  std::vector<std::vector<uint8_t>> snapshots;  // inputs read through a view, copied
  bool dataflows_agree = true;
};

class Runner {
 public:
  Runner(const Plan& p, const std::string& model_path, const HostData& d, Backend& b,
         const RunOptions& opt)
      : p_(p),
        m_(*p.model),
        data_(d),
        b_(b),
        opt_(opt),
        reuse_(b, opt.no_reuse),
        noreuse_(b),
        rstore_(m_, &b),
        nstore_(m_, &b),
        t_(opt.no_reuse ? plan_trace_header(p, model_path) : Trace{}),
        bo_hashes_(b, opt.chunk_hashes),
        probe_select_(ProbeRule{opt.probe_all, opt.probe_every_call, opt.probe_calls_per_key}) {
    rstore_.keep_chunk_hashes(opt.chunk_hashes);
    size_t most = 0;  // one zero buffer for every unbound slot; never reallocated later
    for (auto& c : p.calls)
      for (auto b : c.slot_bytes) most = std::max(most, b);
    for (auto& h : p.hosts)  // host steps read "zeros" too, with the type expansion checked
      for (auto& [role, a] : h.operands)
        if (a.kind == Binding::Kind::zeros) most = std::max(most, host_zeros(a).bytes());
    zeros_ = alloc_pages(most, true);  // never null; large: zero pages that hold no memory
    Capabilities& caps = t_.header.caps;
    caps.run = true;
    caps.no_reuse = caps.byte_diffs = caps.verify = opt.no_reuse;
    caps.probe = opt.no_reuse && (opt.probe || opt.probe_all);
    t_.header.backend = b.name();
    t_.timings = opt.timings;
  }

  Trace run() {
    auto t0 = Clock::now();
    std::vector<double> steady[2];  // per engine: times of calls after their key's first
    size_t done = 0;
    for (auto& step : p_.order) {
      if (opt_.progress) opt_.progress(done, p_.order.size());
      ++done;
      if (!step.is_call) {
        host(p_.hosts[step.index]);
        continue;
      }
      const PlanCall& c = p_.calls[step.index];
      EngineFigures* f[2] = {&t_.reuse, &t_.noreuse};
      EngineFigures before[2] = {*f[0], *f[1]};
      call(c);
      // This call's write, dispatch and read time per engine. Work both engines do alike —
      // the dispatch, the output reads, and the writes of a call where reuse skips nothing —
      // is timed twice and counted once, at the lower figure, for both: timer noise then
      // cannot make one engine look slower than the other for the same work.
      double w[2], d[2], r[2];
      for (int e = 0; e < 2; ++e) {
        w[e] = f[e]->write_s - before[e].write_s;
        d[e] = f[e]->dispatch_s - before[e].dispatch_s;
        r[e] = f[e]->read_s - before[e].read_s;
      }
      if (opt_.no_reuse) {
        d[0] = d[1] = std::min(d[0], d[1]);
        r[0] = r[1] = std::min(r[0], r[1]);
        const TraceCall& tc = rec(c);
        if (tc.h2d_reuse == tc.h2d_noreuse && tc.writes_reuse == tc.writes_noreuse)
          w[0] = w[1] = std::min(w[0], w[1]);
      }
      for (int e = 0; e < 2; ++e) {
        double spent = w[e] + d[e] + r[e];
        if (c.key_first_call == c.number)
          f[e]->first_calls_s += spent;
        else
          steady[e].push_back(spent);
      }
    }
    if (opt_.progress) opt_.progress(done, p_.order.size());
    for (int e = 0; e < 2; ++e) {
      EngineFigures& f = e ? t_.noreuse : t_.reuse;
      std::vector<double>& v = steady[e];
      f.steady_calls = static_cast<long>(v.size());
      if (!v.empty()) {
        std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
        f.steady_median_s = v[v.size() / 2];
      }
    }
    if (opt_.no_reuse) verify();
    if (opt_.stats) {
      opt_.stats->var_chunks_hashed = rstore_.chunks_hashed();
      opt_.stats->var_chunks_kept = rstore_.chunks_kept();
      opt_.stats->bo_chunks_hashed = bo_hashes_.chunks_hashed();
      opt_.stats->bo_chunks_kept = bo_hashes_.chunks_kept();
    }
    t_.wall_s = since(t0);
    if (!opt_.timings) {
      for (EngineFigures* f : {&t_.reuse, &t_.noreuse})
        f->write_s = f->dispatch_s = f->read_s = f->steady_median_s = f->first_calls_s = 0;
      t_.wall_s = 0;
    }
    return std::move(t_);
  }

 private:
  TraceCall& rec(const PlanCall& c) { return t_.calls[static_cast<size_t>(c.number - 1)]; }

  // Who reads a var, named only when a stale view is reported (built lazily: most reads
  // report nothing, and the text would be built on every step of every call).
  using ReaderName = std::function<std::string()>;

  void stale_view(const std::string& var, ViewRef& v, const ReaderName& reader_name,
                  int read_call) {
    std::string reader = reader_name();
    v.reported = true;
    split_ = true;  // the reuse dataflow now reads other bytes than the no-reuse one
    LastChange lc = reuse_.last_change(v.bo);
    t_.view_reads.push_back(
        ViewRead{var, reader, read_call, v.call->number, v.slot, lc.call, lc.host_write});
  }

  // The zeros a host step reads: the type expansion checked its shapes with, in zeros_.
  TensorRef host_zeros(const BoundArray& a) {
    auto t = bound_type(m_, a);
    TensorRef r = t ? t.value() : TensorRef{};
    r.data = zeros_.get();
    return r;
  }

  TensorRef zeros(size_t bytes) {
    return TensorRef{zeros_.get(), DType::i8, {static_cast<int64_t>(bytes)}};
  }

  // The array a binding names in the reuse dataflow (`noreuse` false) or the no-reuse one.
  TensorRef resolve(const BoundArray& a, bool noreuse, bool placeholder_as_zeros, size_t bytes,
                    const ReaderName& reader, int call_no, int* view_call = nullptr) {
    switch (a.kind) {
      case Binding::Kind::zeros:
        return zeros(bytes);
      case Binding::Kind::placeholder:
        return placeholder_as_zeros ? zeros(bytes) : data_.tensor(m_, a);
      case Binding::Kind::tensor:
        return data_.tensor(m_, a);
      case Binding::Kind::var:
        if (noreuse) return nstore_.read(a, [](const std::string&, ViewRef&) {});
        return rstore_.read(
            a, [&](const std::string& var, ViewRef& v) { stale_view(var, v, reader, call_no); },
            view_call);
    }
    return {};
  }

  void host(const PlanHost& h) {
    run_host(h, false);
    if (opt_.no_reuse) run_host(h, true);
  }

  void run_host(const PlanHost& h, bool noreuse) {
    OpCall oc;
    oc.info = h.decl->op;
    oc.params = h.params;
    ReaderName reader = [&h] { return "host step " + h.decl->action + " (" + h.where.path + ")"; };
    VarStore& store = noreuse ? nstore_ : rstore_;
    // An action that writes part of its output (write_rows) says which bytes, once its operands
    // are bound; the store keeps the hashes of the rest (a KV cache's other rows).
    auto part = oc.info->written_part;
    for (auto& spec : oc.info->operands) {
      auto it = h.operands.find(spec.role);
      if (it == h.operands.end()) continue;
      oc.operands[spec.role] =
          spec.access == Access::write
              ? part ? store.write(it->second, VarStore::ByteRange{}) : store.write(it->second)
          : it->second.kind == Binding::Kind::zeros
              ? host_zeros(it->second)
              : resolve(it->second, noreuse, false, 0, reader, 0);
    }
    if (part) {
      for (auto& spec : oc.info->operands) {
        auto it = h.operands.find(spec.role);
        if (spec.access != Access::write || it == h.operands.end()) continue;
        VarStore::ByteRange r{0, SIZE_MAX};  // one chunk or less: all of it changed
        if (oc.operand(spec.role).bytes() > kHashChunk) {
          auto [off, n] = part(oc);
          r = VarStore::ByteRange{off, n};
        }
        store.mark_changed(it->second, r);
      }
    }
    if (!oc.info->run) {  // a reference op on the host
      run_op(oc);
      return;
    }
    std::vector<int32_t> toks;
    std::string err = run_host_action(oc, &toks);
    if (!err.empty()) throw FatalError{{h.where.path, err, Exit::bad_input}};
    if (!toks.empty())
      (noreuse ? t_.tokens_noreuse : t_.tokens_reuse).push_back({toks[0], topk(oc.operand("src"))});
  }

  std::vector<int32_t> topk(const TensorRef& src) {
    int64_t base = (src.rows() - 1) * src.cols();
    std::vector<int32_t> idx(static_cast<size_t>(src.cols()));
    std::iota(idx.begin(), idx.end(), 0);
    size_t k = std::min(idx.size(), static_cast<size_t>(m_.verify.top_k));
    std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(),
                      [&](int32_t a, int32_t b) {
                        float x = src.get(base + a), y = src.get(base + b);
                        return x > y || (x == y && a < b);
                      });
    idx.resize(k);
    return idx;
  }

  // Resolves every slot's host array for both engines and records it (hash, source).
  CallInputs inputs(const PlanCall& c) {
    size_t n = c.kernel->slots.size();
    ReaderName reader = [&c] {
      return "call " + std::to_string(c.number) + " (" + c.kernel->name + ")";
    };
    CallInputs in;
    in.reuse.resize(n);
    in.noreuse.resize(n);
    // Inputs read through a zero-copy view are snapshotted: the reuse engine's own writes may
    // change that BO, and both engines must see the bytes the caller passed.
    in.snapshots.resize(n);
    TraceCall* tc = opt_.no_reuse ? &rec(c) : nullptr;  // nothing is recorded without it
    for (size_t s = 0; s < n; ++s) {
      const BoundArray& a = c.args[s];
      int view_call = 0;
      TensorRef r = resolve(a, false, true, c.slot_bytes[s], reader, c.number, &view_call);
      if (view_call) {
        in.snapshots[s].assign(r.data, r.data + c.slot_bytes[s]);
        r.data = in.snapshots[s].data();
        if (tc) tc->slots[s].host.source = ArraySource::view;
        if (tc) tc->slots[s].host.view_of_call = view_call;
      }
      // np.empty(0) stands in for freed weights: the engine's write uploads 0 bytes.
      bool empty =
          a.kind == Binding::Kind::placeholder && a.placeholder == Binding::Placeholder::empty;
      // Model tensors and the zeros never change during a run: the backend may share them,
      // and their hashes are taken once (host_hashes). Vars (views included) change.
      bool stable = immutable_source(a);
      in.reuse[s] = HostSlot{r.data, empty ? 0 : c.slot_bytes[s]};
      in.reuse[s].stable = stable;
      TensorRef nr = a.kind == Binding::Kind::placeholder ? data_.tensor(m_, a) : r;
      in.noreuse[s] = HostSlot{nr.data, c.slot_bytes[s]};
      in.noreuse[s].stable = stable;
    }
    // The no-reuse dataflow's inputs: the same as the no-reuse engine's until they split.
    in.dataflow = in.noreuse;
    for (size_t s = 0; split_ && s < n; ++s) {
      if (c.args[s].kind != Binding::Kind::var) continue;
      TensorRef t = nstore_.read(c.args[s], [](const std::string&, ViewRef&) {});
      in.dataflow[s].data = t.data;
      in.dataflow[s].stable = false;
      if (std::memcmp(t.data, in.noreuse[s].data, c.slot_bytes[s]) != 0) in.dataflows_agree = false;
    }
    return in;
  }

  void call(const PlanCall& c) {
    if (opt_.no_reuse) fill_call_identity(c, rec(c));
    CallInputs in = inputs(c);
    if (opt_.no_reuse) host_hashes(c, in);  // before the writes: the engine reuses them
    auto tw = Clock::now();
    Prepared rp = reuse_.prepare(c, in.reuse);
    t_.reuse.write_s += since(tw);
    if (opt_.no_reuse) bo_hashes_.note_writes(rp);
    t_.reuse.h2d_bytes += rp.h2d_bytes;
    t_.reuse.writes += rp.writes;
    t_.reuse.calls++;
    if (!opt_.no_reuse) {  // the benchmark's reference run: nothing recorded
      reuse_only(c, rp);
      return;
    }
    record_writes(c, rp, in);
    record_pre(c, rp, in);
    // The no-reuse engine's call is needed only when its kernel could see other bytes than
    // the reuse engine's (see can_take_reuse_results); otherwise it takes the reuse engine's
    // results, and every fact recorded below is the same as if it had run.
    // A timed run (timings: the report's per-engine times) measures the no-reuse engine's real
    // calls, so it takes no shortcut.
    bool shadow = !(opt_.shadow_skip && !opt_.timings && can_take_reuse_results(c, rp));
    if (opt_.stats) ++(shadow ? opt_.stats->shadow_runs : opt_.stats->shadow_taken);
    tw = Clock::now();
    size_t h2d_before = noreuse_.h2d_bytes;
    int writes_before = noreuse_.writes;
    std::vector<BoHandle> nbos;
    if (shadow)
      nbos = noreuse_.prepare(c, in.noreuse);
    else
      noreuse_.account(c);  // the same writes, counted
    t_.noreuse.write_s += since(tw);
    TraceCall& tc = rec(c);
    tc.h2d_noreuse = noreuse_.h2d_bytes - h2d_before;
    tc.writes_noreuse = noreuse_.writes - writes_before;
    t_.noreuse.h2d_bytes += tc.h2d_noreuse;
    t_.noreuse.writes += tc.writes_noreuse;
    t_.noreuse.calls++;

    std::vector<std::vector<uint8_t>> reuse_pre;
    if (shadow) reuse_pre = stale_bytes(c, rp);
    dispatch_both(c, rp, shadow ? &nbos : nullptr);
    record_post(c, rp, shadow ? &nbos : nullptr, reuse_pre);
    std::vector<const uint8_t*> rout;
    std::vector<const uint8_t*> nout;
    read_outputs(c, rp, shadow ? &nbos : nullptr, in, rout, nout);
    if (opt_.probe || opt_.probe_all) probe(c, in.noreuse, nout);
    keep_outputs(c, rp, rout, nout, in.dataflows_agree);
    if (shadow) noreuse_.release(nbos);
    if (!in.dataflows_agree) noreuse_dataflow_call(c, in.dataflow);
  }

  static bool immutable_source(const BoundArray& a) { return a.kind != Binding::Kind::var; }

  void host_hashes(const PlanCall& c, CallInputs& in) {
    for (size_t s = 0; s < in.reuse.size(); ++s) {
      // A var's bytes: through the store, which re-reads only the chunks written since.
      const BoundArray& a = c.args[s];
      in.reuse[s].hash = a.kind == Binding::Kind::var && in.reuse[s].bytes > kHashChunk
                             ? rstore_.hash(a.name, in.reuse[s].data, in.reuse[s].bytes)
                             : host_hashes_.hash(in.reuse[s]);
      in.reuse[s].hashed = true;
      if (in.noreuse[s].data == in.reuse[s].data && in.noreuse[s].bytes == in.reuse[s].bytes) {
        in.noreuse[s].hash = in.reuse[s].hash;
      } else {
        in.noreuse[s].hash = host_hashes_.hash(in.noreuse[s]);
      }
      in.noreuse[s].hashed = true;
    }
  }

  // True when the no-reuse engine's run of this call is known to leave exactly the bytes the
  // reuse engine's dispatch left (in the slots the body writes; the others keep their host
  // bytes), so it need not run: the reference body ran on this call's own shapes on a BO per
  // slot (none shared, none short), and every slot whose bytes before dispatch can reach the
  // results held the same bytes (by hash) in both engines: those the body reads before
  // writing them, and those it writes only in part.
  bool can_take_reuse_results(const PlanCall& c, const Prepared& rp) {
    if (rp.failed || rp.shape_call != &c || c.kernel->npu.mode != NpuBinary::Mode::none)
      return false;
    const TraceCall& tc = rec(c);
    std::vector<char> sharing = slots_sharing_a_bo(tc);
    for (size_t s = 0; s < tc.slots.size(); ++s) {
      const TraceSlot& ts = tc.slots[s];
      if (rp.slots[s].bo == ReuseEngine::kNone || rp.slots[s].bo_bytes < ts.host.bytes ||
          sharing[s])
        return false;
      bool same = ts.reuse_pre == ts.noreuse_pre;
      const BodyAccess& a = ts.access;
      if (a.reads_before_write && !same) return false;
      if (a.written && !a.overwritten && !same) return false;
    }
    return true;
  }

  // The reuse engine's decisions, per slot, into the trace.
  void record_writes(const PlanCall& c, const Prepared& rp, const CallInputs& in) {
    TraceCall& tc = rec(c);
    tc.failed = rp.failed;
    tc.error = rp.error;
    tc.h2d_reuse = rp.h2d_bytes;
    tc.writes_reuse = rp.writes;
    for (size_t s = 0; s < tc.slots.size(); ++s) {
      TraceSlot& ts = tc.slots[s];
      const SlotWrite& w = rp.slots[s];
      ts.host.hash = in.reuse[s].hash;
      ts.bo_bytes = w.bo_bytes;
      ts.written = w.written;
      ts.written_bytes = w.written_bytes;
      ts.written_hash = w.written_hash;
    }
  }

  // BO hashes before dispatch. A reuse BO's hash is known without reading it when nothing
  // changed its bytes since they were last hashed (a weight BO the calls only read).
  void record_pre(const PlanCall& c, const Prepared& rp, const CallInputs& in) {
    TraceCall& tc = rec(c);
    for (size_t s = 0; s < tc.slots.size(); ++s) {
      TraceSlot& ts = tc.slots[s];
      const SlotWrite& w = rp.slots[s];
      ts.noreuse_pre = in.noreuse[s].hash;
      if (w.bo == ReuseEngine::kNone) continue;  // no BO (the engine raised or did not bind it)
      size_t cmp = std::min(ts.host.bytes, w.bo_bytes);
      // A slot just written whole holds the host bytes: their hash is the BO's hash.
      bool whole = w.written && w.written_bytes == ts.host.bytes && cmp == ts.host.bytes;
      ts.reuse_pre = whole ? ts.host.hash : bo_hashes_.hash(w.bo, cmp);
    }
  }

  // The reuse BO bytes of slots whose pre-dispatch bytes differ from the no-reuse engine's
  // (for the stale-byte count after dispatch).
  std::vector<std::vector<uint8_t>> stale_bytes(const PlanCall& c, const Prepared& rp) {
    TraceCall& tc = rec(c);
    std::vector<std::vector<uint8_t>> reuse_pre(tc.slots.size());
    for (size_t s = 0; s < tc.slots.size(); ++s) {
      const TraceSlot& ts = tc.slots[s];
      const SlotWrite& w = rp.slots[s];
      if (w.bo == ReuseEngine::kNone || ts.reuse_pre == ts.noreuse_pre) continue;
      size_t cmp = std::min(ts.host.bytes, w.bo_bytes);
      const uint8_t* rd = b_.device_bytes(w.bo);
      reuse_pre[s].assign(rd, rd + cmp);
    }
    return reuse_pre;
  }

  // Dispatches both engines; which goes first alternates per call so neither one always
  // finds the weights already in cache.
  // `nbos` null: the no-reuse engine takes the reuse engine's results (no dispatch).
  void dispatch_both(const PlanCall& c, const Prepared& rp, const std::vector<BoHandle>* nbos) {
    auto reuse = [&] {
      auto td = Clock::now();
      if (!rp.failed) {
        std::vector<BoHandle> rbos;
        for (auto& w : rp.slots) rbos.push_back(w.bo);
        const PlanCall& sc = *rp.shape_call;
        note(dispatch_body(b_, c, rbos, sc.slot_shapes, *sc.bound));
        reuse_.note_dispatch(c, rp);
      }
      t_.reuse.dispatch_s += since(td);
    };
    auto noreuse = [&] {
      if (!nbos) return;
      auto td = Clock::now();
      dispatch_body(b_, c, *nbos, c.slot_shapes, *c.bound);
      t_.noreuse.dispatch_s += since(td);
    };
    if (c.number % 2) {
      reuse();
      noreuse();
    } else {
      noreuse();
      reuse();
    }
  }

  // BO hashes after dispatch, and where they differ the byte counts. `nbos` null: the no-reuse
  // engine took the reuse engine's results (can_take_reuse_results): its bytes are the reuse
  // BO's in the slots the body writes, the host bytes in the others.
  void record_post(const PlanCall& c, const Prepared& rp, const std::vector<BoHandle>* nbos,
                   const std::vector<std::vector<uint8_t>>& reuse_pre) {
    TraceCall& tc = rec(c);
    // With the reference body running (no NPU binary), a slot the body never writes keeps its
    // pre-dispatch bytes: its post hash is its pre hash, no second pass over (weight) bytes.
    bool body_is_kernel = c.kernel->npu.mode == NpuBinary::Mode::none;
    std::vector<char> sharing = slots_sharing_a_bo(tc);
    for (size_t s = 0; s < tc.slots.size(); ++s) {
      TraceSlot& ts = tc.slots[s];
      BoHandle bo = rp.slots[s].bo;
      size_t cmp = std::min(ts.host.bytes, ts.bo_bytes);
      if (body_is_kernel && !ts.access.written && !rp.failed && !sharing[s]) {
        ts.reuse_post = ts.reuse_pre;
        ts.noreuse_post = ts.noreuse_pre;
        if (bo != ReuseEngine::kNone) bo_hashes_.remember(bo, cmp, ts.reuse_post);
        continue;
      }
      // The rows the body wrote, when they are known: the reference body ran on this call's
      // own shapes, and no other slot writes the same BO.
      const SlotAccess* rows =
          body_is_kernel && !rp.failed && rp.shape_call == &c && !sharing[s] && cmp == ts.host.bytes
              ? &c.bound->access[s]
              : nullptr;
      if (!nbos) {  // written by the body: the same bytes in both engines
        ts.reuse_post = bo_hashes_.after_dispatch(bo, cmp, rows);
        ts.noreuse_post = ts.reuse_post;
        continue;
      }
      const uint8_t* ndata = b_.device_bytes((*nbos)[s]);
      ts.noreuse_post = hash_bytes(ndata, ts.host.bytes);
      if (bo == ReuseEngine::kNone) continue;
      const uint8_t* rd = b_.device_bytes(bo);
      ts.reuse_post = bo_hashes_.after_dispatch(bo, cmp, rows);
      if (ts.reuse_post == ts.noreuse_post || cmp != ts.host.bytes) continue;
      for (size_t i = 0; i < cmp; ++i) {
        if (rd[i] == ndata[i]) continue;
        ts.diff_bytes++;
        if (!reuse_pre[s].empty() && reuse_pre[s][i] == rd[i]) ts.stale_diff_bytes++;
      }
    }
  }

  // Reads back the outputs (zero-copy views for the reuse engine) and compares them. `nbos`
  // null: the no-reuse engine took the reuse engine's results (its output is the reuse
  // engine's where the body writes the slot, the host bytes where it does not).
  void read_outputs(const PlanCall& c, const Prepared& rp, const std::vector<BoHandle>* nbos,
                    const CallInputs& in, std::vector<const uint8_t*>& rout,
                    std::vector<const uint8_t*>& nout) {
    size_t n = c.kernel->slots.size();
    auto valid = [&](int i) { return i >= 0 && static_cast<size_t>(i) < n; };
    rout.assign(n, nullptr);
    nout.assign(n, nullptr);
    auto tr = Clock::now();
    for (auto& o : c.outputs)
      if (valid(o.index) && !rp.failed)
        rout[static_cast<size_t>(o.index)] = reuse_.read_output(rp, o.index);
    t_.reuse.read_s += since(tr);
    tr = Clock::now();
    TraceCall& tc = rec(c);
    for (auto& o : c.outputs) {
      if (!valid(o.index)) continue;
      auto s = static_cast<size_t>(o.index);
      if (!nbos) {
        nout[s] = tc.slots[s].access.written ? rout[s] : in.noreuse[s].data;
        continue;
      }
      b_.sync_from_device((*nbos)[s]);
      nout[s] = b_.host_bytes((*nbos)[s]);
    }
    t_.noreuse.read_s += since(tr);
    for (auto& o : c.outputs) {
      if (!valid(o.index) || rp.failed) continue;
      auto s = static_cast<size_t>(o.index);
      DType dt = c.kernel->slots[s].dtype;
      Divergence d = compare(TensorRef{const_cast<uint8_t*>(rout[s]), dt, c.slot_shapes[s]},
                             TensorRef{const_cast<uint8_t*>(nout[s]), dt, c.slot_shapes[s]});
      tc.outputs_cmp.push_back({o.index, d.bit_exact, d.cosine, d.max_abs, d.max_rel, d.nan_a,
                                d.inf_a, d.nan_b, d.inf_b, d.elements});
    }
  }

  // Canary-probes the slots probe_select_ picks, but records those whose outcome is known
  // (known_probe) without running them.
  void probe(const PlanCall& c, const std::vector<HostSlot>& host,
             const std::vector<const uint8_t*>& nout) {
    TraceCall& tc = rec(c);
    for (const std::vector<int>& group : probe_select_.select(c)) {
      std::vector<int> slots;
      for (int slot : group)
        if (!known_probe(c, slot)) slots.push_back(slot);
      if (slots.empty()) continue;
      for (auto& p : probe_slots(b_, c, *c.bound, host, nout, slots))
        tc.slots[static_cast<size_t>(p.slot)].probe = ProbeResult{true, p.read, p.unwritten_bytes};
    }
  }

  // With the shortcuts on and the reference body as the kernel, the probe of a slot the body
  // overwrites before any read, or never touches, has a known outcome: no canary byte can
  // reach an output (read false), and every byte is written (0 unwritten) or none is (every
  // whole element unwritten). It is recorded without the canary runs and, by the same
  // argument, leaving it out of a group probe changes nothing for the others.
  bool known_probe(const PlanCall& c, int slot) {
    if (!opt_.shadow_skip || c.kernel->npu.mode != NpuBinary::Mode::none) return false;
    TraceSlot& ts = rec(c).slots[static_cast<size_t>(slot)];
    const BodyAccess& a = ts.access;
    if (a.reads_before_write || (a.written && !a.overwritten)) return false;
    size_t es = dtype_size(c.kernel->slots[static_cast<size_t>(slot)].dtype);
    size_t bytes = c.slot_bytes[static_cast<size_t>(slot)];
    ts.probe = ProbeResult{true, false, a.overwritten ? 0 : bytes / es * es};
    return true;
  }

  // Dataflow: the reuse engine's outputs feed later calls as a real engine's would; the
  // no-reuse engine's outputs feed the no-reuse dataflow while it agrees.
  void keep_outputs(const PlanCall& c, const Prepared& rp, const std::vector<const uint8_t*>& rout,
                    const std::vector<const uint8_t*>& nout, bool agree) {
    const TraceCall& tc = rec(c);
    for (auto& k : c.keep)
      for (auto& o : tc.outputs_cmp)
        if (o.slot == k.slot && !o.bit_exact) split_ = true;
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      if (k.view && !rp.failed) {
        // The BO's bytes were hashed after dispatch (reuse_post) when it holds the whole slot.
        const TraceSlot& ts = tc.slots[s];
        uint64_t h = ts.host.bytes == c.slot_bytes[s] && ts.bo_bytes >= c.slot_bytes[s]
                         ? ts.reuse_post
                         : hash_bytes(rout[s], c.slot_bytes[s]);
        ViewRef v{rp.slots[s].bo, rout[s], c.slot_bytes[s], h, &c, k.slot, false};
        rstore_.keep_view(k.target, v);
      } else {
        std::memcpy(rstore_.write(k.target).data, rp.failed ? nout[s] : rout[s], c.slot_bytes[s]);
      }
    }
    if (!agree) return;
    for (auto& k : c.keep)
      std::memcpy(nstore_.write(k.target).data, nout[static_cast<size_t>(k.slot)],
                  c.slot_bytes[static_cast<size_t>(k.slot)]);
  }

  // The no-reuse dataflow's own call, needed once it differs from the reuse one.
  void noreuse_dataflow_call(const PlanCall& c, const std::vector<HostSlot>& host) {
    t_.noreuse_extra_calls++;
    std::vector<BoHandle> bos = noreuse_.prepare(c, host);
    dispatch_body(b_, c, bos, c.slot_shapes, *c.bound);
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      b_.sync_from_device(bos[s]);
      std::memcpy(nstore_.write(k.target).data, b_.host_bytes(bos[s]), c.slot_bytes[s]);
    }
    noreuse_.release(bos);
  }

  void reuse_only(const PlanCall& c, const Prepared& rp) {
    if (rp.failed) throw FatalError{{c.where.path, rp.error, Exit::findings}};
    std::vector<BoHandle> rbos;
    for (auto& w : rp.slots) rbos.push_back(w.bo);
    auto td = Clock::now();
    note(dispatch_body(b_, c, rbos, c.slot_shapes, *c.bound));
    reuse_.note_dispatch(c, rp);
    t_.reuse.dispatch_s += since(td);
    td = Clock::now();
    for (auto& k : c.keep) {
      auto s = static_cast<size_t>(k.slot);
      const uint8_t* v = reuse_.read_output(rp, k.slot);
      if (k.view)
        rstore_.keep_view(k.target,
                          ViewRef{rp.slots[s].bo, v, c.slot_bytes[s], 0, &c, k.slot, true});
      else
        std::memcpy(rstore_.write(k.target).data, v, c.slot_bytes[s]);
    }
    t_.reuse.read_s += since(td);
  }

  void note(const DispatchInfo& d) {
    t_.header.host_emulated = t_.header.host_emulated && d.host_emulated;
    t_.header.npu_launched = t_.header.npu_launched || d.npu_launched;
  }

  // The end-to-end comparison of the two dataflows' output vars (the verdict is computed
  // from these figures by analysis/verdict).
  void verify() {
    for (auto& [name, tol] : m_.verify.outputs) {
      BoundArray a{Binding::Kind::var, name, {}, name};
      TensorRef r = rstore_.read(a, [&](const std::string& var, ViewRef& w) {
        stale_view(
            var, w, [] { return std::string("the end-to-end verification"); }, 0);
      });
      TensorRef n = nstore_.read(a, [](const std::string&, ViewRef&) {});
      Divergence d = compare(r, n);
      t_.verify.push_back(
          {name, d.cosine, d.max_abs, d.max_rel, d.nan_a + d.inf_a, d.nan_b + d.inf_b});
    }
  }

  const Plan& p_;
  const Model& m_;
  const HostData& data_;
  Backend& b_;
  RunOptions opt_;
  ReuseEngine reuse_;
  NoReuseEngine noreuse_;
  VarStore rstore_, nstore_;
  Trace t_;
  Pages zeros_;         // read only
  BoHashes bo_hashes_;  // of the reuse engine's BOs
  HostHashes host_hashes_;
  // False while the reuse and no-reuse dataflows are known to hold identical vars, so the
  // no-reuse engine's call doubles as the no-reuse dataflow's call without comparing inputs.
  bool split_ = false;
  ProbeSelection probe_select_;
};

}  // namespace

Trace run_plan(const Plan& plan, const std::string& model_path, const HostData& data,
               Backend& backend, const RunOptions& opt) {
  return Runner(plan, model_path, data, backend, opt).run();
}

}  // namespace bod
