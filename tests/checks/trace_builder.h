// A tiny builder of hand-made Traces for the check unit tests (tests/checks/trace_checks_*).
// It fills what the real plan expansion and runner would: slot roles from the index lists,
// placements as tool/plan/expand.cpp computes them (the real KernelCache: pools looked up only
// at a key's first call, per (ns, bo_key); a later call copies that call's placement of each
// slot index, and an argument beyond its count is unbound; alias pools keyed by (name, bytes);
// a call whose shared_alias the engine raises on does not create its key), BO numbers and first
// calls per BO identity, and clean run data under full capabilities (run, no_reuse,
// byte_diffs, access, verify; probe once a slot is probed) with the reuse engine's writes and
// failures (tool/engine/reuse_engine.cpp). Tests then override only the facts a rule depends
// on. Hashes are symbolic integers: the checks only compare them.
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checks/check.h"
#include "checks/finding.h"
#include "trace/trace.h"

namespace bod {

inline constexpr size_t kSlotBytes = 64;     // default host bytes of every slot
inline constexpr uint64_t kZerosHash = 900;  // host hash of an unbound (zeros) slot

class SlotBuilder {
 public:
  SlotBuilder& tensor(std::string n) { return bind(ArraySource::tensor, std::move(n)); }
  SlotBuilder& var(std::string n) { return bind(ArraySource::var, std::move(n)); }
  SlotBuilder& placeholder(std::string n) { return bind(ArraySource::placeholder, std::move(n)); }
  SlotBuilder& zeros() { return bind(ArraySource::zeros, "zeros"); }
  SlotBuilder& view(std::string n, int of_call) {
    view_of_call_ = of_call;
    return bind(ArraySource::view, std::move(n));
  }
  SlotBuilder& bytes(size_t n) {
    bytes_ = n;
    return *this;
  }
  // The host hash of the array the reuse engine was given.
  SlotBuilder& hash(uint64_t h) {
    hash_ = h;
    return *this;
  }
  // The reuse engine wrote this slot (written_hash = h, or the host hash when omitted).
  SlotBuilder& written(std::optional<uint64_t> h = std::nullopt) {
    written_ = true;
    written_hash_ = h;
    return *this;
  }
  // The reuse engine skipped the slot's host write.
  SlotBuilder& skipped() {
    written_ = false;
    return *this;
  }
  // BO hashes before dispatch: reuse engine vs no-reuse engine.
  SlotBuilder& pre(uint64_t reuse, uint64_t noreuse) {
    reuse_pre_ = reuse;
    noreuse_pre_ = noreuse;
    return *this;
  }
  // BO hashes after dispatch: reuse engine vs no-reuse engine.
  SlotBuilder& post(uint64_t reuse, uint64_t noreuse) {
    reuse_post_ = reuse;
    noreuse_post_ = noreuse;
    return *this;
  }
  SlotBuilder& diffs(size_t diff, size_t stale) {
    diff_ = diff;
    stale_diff_ = stale;
    return *this;
  }
  SlotBuilder& access(bool reads_before_write, bool overwritten, bool written) {
    access_ = BodyAccess{};
    access_.reads_before_write = reads_before_write;
    access_.overwritten = overwritten;
    access_.written = written;
    return *this;
  }
  SlotBuilder& probe(bool read, size_t unwritten_bytes = 0) {
    probe_ = ProbeResult{true, read, unwritten_bytes};
    return *this;
  }
  SlotBuilder& bo_bytes(size_t n) {
    bo_bytes_ = n;
    return *this;
  }
  // Forces the slot's BO (e.g. two slots of one call on one key BO), on a first or a later
  // call of the key; ns is the call's, bytes this slot's.
  SlotBuilder& bo(BoPool pool, std::string name, int index) {
    Placement p;
    p.pool = pool;
    p.name = std::move(name);
    p.index = index;
    place_ = p;
    return *this;
  }

 private:
  friend class TraceBuilder;
  SlotBuilder& bind(ArraySource s, std::string n) {
    source_ = s;
    name_ = std::move(n);
    return *this;
  }

