// The skeleton's arrays: every distinct recorded binding becomes one slice of a seeded tensor
// or of a var. Names like "wq[2]" keep their tensor and index, names that differ only in a
// number ("w0", "w1") are stacked, anything else is sanitized into a model.json name.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "skeleton/skeleton_internal.h"

namespace bod::skeleton_detail {

namespace {

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

// Element count, saturating (a recorded shape is data, not a promise that the product fits).
int64_t elements(const Shape& s) {
  constexpr int64_t kMax = int64_t(1) << 62;
  int64_t n = 1;
  for (auto d : s) {
    if (d <= 0) return 0;
    n = d > kMax / n ? kMax : n * d;
  }
  return n;
}

// At most this many indices in a recorded name ("x[1][2][3][4]"): deeper names are sanitized.
constexpr size_t kMaxIndexRank = 4;

// "wq[2]" -> ("wq", {2}); nullopt for anything else (row ranges, odd characters).
std::optional<std::pair<std::string, std::vector<int64_t>>> parse_name(const std::string& in) {
  // A recorder's per-layer name "arg9@L1" (the slot's name and the call's layer label) is the
  // layer's slice of one array: "arg9[1]", so a layer loop binds "arg9[l]".
  std::string s = in;
  size_t at = s.rfind("@L");
  if (at != std::string::npos && at > 0 && at + 2 < s.size() && s.size() - at - 2 <= 4 &&
      s.find_first_not_of("0123456789", at + 2) == std::string::npos)
    s = s.substr(0, at) + "[" + s.substr(at + 2) + "]";
  size_t lb = s.find('[');
  std::string base = s.substr(0, lb);
  if (!is_array_name(base)) return std::nullopt;
  std::vector<int64_t> idx;
  while (lb != std::string::npos) {
    size_t rb = s.find(']', lb);
    if (rb == std::string::npos || rb == lb + 1 || rb - lb > 10) return std::nullopt;
    for (size_t i = lb + 1; i < rb; ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    if (idx.size() == kMaxIndexRank) return std::nullopt;
    idx.push_back(std::stoll(s.substr(lb + 1, rb - lb - 1)));
    if (rb + 1 == s.size()) break;
    if (s[rb + 1] != '[') return std::nullopt;
    lb = rb + 1;
  }
  return std::make_pair(base, idx);
}

}  // namespace

int Arrays::use(const std::string& name, bool tensor_use, DType dt, const Shape& shape, bool seeded,
                bool placeholder) {
  auto key = std::make_tuple(name, dt, elements(shape));
  auto it = ids_.find(key);
  if (it == ids_.end()) {
    it = ids_.emplace(key, static_cast<int>(idents_.size())).first;
    idents_.push_back(Ident{name, dt, shape, 0, {}});
  }
  if (tensor_use) tensor_names_.insert(base_of(name));
  if (seeded) seeded_names_.insert(base_of(name));
  if (placeholder) placeholder_names_.insert(base_of(name));
  return it->second;
}

void Arrays::build() {
  std::map<std::string, size_t> by_base;
  for (size_t i = 0; i < idents_.size(); ++i) {
    auto p = parse_name(idents_[i].name);
    std::string base = p ? p->first : sanitize(idents_[i].name);
    auto [it, fresh] = by_base.emplace(base, groups_.size());
    if (fresh)
      groups_.push_back(Group{base,
                              tensor_names_.count(base_of(idents_[i].name)) > 0,
                              seeded_names_.count(base_of(idents_[i].name)) > 0,
                              {},
                              0});
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
      out.push_back(Group{sanitize(idents_[m].name), g.tensor, g.seeded, {m}, 0});
    }
  }
  groups_ = std::move(out);
  stack_numbered();
  // Unique names (tensors and vars share one namespace), in order of first use. Each base
  // remembers the next suffix to try, so n clashing names cost O(n log n), not O(n^2).
  std::set<std::string> taken;
  std::map<std::string, int> next;
  for (auto& g : groups_) {
    std::string n = g.base;
    if (taken.count(n)) {
      int& i = next.emplace(g.base, 2).first->second;
      for (; taken.count(n = g.base + "_" + std::to_string(i)); ++i) {
      }
      ++i;
    }
    g.base = n;
    taken.insert(n);
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (size_t m : groups_[gi].members) idents_[m].group = gi;
}

std::string Arrays::binding(int id) const {
  const Ident& d = idents_[static_cast<size_t>(id)];
  std::string s = groups_[d.group].base;
  for (auto v : d.index) s += "[" + std::to_string(v) + "]";
  return s;
}

void Arrays::emit(ojson& tensors, ojson& vars) const {
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
      bool ph = false;
      for (size_t m : g.members) ph = ph || placeholder_names_.count(base_of(idents_[m].name));
      j["doc"] = doc + (ph ? "; a placeholder where the program passed an empty or all-zero "
                             "array standing in for data freed after its upload (those calls "
                             "bind {\"placeholder\": ...}); the seeded values stand in for the "
                             "real data"
                           : "; seeded stand-in data");
      tensors[g.base] = j;
    } else if (g.seeded) {
      bool real = f.dtype == DType::bf16 || f.dtype == DType::f32;
      j["init"] =
          real ? ojson{{"normal", {{"std", 0.02}}}} : ojson{{"range", {{"start", 1}, {"step", 1}}}};
      j["doc"] = doc +
                 "; one slice per distinct value the trace passed under this binding, in order "
                 "of first appearance: seeded stand-in data that differs where the recorded "
                 "data did";
      vars[g.base] = j;
    } else {
      // Seeded like the tensors: with zeros every activation a filled-in body computes from
      // is zero, and a stale slot would change nothing the outputs show.
      if (f.dtype == DType::bf16 || f.dtype == DType::f32)
        j["init"] = ojson{{"normal", {{"std", 0.02}}}};
      j["doc"] = doc + (f.dtype == DType::bf16 || f.dtype == DType::f32
                            ? "; seeded stand-in data"
                            : "; zeros (integer data: seeded values could be out of range)");
      vars[g.base] = j;
    }
  }
}

std::string Arrays::indexable(const std::string& name) {
  return parse_name(name) ? name : sanitize(name);
}

std::string Arrays::base_of(const std::string& name) {
  auto p = parse_name(name);
  return p ? p->first : sanitize(name);
}

void Arrays::stack_numbered() {
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
    Group s{sanitize(name), std::get<0>(key), false, {}, 1};
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

}  // namespace bod::skeleton_detail
