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
#include "skeleton/skeleton.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace bod {

namespace {

using ojson = nlohmann::ordered_json;
using Shape = std::vector<int64_t>;

constexpr size_t kMaxBody = 64;  // longest loop body (in steps) the folder looks for

bool is_ident(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

// A tensor / var name as model.json accepts it (letters, digits, '_', '.').
bool is_array_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.')) return false;
  return s != "zeros";
}

// Any text made into an array name: other characters become '_'.
std::string sanitize(const std::string& s) {
  std::string r;
  for (char ch : s) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.';
    char c = ok ? ch : '_';
    if (c == '_' && !r.empty() && r.back() == '_') continue;
    r += c;
  }
  while (!r.empty() && (r.back() == '_' || r.back() == '.')) r.pop_back();
  if (r.empty() || !(std::isalpha(static_cast<unsigned char>(r[0])) || r[0] == '_')) r = "a_" + r;
  if (r == "zeros") r = "zeros_";
  return r;
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

bool has_braces(const std::string& s) {
  return s.find('{') != std::string::npos || s.find('}') != std::string::npos;
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

// ---------------------------------------------------------------- kernels

struct KernelPlan {
  std::string name;
  std::vector<int> calls;  // indices into Trace::calls
  std::vector<std::string> slot_names;
  std::vector<DType> dtypes;
  std::vector<Shape> shape;         // fixed shape, or the dims after the leading one
  std::vector<int> param_of;        // -1: fixed; else the param giving the leading dim
  std::vector<std::string> params;  // "n", "m", ...
  std::vector<std::string> notes;
  std::vector<int> fill;  // slots the stub body fills with 0
};

std::string param_name(size_t i) {
  static const char* kNames[] = {"n", "m", "r", "q"};
  return i < 4 ? kNames[i] : "n" + std::to_string(i + 1);
}

KernelPlan plan_kernel(const Trace& t, const KernelInfo& k, std::vector<int> calls) {
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

// The leading-dimension params of one call of the kernel.
std::vector<int64_t> call_params(const KernelPlan& kp, const TraceCall& c) {
  std::vector<int64_t> v(kp.params.size(), 1);
  for (size_t s = 0; s < kp.param_of.size(); ++s)
    if (kp.param_of[s] >= 0)
      v[static_cast<size_t>(kp.param_of[s])] = recorded_shape(c.slots[s], nullptr)[0];
  return v;
}

// The slot's shape in the model at a call with these params.
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

// ---------------------------------------------------------------- arrays

// One distinct recorded binding: its name as recorded, and the type the model's slot gives it.
struct Ident {
  std::string name;
  DType dtype = DType::bf16;
  Shape shape;
  size_t group = 0;
  std::vector<int64_t> index;  // into the group's array
};

// One model tensor or var: the identities it holds, one per index.
struct Group {
  std::string base;  // the name in the model
  bool tensor = false;
  std::vector<size_t> members;
  size_t depth = 0;
};

// "wq[2]" -> ("wq", {2}); nullopt for anything else (row ranges, odd characters).
std::optional<std::pair<std::string, std::vector<int64_t>>> parse_name(const std::string& s) {
  size_t lb = s.find('[');
  std::string base = s.substr(0, lb);
  if (!is_array_name(base)) return std::nullopt;
  std::vector<int64_t> idx;
  while (lb != std::string::npos) {
    size_t rb = s.find(']', lb);
    if (rb == std::string::npos || rb == lb + 1 || rb - lb > 10) return std::nullopt;
    for (size_t i = lb + 1; i < rb; ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    idx.push_back(std::stoll(s.substr(lb + 1, rb - lb - 1)));
    if (rb + 1 == s.size()) break;
    if (s[rb + 1] != '[') return std::nullopt;
    lb = rb + 1;
  }
  return std::make_pair(base, idx);
}

struct SlotUse {
  int ident = -1;  // -1: unbound
  bool placeholder = false;
  bool empty = false;  // placeholder passed as np.empty(0)
};

class Arrays {
 public:
  // The identity of a binding, created on first use.
  int use(const std::string& name, bool tensor_use, DType dt, const Shape& shape) {
    auto key = std::make_tuple(name, dt, elements(shape));
    auto it = ids_.find(key);
    if (it == ids_.end()) {
      it = ids_.emplace(key, static_cast<int>(idents_.size())).first;
      idents_.push_back(Ident{name, dt, shape, 0, {}});
    }
    if (tensor_use) tensor_names_.insert(base_of(name));
    return it->second;
  }

  // Groups the identities into tensors and vars (after every use is known).
  void build() {
    std::map<std::string, size_t> by_base;
    for (size_t i = 0; i < idents_.size(); ++i) {
      auto p = parse_name(idents_[i].name);
      std::string base = p ? p->first : sanitize(idents_[i].name);
      auto [it, fresh] = by_base.emplace(base, groups_.size());
      if (fresh)
        groups_.push_back(Group{base, tensor_names_.count(base_of(idents_[i].name)) > 0, {}, 0});
      Group& g = groups_[it->second];
      if (tensor_names_.count(base_of(idents_[i].name))) g.tensor = true;
      g.members.push_back(i);
      idents_[i].index = p ? p->second : std::vector<int64_t>{};
    }
    // A group whose members disagree (depth, dtype, size, or one index twice) is split into one
    // array per member.
    std::vector<Group> out;
    for (auto& g : groups_) {
      const Ident& f = idents_[g.members[0]];
      std::set<std::vector<int64_t>> seen;
      bool ok = true;
      for (size_t m : g.members) {
        const Ident& d = idents_[m];
        ok = ok && d.index.size() == f.index.size() && d.dtype == f.dtype &&
             elements(d.shape) == elements(f.shape) && seen.insert(d.index).second;
        for (auto v : d.index) ok = ok && v < 4096;
      }
      if (ok) {
        g.depth = f.index.size();
        out.push_back(g);
        continue;
      }
      for (size_t m : g.members) {
        idents_[m].index.clear();
        out.push_back(Group{sanitize(idents_[m].name), g.tensor, {m}, 0});
      }
    }
    groups_ = std::move(out);
    stack_numbered();
    // Unique names (tensors and vars share one namespace), in order of first use.
    std::set<std::string> taken;
    for (auto& g : groups_) {
      std::string n = g.base;
      for (int i = 2; taken.count(n); ++i) n = g.base + "_" + std::to_string(i);
      g.base = n;
      taken.insert(n);
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (size_t m : groups_[gi].members) idents_[m].group = gi;
  }

  std::string binding(int id) const {
    const Ident& d = idents_[static_cast<size_t>(id)];
    std::string s = groups_[d.group].base;
    for (auto v : d.index) s += "[" + std::to_string(v) + "]";
    return s;
  }

  // The model's "tensors" and "vars" sections.
  void emit(ojson& tensors, ojson& vars) const {
    for (auto& g : groups_) {
      const Ident& f = idents_[g.members[0]];
      Shape shape(g.depth, 0);
      for (size_t m : g.members)
        for (size_t i = 0; i < g.depth; ++i) shape[i] = std::max(shape[i], idents_[m].index[i] + 1);
      shape.insert(shape.end(), f.shape.begin(), f.shape.end());
      ojson j;
      j["dtype"] = dtype_name(f.dtype);
      j["shape"] = shape;
      std::string doc = "recorded as ";
      for (size_t i = 0; i < g.members.size() && i < 4; ++i)
        doc += (i ? ", '" : "'") + idents_[g.members[i]].name + "'";
      if (g.members.size() > 4) doc += ", ... (" + std::to_string(g.members.size()) + " bindings)";
      if (g.tensor) {
        bool real = f.dtype == DType::bf16 || f.dtype == DType::f32;
        j["init"] = real ? ojson{{"normal", {{"std", 0.02}}}} : ojson("zeros");
        j["doc"] = doc + "; seeded stand-in data";
        tensors[g.base] = j;
      } else {
        j["doc"] = doc;
        vars[g.base] = j;
      }
    }
  }

 private:
  static std::string base_of(const std::string& name) {
    auto p = parse_name(name);
    return p ? p->first : sanitize(name);
  }

  // Whole arrays whose names differ only in one number ("w0", "w1"; "layers.3.wq") become the
  // slices of one array, so a loop can bind them as "w[l]".
  void stack_numbered() {
    struct Cand {
      std::string pattern;  // the name with the number cut out, '#' in its place
      int64_t value;
    };
    std::vector<std::vector<Cand>> cands(groups_.size());
    std::map<std::tuple<bool, std::string, DType, int64_t>, std::set<int64_t>> buckets;
    auto bucket_key = [&](size_t gi, const std::string& pattern) {
      const Ident& d = idents_[groups_[gi].members[0]];
      return std::make_tuple(groups_[gi].tensor, pattern, d.dtype, elements(d.shape));
    };
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      if (g.depth != 0 || g.members.size() != 1) continue;
      const std::string& b = g.base;
      for (size_t i = 0; i < b.size();) {
        if (!std::isdigit(static_cast<unsigned char>(b[i]))) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j]))) ++j;
        std::string digits = b.substr(i, j - i);
        if (digits.size() <= 4 && std::to_string(std::stoll(digits)) == digits) {
          Cand c{b.substr(0, i) + "#" + b.substr(j), std::stoll(digits)};
          cands[gi].push_back(c);
          buckets[bucket_key(gi, c.pattern)].insert(c.value);
        }
        i = j;
      }
    }
    // Each array joins the first of its patterns that two or more arrays share.
    std::map<std::tuple<bool, std::string, DType, int64_t>, std::vector<std::pair<size_t, int64_t>>>
        chosen;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (auto& c : cands[gi])
        if (buckets[bucket_key(gi, c.pattern)].size() >= 2) {
          chosen[bucket_key(gi, c.pattern)].push_back({gi, c.value});
          break;
        }
    std::vector<bool> drop(groups_.size(), false);
    std::vector<Group> stacks;
    for (auto& [key, members] : chosen) {
      std::set<int64_t> values;
      int64_t top = 0;
      for (auto& [gi, v] : members) {
        values.insert(v);
        top = std::max(top, v);
      }
      if (members.size() < 2 || values.size() != members.size() ||
          top >= 4 * static_cast<int64_t>(members.size()) + 16)
        continue;
      std::string name = std::get<1>(key);
      name.erase(name.find('#'), 1);
      for (auto p : {"..", "__", "._", "_."})
        for (size_t at; (at = name.find(p)) != std::string::npos;) name.erase(at, 1);
      Group s{sanitize(name), std::get<0>(key), {}, 1};
      for (auto& [gi, v] : members) {
        drop[gi] = true;
        size_t m = groups_[gi].members[0];
        idents_[m].index = {v};
        s.members.push_back(m);
      }
      stacks.push_back(s);
    }
    // The stacks take the place of their first member, keeping the order of first use.
    std::vector<Group> out;
    std::map<size_t, size_t> first_member_stack;
    for (size_t si = 0; si < stacks.size(); ++si) {
      size_t first = *std::min_element(stacks[si].members.begin(), stacks[si].members.end());
      first_member_stack[first] = si;
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      size_t m = groups_[gi].members[0];
      if (drop[gi]) {
        auto it = first_member_stack.find(m);
        if (it != first_member_stack.end()) out.push_back(stacks[it->second]);
        continue;
      }
      out.push_back(groups_[gi]);
    }
    groups_ = std::move(out);
  }

