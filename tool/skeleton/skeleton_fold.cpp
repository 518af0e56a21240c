// Folding the skeleton's program: steps that repeat in blocks become loops where they are
// equal up to numbers stepping evenly with the loop variable (in bo_key and pool templates,
// binding indices and call params), so expanding the folded program gives back the recorded
// calls exactly; anything else stays flat.
#include <algorithm>
#include <cctype>
#include <utility>

#include "core/saturate.h"
#include "skeleton/skeleton_internal.h"

namespace bod::skeleton_detail {

namespace {

constexpr size_t kMaxBody = 64;  // longest loop body (in steps) the folder looks for

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
// Recorded numbers are input: a step or an offset that does not fit int64 folds nothing.
std::optional<std::string> affine_of(const std::vector<int64_t>& x, const Var& v) {
  auto a = checked_sub(x[1], x[0]);
  if (!a || *a == 0 || *a == std::numeric_limits<int64_t>::min()) return std::nullopt;
  for (size_t j = 0; j < x.size(); ++j) {
    auto step = checked_mul(*a, static_cast<int64_t>(j));
    auto at = step ? checked_add(x[0], *step) : std::nullopt;
    if (!at || x[j] != *at) return std::nullopt;
  }
  auto off = checked_mul(*a, static_cast<int64_t>(v.first));
  auto c = off ? checked_sub(x[0], *off) : std::nullopt;
  if (!c || *c == std::numeric_limits<int64_t>::min()) return std::nullopt;
  return affine(v, *a, *c);
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

}  // namespace

Item Folder::item(ojson step, std::vector<long long> layers, std::set<std::string> vars) {
  Item it;
  it.sig = intern(blank(step).dump());
  it.step = std::move(step);
  it.layers = std::move(layers);
  it.vars = std::move(vars);
  return it;
}

std::vector<Item> Folder::fold(std::vector<Item> items, const std::set<std::string>& enclosing) {
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

std::optional<std::vector<ojson>> Folder::fold_blocks(const std::vector<Item>& items, size_t i,
                                                      size_t k, size_t n, const Var& var) {
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

int Folder::intern(const std::string& s) {
  return sigs_.emplace(s, static_cast<int>(sigs_.size())).first->second;
}

bool Folder::pair_folds(const std::vector<Item>& items, size_t a, size_t k,
                        std::vector<signed char>& cache) {
  signed char& c = cache[a * kMaxBody + (k - 1)];
  if (c < 0) {
    const Item& x = items[a];
    const Item& y = items[a + k];
    c = x.sig == y.sig && x.layers.size() == y.layers.size() && step_pair(x.step, y.step);
  }
  return c != 0;
}

bool Folder::same_sigs(const std::vector<Item>& items, size_t a, size_t b, size_t k) {
  for (size_t m = 0; m < k; ++m)
    if (items[a + m].sig != items[b + m].sig) return false;
  return true;
}

std::optional<Var> Folder::loop_var(const std::vector<Item>& items, size_t i, size_t k, size_t n,
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

bool Folder::foldable(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                      const std::set<std::string>& enclosing) {
  auto var = loop_var(items, i, k, n, enclosing);
  return var && fold_blocks(items, i, k, n, *var);
}

std::optional<Item> Folder::make_loop(const std::vector<Item>& items, size_t i, size_t k, size_t n,
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

}  // namespace bod::skeleton_detail