  ArraySource source_ = ArraySource::zeros;
  std::string name_ = "zeros";
  int view_of_call_ = 0;
  size_t bytes_ = kSlotBytes;
  std::optional<uint64_t> hash_, written_hash_, reuse_pre_, noreuse_pre_, reuse_post_,
      noreuse_post_;
  std::optional<bool> written_;
  std::optional<size_t> diff_, stale_diff_, bo_bytes_;
  BodyAccess access_;
  std::optional<ProbeResult> probe_;
  std::optional<Placement> place_;
};

class CallBuilder {
 public:
  CallBuilder& statics(std::vector<int> v) {
    c_.statics = std::move(v);
    return *this;
  }
  CallBuilder& inters(std::vector<int> v) {
    c_.inters = std::move(v);
    return *this;
  }
  CallBuilder& outputs(std::vector<int> v) {
    c_.outputs = std::move(v);
    return *this;
  }
  CallBuilder& ns(std::string n) {
    c_.ns = std::move(n);
    return *this;
  }
  CallBuilder& shared_nonstatic(bool on = true) {
    c_.shared_nonstatic = on;
    return *this;
  }
  CallBuilder& alias(int slot, std::string pool) {
    c_.alias[slot] = std::move(pool);
    return *this;
  }
  CallBuilder& phase(std::string p) {
    c_.phase = std::move(p);
    return *this;
  }
  CallBuilder& token(long long t) {
    c_.token = t;
    return *this;
  }
  CallBuilder& layer(long long l) {
    c_.layer = l;
    return *this;
  }
  CallBuilder& path(std::string p) {
    c_.path = std::move(p);
    return *this;
  }
  // The call failed (the builder also fails the calls the reuse engine raises on by itself).
  CallBuilder& failed(std::string error = "array larger than its BO") {
    c_.failed = true;
    c_.error = std::move(error);
    return *this;
  }
  // Output `slot` differs between the engines (replaces the default bit-exact comparison).
  CallBuilder& diverged(int slot, double cosine, long long nan_reuse = 0,
                        long long nan_noreuse = 0) {
    OutputMetrics o;
    o.slot = slot;
    o.bit_exact = false;
    o.cosine = cosine;
    o.max_abs = 1 - cosine;
    o.nan_reuse = nan_reuse;
    o.nan_noreuse = nan_noreuse;
    cmp_[slot] = o;
    return *this;
  }
  SlotBuilder& slot(int i) { return slots_[i]; }
  int number() const { return number_; }

 private:
  friend class TraceBuilder;
  TraceCall c_;
  int number_ = 0;
  std::map<int, SlotBuilder> slots_;
  std::map<int, OutputMetrics> cmp_;
};

class TraceBuilder {
 public:
  TraceBuilder() {
    caps_.run = caps_.no_reuse = caps_.byte_diffs = caps_.access = caps_.verify = true;
  }
  // Explicit capabilities (probe is then never switched on implicitly).
  TraceBuilder& caps(Capabilities c) {
    caps_ = c;
    caps_explicit_ = true;
    return *this;
  }
  // A trace of the calls' identities only (what `lint` sees).
  TraceBuilder& identities_only() { return caps(Capabilities{}); }
  TraceBuilder& kernel(std::string name, std::vector<std::string> slots) {
    KernelInfo k{std::move(name), {}, ""};
    for (auto& s : slots) k.slots.push_back({s, DType::f32});
    kernels_.push_back(std::move(k));
    return *this;
  }
  // Appends call number calls+1 of `kernel` (declared before) under `bo_key`; its slots
  // default to unbound (zeros) plain inputs of kSlotBytes, the default output is the last slot.
  CallBuilder& call(const std::string& kernel, const std::string& bo_key) {
    calls_.emplace_back();
    CallBuilder& c = calls_.back();
    c.number_ = static_cast<int>(calls_.size());
    c.c_.kernel = kernel;
    c.c_.bo_key = bo_key;
    c.c_.bo_key_template = bo_key;
    const KernelInfo* k = find(kernel);
    EXPECT_NE(k, nullptr) << "kernel '" << kernel << "' not declared";
    if (k && !k->slots.empty()) c.c_.outputs = {static_cast<int>(k->slots.size()) - 1};
    return c;
  }
  CallBuilder& at(int number) { return calls_[static_cast<size_t>(number - 1)]; }

