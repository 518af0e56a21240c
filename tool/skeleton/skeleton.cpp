// The skeleton model of a trace. Three parts:
//  - kernels: slots in argument order, shapes from the recorded host arrays (a kernel param for
//    a leading dimension that varies between calls), a stub body;
//  - arrays: every distinct recorded binding becomes one slice of a seeded tensor (static or
//    tensor/placeholder bindings) or of a var (the rest); names like "wq[2]" keep their tensor
//    "wq" and index, names that differ only in a number ("w0", "w1") are stacked;
//  - program: one call step per recorded call, then folded. A loop is made only where the
//    steps of N consecutive blocks are equal up to numbers that step evenly with the loop
//    variable (in bo_key and pool templates, binding indices and call params), so expanding the
//    folded program gives back exactly the recorded calls; anything else stays flat.
// The parts: skeleton_kernels.cpp, skeleton_arrays.cpp, skeleton_fold.cpp (skeleton_internal.h);
// this file walks the trace, binds every slot, makes one step per call, folds the runs of calls
// and the repeated phases, and puts the model together.
#include "skeleton/skeleton.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "skeleton/skeleton_internal.h"

namespace bod {

namespace {

using skeleton_detail::Arrays;
using skeleton_detail::call_params;
using skeleton_detail::Folder;
using skeleton_detail::Item;
using skeleton_detail::kernel_json;
using skeleton_detail::KernelPlan;
using skeleton_detail::model_shape;
using skeleton_detail::ojson;
using skeleton_detail::plan_kernel;
using skeleton_detail::Var;

bool has_braces(const std::string& s) {
  return s.find('{') != std::string::npos || s.find('}') != std::string::npos;
}

struct SlotUse {
  int ident = -1;  // -1: unbound
  bool placeholder = false;
  bool empty = false;  // placeholder passed as np.empty(0)
};

// Layer loops over 0..N-1 and repeated phases name their counts as dims L and T when all agree.
void name_counts(ojson& model) {
  std::set<int64_t> ls, ts;
  std::function<void(const ojson&)> scan = [&](const ojson& steps) {
    for (auto& s : steps) {
      if (!s.contains("loop")) continue;
      if (s["loop"] == "l" && s["range"].is_number_integer()) ls.insert(s["range"].get<int64_t>());
      scan(s["steps"]);
    }
  };
  for (auto& ph : model["program"]["phases"]) {
    if (ph.contains("repeat")) ts.insert(ph["repeat"].get<int64_t>());
    scan(ph["steps"]);
  }
  std::function<void(ojson&)> rename = [&](ojson& steps) {
    for (auto& s : steps) {
      if (!s.contains("loop")) continue;
      if (ls.size() == 1 && s["loop"] == "l" && s["range"].is_number_integer()) s["range"] = "L";
      rename(s["steps"]);
    }
  };
  if (ls.size() == 1) model["dims"]["L"] = *ls.begin();
  if (ts.size() == 1) model["dims"]["T"] = *ts.begin();
  for (auto& ph : model["program"]["phases"]) {
    if (ts.size() == 1 && ph.contains("repeat")) ph["repeat"] = "T";
    rename(ph["steps"]);
  }
}

}  // namespace

Result<nlohmann::ordered_json> skeleton_model(const Trace& t, const std::string& trace_name) {
  if (t.calls.empty()) return Error{trace_name, "the trace has no calls; nothing to replay"};
  // Kernels, in the header's order, with the calls of each.
  std::map<std::string, std::vector<int>> calls_of;
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const TraceCall& c = t.calls[i];
    const KernelInfo* k = t.kernel(c.kernel);
    if (!k || k->slots.size() != c.slots.size())
      return Error{trace_name, "call " + std::to_string(c.number) + " names kernel '" + c.kernel +
                                   "', which the header does not declare with its " +
                                   std::to_string(c.slots.size()) + " slots"};
    if (has_braces(c.bo_key))
      return Error{trace_name, "call " + std::to_string(c.number) + ": bo_key '" + c.bo_key +
                                   "' holds '{' or '}', which a model.json template cannot spell"};
    for (auto& [slot, pool] : c.alias)
      if (has_braces(pool))
        return Error{trace_name, "call " + std::to_string(c.number) + ": shared_alias pool '" +
                                     pool +
                                     "' holds '{' or '}', which a model.json template "
                                     "cannot spell"};
    calls_of[c.kernel].push_back(static_cast<int>(i));
  }
  // A recorder records one kernel called with another argument count as "name/15args": per
  // slot index, the first shape any variant of the kernel recorded, for the variant's slots
  // that only ever saw an empty placeholder.
  std::map<std::string, std::vector<skeleton_detail::Shape>> known;
  for (auto& c : t.calls) {
    auto& v = known[skeleton_detail::base_kernel(c.kernel)];
    if (v.size() < c.slots.size()) v.resize(c.slots.size());
    for (size_t s = 0; s < c.slots.size(); ++s) {
      const auto& sh = c.slots[s].host.shape;
      bool ok = !sh.empty() && c.slots[s].host.bytes > 0;
      for (auto d : sh) ok = ok && d > 0;
      if (ok && v[s].empty()) v[s] = sh;
    }
  }
  std::map<std::string, KernelPlan> kernels;
  std::vector<std::string> unused;
  for (auto& k : t.header.kernels) {
    auto it = calls_of.find(k.name);
    if (it == calls_of.end()) {
      unused.push_back(k.name);
      continue;
    }
    kernels.emplace(k.name,
                    plan_kernel(t, k, it->second, known[skeleton_detail::base_kernel(k.name)]));
  }

