// The identity part of a Trace, straight from the expanded plan.
#include "runner/runner.h"

namespace bod {

namespace {

ArraySource source_of(Binding::Kind k) {
  switch (k) {
    case Binding::Kind::tensor:
      return ArraySource::tensor;
    case Binding::Kind::var:
      return ArraySource::var;
    case Binding::Kind::placeholder:
      return ArraySource::placeholder;
    case Binding::Kind::zeros:
      return ArraySource::zeros;
  }
  return ArraySource::zeros;
}

std::vector<int> indices(const std::vector<SlotRef>& refs) {
  std::vector<int> v;
  v.reserve(refs.size());
  for (auto& r : refs) v.push_back(r.index);
  return v;
}

}  // namespace

// In place (a TraceSlot is a few hundred bytes with strings: no temporaries).
void fill_call_identity(const PlanCall& c, TraceCall& t) {
  t.number = c.number;
  t.ns = c.key.ns;
  t.kernel = c.kernel->name;
  t.bo_key = c.key.bo_key;
  t.bo_key_template = c.bo_key_template;
  t.statics = indices(c.statics);
  t.inters = indices(c.inters);
  t.outputs = indices(c.outputs);
  t.shared_nonstatic = c.shared_nonstatic;
  t.alias = c.alias;
  t.phase = c.where.phase;
  t.token = c.where.token;
  t.layer = c.where.layer;
  t.path = c.where.path;
  t.key_first_call = c.key_first_call;
  t.slots.resize(c.kernel->slots.size());
  for (size_t s = 0; s < c.kernel->slots.size(); ++s) {
    int si = static_cast<int>(s);
    TraceSlot& ts = t.slots[s];
    ts.slot = si;
    ts.name = c.kernel->slots[s].name;
    ts.role = c.is_static(si)  ? SlotRole::static_input
              : c.is_inter(si) ? SlotRole::intermediate
                               : SlotRole::input;
    ts.output = c.is_output(si);
    ts.host.shape = c.slot_shapes[s];
    ts.host.dtype = c.kernel->slots[s].dtype;
    ts.host.bytes = c.slot_bytes[s];
    ts.host.source = source_of(c.args[s].kind);
    ts.host.name = c.args[s].text;
    ts.place = c.place[s];
    const SlotAccess& a = c.bound->access[s];
    ts.access = BodyAccess{a.read_before_write, a.overwritten, a.written, a.rewritten_before_read};
  }
}

Trace plan_trace_header(const Plan& plan, const std::string& model_path) {
  Trace t;
  const Model& m = *plan.model;
  t.header.producer = std::string("bo-doctor ") + BOD_VERSION;
  t.header.model_name = m.name;
  t.header.model_path = model_path;
  t.header.caps.access = true;
  for (auto& k : m.kernels) {
    KernelInfo ki{k.name, {}, k.npu.path};
    for (auto& s : k.slots) ki.slots.push_back({s.name, s.dtype});
    t.header.kernels.push_back(std::move(ki));
  }
  t.header.top_k = m.verify.top_k;
  for (auto& [name, tol] : m.verify.outputs)
    t.header.verify.push_back({name, tol.cosine, tol.atol, tol.rtol});
  t.calls.resize(plan.calls.size());
  // Every call's slot array allocated now, in one sweep, filled later: a few KB each, so
  // allocating them between the run's small per-call buffers would make malloc consolidate
  // its free lists on every call.
  for (size_t i = 0; i < plan.calls.size(); ++i)
    t.calls[i].slots.reserve(plan.calls[i].kernel->slots.size());
  return t;
}

Trace plan_trace(const Plan& plan, const std::string& model_path) {
  Trace t = plan_trace_header(plan, model_path);
  for (size_t i = 0; i < plan.calls.size(); ++i) fill_call_identity(plan.calls[i], t.calls[i]);
  return t;
}

}  // namespace bod