  std::map<std::tuple<std::string, DType, int64_t>, int> ids_;
  std::vector<Ident> idents_;
  std::set<std::string> tensor_names_;  // bases bound as tensors, placeholders or statics
  std::vector<Group> groups_;
};

// ---------------------------------------------------------------- folding

// A step of the program being built: its JSON (templated inside loops), a signature of what must
// be equal for two steps to fold, the layer labels of its calls and the loop variables inside.
struct Item {
  ojson step;
  int sig = 0;
  std::vector<long long> layers;
  std::set<std::string> vars;
};

struct Var {
  std::string name;
  int64_t first = 0;  // value at the first iteration (+1 per iteration)
};

// a*var + c as an expression.
std::string affine(const Var& v, int64_t a, int64_t c) {
  std::string term = a == 1 || a == -1 ? v.name : std::to_string(a < 0 ? -a : a) + "*" + v.name;
  if (a < 0) return std::to_string(c) + "-" + term;  // c >= 0: the values are >= 0
  if (c > 0) return term + "+" + std::to_string(c);
  if (c < 0) return term + "-" + std::to_string(-c);
  return term;
}

// Numbers x_j = x_0 + a*j: the expression of var giving them, nullopt when they do not step
// evenly. Precondition: not all equal.
std::optional<std::string> affine_of(const std::vector<int64_t>& x, const Var& v) {
  int64_t a = x[1] - x[0];
  if (a == 0) return std::nullopt;
  for (size_t j = 0; j < x.size(); ++j)
    if (x[j] != x[0] + a * static_cast<int64_t>(j)) return std::nullopt;
  return affine(v, a, x[0] - a * v.first);
}