  // Data that moves on in a slot whose write the engine may skip (static or intermediate): when
  // the calls of one (cache, bo_key) pass two or more distinct host values in such a slot, every
  // value the calls of those keys pass there becomes its own slice of one seeded var per kernel
  // slot, "<kernel>_<slot>_values[k]" (k: the value's first appearance; one hash, one slice), so
  // the skeleton passes different data where the trace did and replays a stale slot. A var, not
  // a tensor: lint's key-collision compares tensor names; the bytes decide at check time. A
  // recorder's names ("arg9@L0") name slots, not arrays, so values are told apart by hash.
  constexpr size_t kMaxValues = 4096;  // per kernel slot; beyond it, bindings stay as recorded
  // In a recording (slot names, not array names) every input slot keeps its values: the
  // recorder names a decode step's activation "arg0@L0" at every token, and one array for all
  // of them would make the activation look constant (a missed-static note advising to make it
  // static once the bodies are real). Views keep their own names.
  auto moves = [&](const TraceCall& c, const TraceSlot& ts) {
    bool skippable = c.is_static(ts.slot) || c.is_inter(ts.slot);
    bool recorded = !t.header.named_bindings && ts.host.source != ArraySource::view;
    return (skippable || recorded) && !ts.output && ts.host.source != ArraySource::zeros &&
           ts.host.source != ArraySource::placeholder;
  };
  // Per (cache, bo_key, slot, binding name): the distinct values. Different names in one key's
  // slot are different arrays (key-collision decides on them by name); one name whose values
  // differ is data that moves on.
  std::map<std::tuple<std::string, std::string, int, std::string>, std::set<uint64_t>> per_key;
  for (auto& c : t.calls)
    for (auto& ts : c.slots)
      if (moves(c, ts)) per_key[{c.ns, c.bo_key, ts.slot, ts.host.name}].insert(ts.host.hash);
  // (kernel, slot, layer); a kernel's arity variants ("k/15args") are the kernel. When every
  // call passing values in a kernel slot carries a layer label, the values are kept per layer
  // ("..._values[l][k]", k counting that layer's values), so the layer loop folds inside the
  // token loop; otherwise one list ("..._values[k]").
  auto moving = [&](const TraceCall& c, const TraceSlot& ts) {
    return moves(c, ts) && per_key[{c.ns, c.bo_key, ts.slot, ts.host.name}].size() >= 2;
  };
  std::map<std::pair<std::string, int>, bool> layered;
  for (auto& c : t.calls)
    for (auto& ts : c.slots)
      if (moving(c, ts)) {
        auto it =
            layered.emplace(std::make_pair(skeleton_detail::base_kernel(c.kernel), ts.slot), true)
                .first;
        it->second = it->second && c.layer >= 0 && !t.header.named_bindings;
      }
  auto slice_key = [&](const TraceCall& c, const TraceSlot& ts) {
    std::string k = skeleton_detail::base_kernel(c.kernel);
    long long l = layered[{k, ts.slot}] ? c.layer : -1;
    return std::make_tuple(k, ts.slot, l);
  };
  std::map<std::tuple<std::string, int, long long>, skeleton_detail::ValueNumbers> slices;
  for (auto& c : t.calls)
    for (auto& ts : c.slots) {
      if (!moving(c, ts)) continue;
      slices.try_emplace(slice_key(c, ts), kMaxValues).first->second.add(ts.host.hash);
    }
  auto value_name = [&](const TraceCall& c, const TraceSlot& ts) -> std::optional<std::string> {
    if (!moving(c, ts)) return std::nullopt;
    auto key = slice_key(c, ts);
    auto& v = slices.at(key);
    if (v.over()) return std::nullopt;
    size_t k = v.number(ts.host.hash);
    const KernelInfo* ki = t.kernel(c.kernel);
    std::string slot = ki && static_cast<size_t>(ts.slot) < ki->slots.size()
                           ? ki->slots[static_cast<size_t>(ts.slot)].name
                           : "arg" + std::to_string(ts.slot);
    std::string layer = std::get<2>(key) >= 0 ? "[" + std::to_string(std::get<2>(key)) + "]" : "";
    return Arrays::indexable(skeleton_detail::base_kernel(c.kernel) + "_" + slot + "_values") +
           layer + "[" + std::to_string(k) + "]";
  };