  Trace build() const {
    Trace t;
    t.header.producer = "trace_builder";
    t.header.model_name = "hand-built";
    t.header.model_path = "model.json";
    t.header.backend = "cpu";
    t.header.kernels = kernels_;
    t.header.caps = caps_;
    if (!caps_explicit_)
      for (auto& cb : calls_)
        for (auto& [i, sb] : cb.slots_)
          if (sb.probe_) t.header.caps.probe = true;
    const Capabilities& cap = t.header.caps;
    // (ns, bo_key) -> its first call and the BO list that call set up
    std::map<std::pair<std::string, std::string>, std::pair<int, std::vector<Placement>>> keys;
    // BO identity -> (first call, BO number in order of first use), as the expansion numbers them
    std::map<decltype(Placement{}.identity()), std::pair<int, int>> bo_first;
    std::map<int, size_t> bo_alloc;  // BO number -> its size when the engine first bound it
    std::map<std::string, uint64_t> symbols;
    auto symbol = [&](const std::string& s) {
      return symbols.emplace(s, 1000 + symbols.size()).first->second;
    };
    for (auto& cb : calls_) {
      TraceCall c = cb.c_;
      c.number = cb.number_;
      const KernelInfo* k = find(c.kernel);
      size_t n = k ? k->slots.size() : 0;
      std::string raises = alias_raises(c, n);
      auto key = std::make_pair(c.ns, c.bo_key);
      auto kit = keys.find(key);
      bool first = kit == keys.end();
      c.key_first_call = first ? c.number : kit->second.first;
      // The reuse engine: what it raised (the first error), and whether a raise stops the writes.
      bool failed = !raises.empty();
      std::string error = failed ? "the real engine raises " + raises : "";
      auto fail = [&](const std::string& e) {
        if (!failed) error = e;
        failed = true;
      };
      for (size_t s = 0; s < n; ++s) {
        int si = static_cast<int>(s);
        auto it = cb.slots_.find(si);
        const SlotBuilder sb = it == cb.slots_.end() ? SlotBuilder{} : it->second;
        TraceSlot ts;
        ts.slot = si;
        ts.name = k->slots[s].name;
        ts.role = c.is_static(si)  ? SlotRole::static_input
                  : c.is_inter(si) ? SlotRole::intermediate
                                   : SlotRole::input;
        ts.output = c.is_output(si);
        ts.host.bytes = sb.bytes_;
        ts.host.shape = {static_cast<int64_t>(sb.bytes_ / 4)};
        ts.host.source = sb.source_;
        ts.host.name = sb.name_;
        ts.host.view_of_call = sb.view_of_call_;
        // Tensors are immutable (one hash per name); vars and views change every call.
        uint64_t dflt = kZerosHash;
        if (sb.source_ == ArraySource::tensor) dflt = symbol("tensor:" + sb.name_);
        if (sb.source_ == ArraySource::placeholder) dflt = symbol("placeholder:" + sb.name_);
        if (sb.source_ == ArraySource::var || sb.source_ == ArraySource::view)
          dflt = 100000 + static_cast<uint64_t>(c.number) * 100 + s;
        ts.host.hash = sb.hash_.value_or(dflt);
        // Placement as the expansion computes it: looked up at the key's first call (or forced),
        // a copy of the first call's on a later call, none beyond the first call's count.
        Placement p;
        if (first || sb.place_) {
          p = sb.place_ ? *sb.place_ : first_call_placement(c, si);
          p.ns = c.ns;
          p.bytes = ts.host.bytes;
          auto bi = bo_first.find(p.identity());
          if (bi == bo_first.end())
            bi = bo_first.emplace(p.identity(), std::make_pair(c.number, int(bo_first.size()) + 1))
                     .first;
          p.first_call = bi->second.first;
          p.bo = bi->second.second;
        } else if (s < kit->second.second.size()) {
          p = kit->second.second[s];
        } else {
          p.ns = c.ns;
          p.pool = BoPool::unbound;
          p.name = c.bo_key;
          p.index = si;
          p.bytes = 0;
          p.first_call = c.key_first_call;
          p.bo = -1;
        }
        ts.place = p;
        ts.access = sb.access_;
        if (cap.run) {
          // The engine writes every slot at a key's first call and the plain inputs after;
          // an unbound argument raises when written, a larger array where it is written or
          // read back; nothing is written once the call raised.
          bool bound = raises.empty() && p.pool != BoPool::unbound;
          bool skip = !first && (c.is_static(si) || c.is_inter(si));
          ts.bo_bytes = !bound ? (raises.empty() ? 0 : p.bytes)
                               : bo_alloc.emplace(p.bo, p.bytes).first->second;
          if (bound && ts.host.bytes > ts.bo_bytes && (!skip || ts.output))
            fail("the real engine raises ValueError: slot " + ts.name + " is " +
                 std::to_string(ts.host.bytes) + " bytes but its BO (" + p.label() + ") holds " +
                 std::to_string(ts.bo_bytes) + (skip ? " (output readback)" : " (host write)"));
          if (raises.empty() && !bound) {
            size_t have = kit == keys.end() ? 0 : kit->second.second.size();
            fail(skip ? "the real launch binds only the " + std::to_string(have) +
                            " BOs of bo_key '" + c.bo_key + "'; the kernel never sees argument " +
                            std::to_string(s)
                      : "the real engine raises IndexError writing argument " + std::to_string(s) +
                            ": bo_key '" + c.bo_key + "' has " + std::to_string(have) + " BOs");
          }
          ts.written = bound && !skip && !failed;
          ts.reuse_pre = ts.reuse_post = bound ? ts.host.hash : 0;
        }
        if (cap.no_reuse) ts.noreuse_pre = ts.noreuse_post = ts.host.hash;
        if (sb.written_) ts.written = *sb.written_;
        if (ts.written) {
          ts.written_bytes = ts.host.bytes;
          ts.written_hash = sb.written_hash_.value_or(ts.host.hash);
        }
        if (sb.bo_bytes_) ts.bo_bytes = *sb.bo_bytes_;
        if (sb.reuse_pre_) ts.reuse_pre = ts.reuse_post = *sb.reuse_pre_;
        if (sb.noreuse_pre_) ts.noreuse_pre = ts.noreuse_post = *sb.noreuse_pre_;
        if (sb.reuse_post_) ts.reuse_post = *sb.reuse_post_;
        if (sb.noreuse_post_) ts.noreuse_post = *sb.noreuse_post_;
        if (sb.diff_) ts.diff_bytes = *sb.diff_;
        if (sb.stale_diff_) ts.stale_diff_bytes = *sb.stale_diff_;
        if (sb.probe_) ts.probe = *sb.probe_;
        c.slots.push_back(std::move(ts));
      }
      std::vector<Placement> places;
      for (auto& ts : c.slots) places.push_back(ts.place);
      // A call the engine raises on does not create its key.
      if (first && raises.empty()) keys.emplace(key, std::make_pair(c.number, std::move(places)));
      if (cap.run && failed && !c.failed) {
        c.failed = true;
        c.error = error;
      }
      // The runner compares no outputs of a call the reuse engine did not run.
      if (cap.no_reuse && !c.failed)
        for (int o : c.outputs) {
          OutputMetrics m;
          m.slot = o;
          m.elements = static_cast<long long>(kSlotBytes / 4);
          c.outputs_cmp.push_back(m);
        }
      for (auto& [slot, m] : cb.cmp_) {
        bool replaced = false;
        for (auto& o : c.outputs_cmp)
          if (o.slot == slot) {
            o = m;
            replaced = true;
          }
        if (!replaced) c.outputs_cmp.push_back(m);
      }
      t.calls.push_back(std::move(c));
    }
    return t;
  }