struct Tok {
  bool num = false;
  std::string text;
};

// Key templates (bo_key, pool names): the digit runs outside {...}. Bindings: indices "[7]".
std::vector<Tok> tokenize(const std::string& s, bool binding) {
  std::vector<Tok> out;
  auto lit = [&](char ch) {
    if (out.empty() || out.back().num) out.push_back({false, ""});
    out.back().text += ch;
  };
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    char ch = s[i];
    if (!binding) {
      if (ch == '{') ++depth;
      if (ch == '}') --depth;
      if (depth == 0 && std::isdigit(static_cast<unsigned char>(ch))) {
        size_t j = i;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        out.push_back({true, s.substr(i, j - i)});
        i = j;
        continue;
      }
    } else if (ch == '[') {
      size_t j = i + 1;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i + 1 && j < s.size() && s[j] == ']') {
        lit('[');
        out.push_back({true, s.substr(i + 1, j - i - 1)});
        lit(']');
        i = j + 1;
        continue;
      }
    }
    lit(ch);
    ++i;
  }
  return out;
}

std::optional<int64_t> canonical(const std::string& digits) {
  if (digits.empty() || digits.size() > 15) return std::nullopt;
  int64_t v = std::stoll(digits);
  if (std::to_string(v) != digits) return std::nullopt;
  return v;
}