  // A recorder names a binding by its slot ("arg1", "arg1@L0" with the layer label), not by its
  // array: one slot name in two kernels is two arrays, so the kernel's name goes in front
  // ("o_ffn_arg1@L0" -> the array o_ffn_arg1, layer 0's slice); a kernel called with another
  // argument count ("o_ffn/15args") is the same kernel, its slots the same arrays. Views keep
  // their own names.
  auto recorded_name = [&](const TraceCall& c, const TraceSlot& ts) {
    if (t.header.named_bindings || ts.host.source == ArraySource::view) return ts.host.name;
    return skeleton_detail::base_kernel(c.kernel) + "_" + ts.host.name;
  };

  // Every slot's binding.
  Arrays arrays;
  std::vector<std::vector<SlotUse>> uses(t.calls.size());
  std::vector<std::vector<int64_t>> params(t.calls.size());
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const TraceCall& c = t.calls[i];
    const KernelPlan& kp = kernels.at(c.kernel);
    params[i] = call_params(kp, c);
    uses[i].resize(c.slots.size());
    for (size_t s = 0; s < c.slots.size(); ++s) {
      const TraceSlot& ts = c.slots[s];
      int si = static_cast<int>(s);
      ArraySource src = ts.host.source;
      bool is_static = c.is_static(si);
      bool tensor = src == ArraySource::tensor || src == ArraySource::placeholder || is_static;
      if (src == ArraySource::zeros) continue;  // unbound: zeros, as recorded
      if (ts.output && !tensor) continue;       // outputs are not bound
      SlotUse& u = uses[i][s];
      auto moving = value_name(c, ts);
      if (moving)
        u.ident = arrays.use(*moving, false, kp.dtypes[s], model_shape(kp, s, params[i]), true);
      else
        u.ident = arrays.use(recorded_name(c, ts), tensor, kp.dtypes[s],
                             model_shape(kp, s, params[i]), false, src == ArraySource::placeholder);
      u.placeholder = src == ArraySource::placeholder;
      // np.empty(0): the reuse engine wrote the slot, 0 bytes.
      u.empty = u.placeholder && t.header.caps.run && ts.written && ts.written_bytes == 0 &&
                ts.host.bytes > 0;
    }
  }
  arrays.build();
  ojson tensors_pre = ojson::object(), vars_pre = ojson::object();
  arrays.emit(tensors_pre, vars_pre);
  ojson &tensors = tensors_pre, &vars = vars_pre;

  // Views the program held or read after their BO was rewritten (view_read lines): the call
  // that returned one keeps it as a view in a var, and a host copy reads that var where the
  // program did (before call read_call; when the program only held it, right after the call
  // that rewrote the BO), so check finds the same view-overwritten.
  std::set<std::string> taken;
  for (auto& g : {std::cref(tensors_pre), std::cref(vars_pre)})
    for (auto it = g.get().begin(); it != g.get().end(); ++it) taken.insert(it.key());
  auto fresh = [&](const std::string& base) {
    std::string n = base;
    for (int i = 2; taken.count(n); ++i) n = base + "_" + std::to_string(i);
    taken.insert(n);
    return n;
  };
  std::map<std::pair<int, int>, std::string> held;  // (call number, slot) -> var
  std::map<int, ojson> keeps;                       // call number -> keep
  std::vector<std::vector<ojson>> before(t.calls.size()), after(t.calls.size());
  ojson view_vars = ojson::object();
  for (auto& v : t.view_reads) {
    if (t.header.named_bindings) break;  // a model's own trace: the model has its keeps
    if (v.captured_call < 1 || static_cast<size_t>(v.captured_call) > t.calls.size()) continue;
    const TraceCall& c = t.calls[static_cast<size_t>(v.captured_call - 1)];
    const KernelPlan& kp = kernels.at(c.kernel);
    if (v.slot < 0 || static_cast<size_t>(v.slot) >= c.slots.size() ||
        std::find(c.outputs.begin(), c.outputs.end(), v.slot) == c.outputs.end())
      continue;
    size_t at = 0;  // the call index the read goes before (t.calls.size(): at the end)
    if (v.read_call >= 1 && static_cast<size_t>(v.read_call) <= t.calls.size())
      at = static_cast<size_t>(v.read_call - 1);
    else if (v.overwritten_by >= 1 && static_cast<size_t>(v.overwritten_by) <= t.calls.size())
      at = static_cast<size_t>(v.overwritten_by);
    else
      continue;
    if (at <= static_cast<size_t>(v.captured_call - 1)) continue;
    auto key = std::make_pair(v.captured_call, v.slot);
    const std::string& slot = kp.slot_names[static_cast<size_t>(v.slot)];
    ojson type = {{"dtype", dtype_name(kp.dtypes[static_cast<size_t>(v.slot)])},
                  {"shape", model_shape(kp, static_cast<size_t>(v.slot),
                                        params[static_cast<size_t>(v.captured_call - 1)])}};
    if (!held.count(key)) {
      std::string n = fresh("held_view_c" + std::to_string(v.captured_call) + "_" + slot);
      held[key] = n;
      keeps[v.captured_call][slot] = n;
      ojson j = type;
      j["doc"] = "a zero-copy view of call " + std::to_string(v.captured_call) + "'s " + slot +
                 " the program kept as '" + v.var + "'";
      view_vars[n] = j;
    }
    std::string r = fresh(held[key] + "_read");
    ojson j = type;
    j["doc"] = "what " + v.reader + " read from '" + v.var + "'";
    view_vars[r] = j;
    ojson step = {{"host", "copy"}, {"src", held[key]}, {"out", r}};
    if (at < t.calls.size())
      before[at].push_back(step);
    else
      after[t.calls.size() - 1].push_back(step);
  }

  // One step per call.
  Folder folder;
  std::vector<Item> flat;
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const TraceCall& c = t.calls[i];
    const KernelPlan& kp = kernels.at(c.kernel);
    ojson step;
    step["call"] = c.kernel;
    if (!kp.params.empty()) {
      ojson p = ojson::object();
      for (size_t q = 0; q < kp.params.size(); ++q) p[kp.params[q]] = params[i][q];
      step["params"] = p;
    }
    ojson args = ojson::object();
    for (size_t s = 0; s < c.slots.size(); ++s) {
      const SlotUse& u = uses[i][s];
      if (u.ident < 0) continue;
      std::string b = arrays.binding(u.ident);
      if (!u.placeholder) {
        args[kp.slot_names[s]] = b;
      } else {
        ojson ph{{"placeholder", b}};
        if (u.empty) ph["as"] = "empty";
        args[kp.slot_names[s]] = ph;
      }
    }
    if (!args.empty()) step["args"] = args;
    step["static_input_indices"] = c.statics;
    step["intermediate_indices"] = c.inters;
    step["output_indices"] = c.outputs;
    step["bo_key"] = c.bo_key;
    step["shared_nonstatic"] = c.shared_nonstatic;
    ojson alias = ojson::object();
    std::string dropped;
    for (auto& [slot, pool] : c.alias) {
      if (slot >= 0)
        alias[std::to_string(slot)] = pool;
      else
        dropped += (dropped.empty() ? "" : ", ") + std::to_string(slot) + " -> '" + pool + "'";
    }
    if (!alias.empty()) step["shared_alias"] = alias;
    if (!c.ns.empty()) step["cache"] = c.ns;
    if (keeps.count(c.number)) step["keep"] = keeps[c.number];
    if (!dropped.empty())
      step["doc"] = "recorded shared_alias entries with negative slot indices (" + dropped +
                    ") cannot be written in model.json and are left out";
    flat.push_back(folder.item(std::move(step), {c.layer}, {}));
  }

  // Loops inside each run of calls with one (phase, token), then repeated phases over tokens.
  struct Segment {
    std::string phase;
    long long token;
    std::vector<Item> items;
  };
  std::vector<Segment> segs;
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const TraceCall& c = t.calls[i];
    if (segs.empty() || segs.back().phase != c.phase || segs.back().token != c.token)
      segs.push_back(Segment{c.phase, c.token, {}});
    for (auto& h : before[i]) segs.back().items.push_back(folder.item(h, {}, {}));
    segs.back().items.push_back(std::move(flat[i]));
    for (auto& h : after[i]) segs.back().items.push_back(folder.item(h, {}, {}));
  }
  for (auto& s : segs) s.items = folder.fold(std::move(s.items), {});
  ojson phases = ojson::array();
  for (size_t a = 0; a < segs.size();) {
    size_t b = a + 1;
    if (segs[a].token >= 0)
      while (b < segs.size() && segs[b].phase == segs[a].phase &&
             segs[b].token == segs[b - 1].token + 1)
        ++b;
    ojson ph;
    ph["name"] = segs[a].phase.empty() ? "main" : segs[a].phase;
    std::optional<std::vector<ojson>> steps;
    if (b - a >= 2) {
      // Tokens as the passes of a repeated phase: every token's steps fold over t = 0, 1, ...
      std::vector<Item> all;
      bool same_len = true;
      for (size_t s = a; s < b; ++s) {
        same_len = same_len && segs[s].items.size() == segs[a].items.size();
        for (auto& it : segs[s].items) all.push_back(it);
      }
      if (same_len) {
        bool labels = true;
        for (size_t s = a; s < b; ++s)
          for (size_t m = 0; m < segs[a].items.size(); ++m)
            labels = labels && segs[s].items[m].layers == segs[a].items[m].layers;
        if (labels) steps = folder.fold_blocks(all, 0, segs[a].items.size(), b - a, Var{"t", 0});
      }
      if (steps) {
        ph["repeat"] = b - a;
        ph["var"] = "t";
      }
    }
    if (!steps) {
      // Flat: the segments one after the other (folded again across their boundaries).
      std::vector<Item> all;
      for (size_t s = a; s < b; ++s)
        for (auto& it : segs[s].items) all.push_back(it);
      if (b - a >= 2) all = folder.fold(std::move(all), {});
      steps.emplace();
      for (auto& it : all) steps->push_back(it.step);
    }
    ph["steps"] = *steps;
    phases.push_back(ph);
    a = b;
  }

  // The model.
  ojson m;
  m["format"] = "bo-doctor-model";
  m["version"] = 1;
  m["name"] = "skeleton of " + trace_name;
  std::string desc =
      "Generated by 'bo-doctor skeleton' from " + trace_name + " (" +
      std::to_string(t.calls.size()) + " calls of " + std::to_string(kernels.size()) +
      " kernel(s); producer '" + t.header.producer + "'" +
      (t.header.model_name.empty() ? "" : ", model '" + t.header.model_name + "'") +
      "). The program replays the recorded calls with their reuse settings; tensors are seeded "
      "stand-ins with the recorded shapes, and so are float vars (integer vars start as zeros); "
      "outputs are not bound. Every "
      "kernel body is a stub (see its doc, '" +
      std::string(kSkeletonTodo) +
      "'); the host steps between calls and the end-to-end verify section are not recorded in "
      "a trace and are left for you to add.";
  if (!unused.empty()) {
    desc += " Kernels of the trace's table that no call uses are left out:";
    for (size_t i = 0; i < unused.size(); ++i) desc += (i ? ", " : " ") + unused[i];
    desc += ".";
  }
  m["description"] = desc;
  m["seed"] = 1;
  m["dims"] = ojson::object();
  for (auto it = view_vars.begin(); it != view_vars.end(); ++it) vars[it.key()] = it.value();
  m["tensors"] = tensors;
  m["vars"] = vars;
  ojson ks = ojson::object();
  for (auto& k : t.header.kernels) {
    auto it = kernels.find(k.name);
    if (it != kernels.end()) ks[k.name] = kernel_json(it->second, k);
  }
  m["kernels"] = ks;
  m["program"] = {{"layer_var", "l"}, {"phases", phases}};
  name_counts(m);
  return m;
}

}  // namespace bod