 private:
  // What the real engine raises on the call's shared_alias before touching a BO ("" when
  // nothing), as tool/plan/expand.cpp: an alias on a static slot, out of range, or unnamed.
  static std::string alias_raises(const TraceCall& c, size_t n) {
    for (auto& [slot, name] : c.alias)
      if (c.is_static(slot)) return "ValueError: shared_alias must not target a static slot";
    for (auto& [slot, name] : c.alias)
      if (slot < 0 || static_cast<size_t>(slot) >= n)
        return "ValueError: shared_alias index out of range";
    for (auto& [slot, name] : c.alias)
      if (name.empty()) return "ValueError: shared_alias pool names must be non-empty";
    return "";
  }
  // The BO of slot `s` as the engine looks it up at a key's first call: the alias pool, the
  // shared_nonstatic pool (kernel, slot, bytes), or the key's own BO.
  static Placement first_call_placement(const TraceCall& c, int s) {
    Placement p;
    if (c.alias.count(s)) {
      p.pool = BoPool::alias;
      p.name = c.alias.at(s);
    } else if (c.shared_nonstatic && !c.is_static(s)) {
      p.pool = BoPool::shared;
      p.name = c.kernel;
      p.index = s;
    } else {
      p.pool = BoPool::key;
      p.name = c.bo_key;
      p.index = s;
    }
    return p;
  }
  const KernelInfo* find(const std::string& name) const {
    for (auto& k : kernels_)
      if (k.name == name) return &k;
    return nullptr;
  }

  Capabilities caps_;
  bool caps_explicit_ = false;
  std::vector<KernelInfo> kernels_;
  std::deque<CallBuilder> calls_;  // deque: references returned by call() stay valid
};

// Capabilities with only the named ones set.
inline Capabilities only_caps(bool run, bool no_reuse, bool byte_diffs = false,
                              bool access = false) {
  Capabilities c;
  c.run = run;
  c.no_reuse = no_reuse;
  c.byte_diffs = byte_diffs;
  c.access = access;
  return c;
}

// The findings one check function reports on `t`, merged and sorted as the report shows them.
inline std::vector<Finding> run_check(CheckFn fn, const Trace& t) {
  FindingSink sink;
  fn(t, sink);
  return sink.sorted();
}

// The value of evidence `key` ("<absent>" when missing).
inline std::string evidence(const Finding& f, const std::string& key) {
  for (auto& [k, v] : f.evidence)
    if (k == key) return v;
  return "<absent>";
}

// For failure messages: one line per finding.
inline std::string describe(const std::vector<Finding>& v) {
  std::string s;
  for (auto& f : v)
    s += "\n  " + f.check + " " + severity_name(f.severity) + " call " + std::to_string(f.call) +
         " slot " + std::to_string(f.slot) + (f.latent ? " latent" : "") + " x" +
         std::to_string(f.occurrences) + ": " + f.message;
  return s.empty() ? "\n  (no findings)" : s;
}

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace bod