using Vals = std::vector<const ojson*>;

bool all_equal(const Vals& v) {
  for (auto* p : v)
    if (*p != *v[0]) return false;
  return true;
}

// Strings equal up to numbers stepping evenly with the variable.
std::optional<ojson> fold_string(const Vals& v, bool binding, const Var& var) {
  if (all_equal(v)) return *v[0];
  std::vector<std::vector<Tok>> toks;
  for (auto* p : v) {
    if (!p->is_string()) return std::nullopt;
    toks.push_back(tokenize(p->get<std::string>(), binding));
  }
  std::string out;
  for (size_t i = 0; i < toks[0].size(); ++i) {
    std::vector<int64_t> x;
    bool same = true;
    for (auto& t : toks) {
      if (t.size() != toks[0].size() || t[i].num != toks[0][i].num) return std::nullopt;
      same = same && t[i].text == toks[0][i].text;
    }
    if (same) {
      out += toks[0][i].text;
      continue;
    }
    if (!toks[0][i].num) return std::nullopt;
    for (auto& t : toks) {
      auto n = canonical(t[i].text);
      if (!n) return std::nullopt;
      x.push_back(*n);
    }
    auto e = affine_of(x, var);
    if (!e) return std::nullopt;
    out += binding ? *e : "{" + *e + "}";
  }
  return ojson(out);
}

// Call params: integers stepping evenly become an expression.
std::optional<ojson> fold_param(const Vals& v, const Var& var) {
  if (all_equal(v)) return *v[0];
  std::vector<int64_t> x;
  for (auto* p : v) {
    if (!p->is_number_integer()) return std::nullopt;
    x.push_back(p->get<int64_t>());
  }
  auto e = affine_of(x, var);
  if (!e) return std::nullopt;
  return ojson(*e);
}

template <typename F>
std::optional<ojson> fold_object(const Vals& v, F&& fold_value) {
  if (all_equal(v)) return *v[0];
  ojson out = ojson::object();
  for (auto* p : v) {
    if (!p->is_object() || p->size() != v[0]->size()) return std::nullopt;
    auto a = p->begin();
    for (auto b = v[0]->begin(); b != v[0]->end(); ++a, ++b)
      if (a.key() != b.key()) return std::nullopt;
  }
  for (auto it = v[0]->begin(); it != v[0]->end(); ++it) {
    Vals sub;
    for (auto* p : v) sub.push_back(&(*p)[it.key()]);
    auto f = fold_value(it.key(), sub);
    if (!f) return std::nullopt;
    out[it.key()] = *f;
  }
  return out;
}

