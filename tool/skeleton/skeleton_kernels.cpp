// The skeleton's kernels: each recorded kernel's slots in argument order (unique identifier
// names), their dtypes and shapes from the recorded host arrays, a param for a leading
// dimension that varies between calls, and the model.json kernel with its stub body.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "skeleton/skeleton_internal.h"

namespace bod::skeleton_detail {

namespace {

bool is_ident(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// The recorded shape of a slot's host array; a missing or empty one (an unbound slot of a
// hand-written trace) is rebuilt from the byte size.
Shape recorded_shape(const TraceSlot& s, bool* rebuilt) {
  bool ok = !s.host.shape.empty();
  for (auto d : s.host.shape) ok = ok && d > 0;
  if (ok) return s.host.shape;
  size_t es = dtype_size(s.host.dtype);
  int64_t n = es ? static_cast<int64_t>(s.host.bytes / es) : 0;
  if (rebuilt && (n > 1 || !s.host.shape.empty())) *rebuilt = true;
  return {std::max<int64_t>(n, 1)};
}

std::string param_name(size_t i) {
  static const char* kNames[] = {"n", "m", "r", "q"};
  return i < 4 ? kNames[i] : "n" + std::to_string(i + 1);
}

}  // namespace

std::string base_kernel(const std::string& name) {
  size_t at = name.rfind('/');
  if (at == std::string::npos || at == 0 || name.size() < at + 6 ||
      name.compare(name.size() - 4, 4, "args") != 0)
    return name;
  for (size_t i = at + 1; i + 4 < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, at);
}

KernelPlan plan_kernel(const Trace& t, const KernelInfo& k, std::vector<int> calls,
                       const std::vector<Shape>& known) {
  KernelPlan kp;
  kp.name = k.name;
  kp.calls = std::move(calls);
  size_t n = k.slots.size();
  std::set<std::string> used;
  for (size_t s = 0; s < n; ++s) {
    std::string nm = k.slots[s].name;
    if (!is_ident(nm) || used.count(nm)) {
      std::string alt = "arg" + std::to_string(s);
      for (int i = 2; used.count(alt); ++i)
        alt = "arg" + std::to_string(s) + "_" + std::to_string(i);
      if (!nm.empty())
        kp.notes.push_back("slot " + std::to_string(s) + " '" + nm + "' is named " + alt +
                           " (slot names must be unique identifiers)");
      nm = alt;
    }
    used.insert(nm);
    kp.slot_names.push_back(nm);
  }
  const TraceCall& first = t.calls[static_cast<size_t>(kp.calls[0])];
  kp.dtypes.resize(n);
  kp.shape.resize(n);
  kp.param_of.assign(n, -1);
  std::map<std::vector<int64_t>, int> groups;  // leading dims over the calls -> param
  for (size_t s = 0; s < n; ++s) {
    kp.dtypes[s] = first.slots[s].host.dtype;
    bool rebuilt = false;
    std::vector<Shape> shapes;
    for (int ci : kp.calls) {
      const TraceSlot& ts = t.calls[static_cast<size_t>(ci)].slots[s];
      shapes.push_back(recorded_shape(ts, &rebuilt));
      if (ts.host.dtype != kp.dtypes[s] && kp.notes.size() < 40)
        kp.notes.push_back("slot " + kp.slot_names[s] + " is " + dtype_name(ts.host.dtype) +
                           " at call " + std::to_string(ci + 1) + " but " +
                           dtype_name(kp.dtypes[s]) + " at the first call; the skeleton uses " +
                           dtype_name(kp.dtypes[s]));
    }
    bool none = true;  // no call passed a shape here (np.empty(0) placeholders)
    for (int ci : kp.calls)
      none = none && t.calls[static_cast<size_t>(ci)].slots[s].host.bytes == 0;
    if (none && s < known.size() && !known[s].empty()) {
      kp.shape[s] = known[s];
      kp.notes.push_back("slot " + kp.slot_names[s] +
                         ": every call passed an empty placeholder; its shape is the one " +
                         base_kernel(k.name) + " recorded with another argument count");
      continue;
    }
    if (rebuilt)
      kp.notes.push_back("slot " + kp.slot_names[s] +
                         ": no recorded shape; its shape is rebuilt from its byte size");
    bool same =
        std::all_of(shapes.begin(), shapes.end(), [&](const Shape& x) { return x == shapes[0]; });
    if (same) {
      kp.shape[s] = shapes[0];
      continue;
    }
    bool lead_only = !shapes[0].empty();
    std::vector<int64_t> lead;
    for (auto& x : shapes) {
      lead_only = lead_only && x.size() == shapes[0].size() &&
                  std::equal(x.begin() + 1, x.end(), shapes[0].begin() + 1);
      lead.push_back(x.empty() ? 0 : x[0]);
    }
    if (lead_only) {
      auto it = groups.emplace(lead, static_cast<int>(groups.size())).first;
      kp.param_of[s] = it->second;
      kp.shape[s].assign(shapes[0].begin() + 1, shapes[0].end());
    } else {
      kp.shape[s] = shapes[0];
      std::string other;
      for (auto& x : shapes)
        if (x != shapes[0]) {
          other = shape_text(x);
          break;
        }
      kp.notes.push_back("slot " + kp.slot_names[s] +
                         " has differing shapes, not only in the "
                         "leading dimension (" +
                         shape_text(shapes[0]) + " at the first call, " + other +
                         " later): the skeleton uses the first call's shape for every call");
    }
  }
  kp.params.resize(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) kp.params[i] = param_name(i);
  // The stub writes every output slot (never one a call declares static: that would add a
  // static-clobber the recorded kernel may not have).
  std::set<int> outs, statics;
  for (int ci : kp.calls) {
    const TraceCall& c = t.calls[static_cast<size_t>(ci)];
    for (int o : c.outputs)
      if (o >= 0 && static_cast<size_t>(o) < n) outs.insert(o);
    for (int s : c.statics) statics.insert(s);
  }
  for (int o : outs)
    if (!statics.count(o)) kp.fill.push_back(o);
  return kp;
}

std::vector<int64_t> call_params(const KernelPlan& kp, const TraceCall& c) {
  std::vector<int64_t> v(kp.params.size(), 1);
  for (size_t s = 0; s < kp.param_of.size(); ++s)
    if (kp.param_of[s] >= 0)
      v[static_cast<size_t>(kp.param_of[s])] = recorded_shape(c.slots[s], nullptr)[0];
  return v;
}

Shape model_shape(const KernelPlan& kp, size_t s, const std::vector<int64_t>& params) {
  if (kp.param_of[s] < 0) return kp.shape[s];
  Shape r{params[static_cast<size_t>(kp.param_of[s])]};
  r.insert(r.end(), kp.shape[s].begin(), kp.shape[s].end());
  return r;
}

ojson kernel_json(const KernelPlan& kp, const KernelInfo& k) {
  ojson j;
  std::string doc = std::string(kSkeletonTodo) + ". The stub only fills the output slots with 0";
  if (!kp.fill.empty()) {
    doc += " (";
    for (size_t i = 0; i < kp.fill.size(); ++i)
      doc += (i ? ", " : "") + kp.slot_names[static_cast<size_t>(kp.fill[i])];
    doc += ")";
  }
  doc += ". Recorded: " + std::to_string(kp.calls.size()) + " call(s)";
  if (!k.binary.empty()) doc += ", NPU binary '" + k.binary + "'";
  doc += ".";
  for (auto& n : kp.notes) doc += " Note: " + n + ".";
  j["doc"] = doc;
  if (!kp.params.empty()) j["params"] = kp.params;
  ojson slots = ojson::array();
  for (size_t s = 0; s < kp.slot_names.size(); ++s) {
    ojson sh = ojson::array();
    if (kp.param_of[s] >= 0) sh.push_back(kp.params[static_cast<size_t>(kp.param_of[s])]);
    for (auto d : kp.shape[s]) sh.push_back(d);
    slots.push_back(
        {{"name", kp.slot_names[s]}, {"dtype", dtype_name(kp.dtypes[s])}, {"shape", sh}});
  }
  j["slots"] = slots;
  ojson body = ojson::array();
  for (int s : kp.fill)
    body.push_back({{"op", "fill"}, {"out", kp.slot_names[static_cast<size_t>(s)]}, {"value", 0}});
  j["body"] = body;
  return j;
}

}  // namespace bod::skeleton_detail