std::optional<ojson> fold_step(const Vals& v, const Var& var);

std::optional<ojson> fold_arg(const Vals& v, const Var& var) {
  if (all_equal(v)) return *v[0];
  if (v[0]->is_string()) return fold_string(v, true, var);
  return fold_object(v, [&](const std::string& key, const Vals& sub) -> std::optional<ojson> {
    if (key == "placeholder") return fold_string(sub, true, var);
    if (all_equal(sub)) return *sub[0];
    return std::nullopt;
  });
}

// One program step (a call or a loop) over the iterations; nullopt when they differ in anything
// but evenly stepping numbers.
std::optional<ojson> fold_step(const Vals& v, const Var& var) {
  return fold_object(v, [&](const std::string& key, const Vals& sub) -> std::optional<ojson> {
    if (all_equal(sub)) return *sub[0];
    if (key == "bo_key") return fold_string(sub, false, var);
    if (key == "shared_alias")
      return fold_object(
          sub, [&](const std::string&, const Vals& s) { return fold_string(s, false, var); });
    if (key == "args")
      return fold_object(sub, [&](const std::string&, const Vals& s) { return fold_arg(s, var); });
    if (key == "params")
      return fold_object(sub,
                         [&](const std::string&, const Vals& s) { return fold_param(s, var); });
    if (key == "steps") {
      ojson out = ojson::array();
      for (auto* p : sub)
        if (!p->is_array() || p->size() != sub[0]->size()) return std::nullopt;
      for (size_t i = 0; i < sub[0]->size(); ++i) {
        Vals e;
        for (auto* p : sub) e.push_back(&(*p)[i]);
        auto f = fold_step(e, var);
        if (!f) return std::nullopt;
        out.push_back(*f);
      }
      return out;
    }
    return std::nullopt;  // kernel, index lists, flags, cache, loop ranges: must be equal
  });
}

// Whether two steps fold as the two iterations of a loop: fold_step's test without building
// the folded step (two numbers always step evenly, so only the token structure matters).
bool tokens_pair(const ojson& a, const ojson& b, bool binding) {
  if (a == b) return true;
  if (!a.is_string() || !b.is_string()) return false;
  auto x = tokenize(a.get<std::string>(), binding), y = tokenize(b.get<std::string>(), binding);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].num != y[i].num) return false;
    if (x[i].text == y[i].text) continue;
    if (!x[i].num || !canonical(x[i].text) || !canonical(y[i].text)) return false;
  }
  return true;
}

template <typename F>
bool object_pair(const ojson& a, const ojson& b, F&& value_pair) {
  if (!a.is_object() || !b.is_object() || a.size() != b.size()) return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
    if (x.key() != y.key() || !value_pair(x.key(), x.value(), y.value())) return false;
  return true;
}

bool step_pair(const ojson& a, const ojson& b) {
  return object_pair(a, b, [](const std::string& key, const ojson& x, const ojson& y) {
    if (x == y) return true;
    if (key == "bo_key") return tokens_pair(x, y, false);
    if (key == "shared_alias")
      return object_pair(x, y, [](const std::string&, const ojson& p, const ojson& q) {
        return tokens_pair(p, q, false);
      });
    if (key == "args")
      return object_pair(x, y, [](const std::string&, const ojson& p, const ojson& q) {
        if (p.is_string()) return tokens_pair(p, q, true);
        return object_pair(p, q, [](const std::string& k, const ojson& u, const ojson& v) {
          return k == "placeholder" ? tokens_pair(u, v, true) : u == v;
        });
      });
    if (key == "params")
      return object_pair(x, y, [](const std::string&, const ojson& p, const ojson& q) {
        return p == q || (p.is_number_integer() && q.is_number_integer());
      });
    if (key == "steps") {
      if (!x.is_array() || !y.is_array() || x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!step_pair(x[i], y[i])) return false;
      return true;
    }
    return false;
  });
}

// The step with every leaf a fold may change blanked: equal signatures are necessary to fold.
ojson blank(const ojson& step) {
  ojson r = step;
  if (r.contains("bo_key")) r["bo_key"] = nullptr;
  for (auto key : {"shared_alias", "args", "params"})
    if (r.contains(key))
      for (auto it = r[key].begin(); it != r[key].end(); ++it) it.value() = nullptr;
  if (r.contains("steps"))
    for (auto& s : r["steps"]) s = blank(s);
  return r;
}

class Folder {
 public:
  Item item(ojson step, std::vector<long long> layers, std::set<std::string> vars) {
    Item it;
    it.sig = intern(blank(step).dump());
    it.step = std::move(step);
    it.layers = std::move(layers);
    it.vars = std::move(vars);
    return it;
  }

  // Folds repeated blocks of `items` into loops, largest coverage first, until nothing changes.
  std::vector<Item> fold(std::vector<Item> items, const std::set<std::string>& enclosing) {
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<Item> out;
      // Does item a fold with item a+k (as two iterations)? -1: not known yet.
      std::vector<signed char> pair_cache(items.size() * kMaxBody, -1);
      for (size_t i = 0; i < items.size();) {
        size_t best_k = 0, best_n = 0;
        for (size_t k = 1; k <= kMaxBody && i + 2 * k <= items.size(); ++k) {
          // At most `most` blocks fit; foldability is prefix-closed, so double, then bisect,
          // for the longest foldable run, in time proportional to that run.
          size_t most = (items.size() - i) / k;
          if (k * most <= best_k * best_n || !same_sigs(items, i, i + k, k)) continue;
          bool pairs = true;
          for (size_t m = 0; m < k && pairs; ++m) pairs = pair_folds(items, i + m, k, pair_cache);
          if (!pairs || !loop_var(items, i, k, 2, enclosing)) continue;
          size_t lo = 2, probe = 4;
          while (probe <= most && foldable(items, i, k, probe, enclosing)) {
            lo = probe;
            probe *= 2;
          }
          for (size_t hi = std::min(probe, most + 1); hi - lo > 1;) {
            size_t mid = (lo + hi) / 2;
            (foldable(items, i, k, mid, enclosing) ? lo : hi) = mid;
          }
          size_t n = lo;
          if (n == 2 && !foldable(items, i, k, 2, enclosing)) continue;  // pairs said yes
          if (k * n > best_k * best_n) {
            best_k = k;
            best_n = n;
          }
        }
        std::optional<Item> loop;
        if (best_n >= 2) loop = make_loop(items, i, best_k, best_n, enclosing);
        if (loop) {
          out.push_back(std::move(*loop));
          i += best_k * best_n;
          changed = true;
        } else {
          out.push_back(std::move(items[i]));
          ++i;
        }
      }
      items = std::move(out);
    }
    return items;
  }

  // The steps of `n` blocks of `k` items each folded over `var` (no loop made), or nullopt.
  std::optional<std::vector<ojson>> fold_blocks(const std::vector<Item>& items, size_t i, size_t k,
                                                size_t n, const Var& var) {
    std::vector<ojson> steps;
    for (size_t m = 0; m < k; ++m) {
      Vals v;
      for (size_t j = 0; j < n; ++j) {
        const Item& it = items[i + j * k + m];
        if (it.sig != items[i + m].sig || it.layers.size() != items[i + m].layers.size())
          return std::nullopt;
        v.push_back(&it.step);
      }
      auto f = fold_step(v, var);
      if (!f) return std::nullopt;
      steps.push_back(std::move(*f));
    }
    return steps;
  }

 private:
  int intern(const std::string& s) {
    return sigs_.emplace(s, static_cast<int>(sigs_.size())).first->second;
  }

  static bool pair_folds(const std::vector<Item>& items, size_t a, size_t k,
                         std::vector<signed char>& cache) {
    signed char& c = cache[a * kMaxBody + (k - 1)];
    if (c < 0) {
      const Item& x = items[a];
      const Item& y = items[a + k];
      c = x.sig == y.sig && x.layers.size() == y.layers.size() && step_pair(x.step, y.step);
    }
    return c != 0;
  }

  static bool same_sigs(const std::vector<Item>& items, size_t a, size_t b, size_t k) {
    for (size_t m = 0; m < k; ++m)
      if (items[a + m].sig != items[b + m].sig) return false;
    return true;
  }

  // How the loop over these blocks is labelled: a layer loop when block j's calls all carry
  // layer first+j, a plain loop when every block carries the same labels; nullopt otherwise.
  static std::optional<Var> loop_var(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                                     const std::set<std::string>& enclosing) {
    std::vector<std::vector<long long>> lab(n);
    std::set<std::string> inside = enclosing;
    for (size_t j = 0; j < n; ++j)
      for (size_t m = 0; m < k; ++m) {
        const Item& it = items[i + j * k + m];
        lab[j].insert(lab[j].end(), it.layers.begin(), it.layers.end());
        inside.insert(it.vars.begin(), it.vars.end());
      }
    long long b = lab[0].empty() ? -1 : lab[0][0];
    bool layer = b >= 0;
    bool same = true;
    for (size_t j = 0; j < n; ++j) {
      same = same && lab[j] == lab[0];
      for (auto x : lab[j]) layer = layer && x == b + static_cast<long long>(j);
    }
    if (layer) {
      if (inside.count("l")) return std::nullopt;
      return Var{"l", b};
    }
    if (!same) return std::nullopt;
    for (const char* c : {"i", "j", "k", "p", "u", "w"})
      if (!inside.count(c)) return Var{c, 0};
    for (int x = 2;; ++x)
      if (!inside.count("i" + std::to_string(x))) return Var{"i" + std::to_string(x), 0};
  }

  bool foldable(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                const std::set<std::string>& enclosing) {
    auto var = loop_var(items, i, k, n, enclosing);
    return var && fold_blocks(items, i, k, n, *var);
  }

  std::optional<Item> make_loop(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                                const std::set<std::string>& enclosing) {
    auto var = loop_var(items, i, k, n, enclosing);
    if (!var) return std::nullopt;
    auto steps = fold_blocks(items, i, k, n, *var);
    if (!steps) return std::nullopt;
    std::vector<Item> body;
    for (size_t m = 0; m < k; ++m)
      body.push_back(item((*steps)[m], items[i + m].layers, items[i + m].vars));
    std::set<std::string> inner = enclosing;
    inner.insert(var->name);
    body = fold(std::move(body), inner);
    ojson loop;
    loop["loop"] = var->name;
    if (var->first == 0)
      loop["range"] = n;
    else
      loop["range"] = {var->first, var->first + static_cast<int64_t>(n)};
    loop["steps"] = ojson::array();
    std::set<std::string> vars{var->name};
    for (auto& b : body) {
      loop["steps"].push_back(b.step);
      vars.insert(b.vars.begin(), b.vars.end());
    }
    std::vector<long long> layers;
    for (size_t j = 0; j < n * k; ++j)
      layers.insert(layers.end(), items[i + j].layers.begin(), items[i + j].layers.end());
    return item(std::move(loop), std::move(layers), std::move(vars));
  }

  std::map<std::string, int> sigs_;
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
  std::map<std::string, KernelPlan> kernels;
  std::vector<std::string> unused;
  for (auto& k : t.header.kernels) {
    auto it = calls_of.find(k.name);
    if (it == calls_of.end()) {
      unused.push_back(k.name);
      continue;
    }
    kernels.emplace(k.name, plan_kernel(t, k, it->second));
  }

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
      u.ident = arrays.use(ts.host.name, tensor, kp.dtypes[s], model_shape(kp, s, params[i]));
      u.placeholder = src == ArraySource::placeholder;
      // np.empty(0): the reuse engine wrote the slot, 0 bytes.
      u.empty = u.placeholder && t.header.caps.run && ts.written && ts.written_bytes == 0 &&
                ts.host.bytes > 0;
    }
  }
  arrays.build();

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
    segs.back().items.push_back(std::move(flat[i]));
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
      "stand-ins with the recorded shapes, vars start as zeros, outputs are not bound. Every "
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
  ojson tensors = ojson::object(), vars = ojson::object();
  arrays.emit(tensors, vars);
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
