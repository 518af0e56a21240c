// Trace <-> JSON Lines (docs/trace-format.md). The writer builds one ordered_json per line so
// the key order is fixed; the reader checks limits on the raw line, parses it, then walks it
// with a Cursor that spells out "FILE:LINE:/json/pointer" only when it reports an error.
#include "trace/trace_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "core/hash.h"

namespace bod {

namespace {

using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Writing

// Non-finite doubles have no JSON number, so they are written as strings.
ojson num(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

// u64 hashes do not fit a double (JavaScript, jq), so they are 16 hex digits.
ojson hex(uint64_t h) { return hash_hex(h); }

ojson pair(ojson a, ojson b) { return ojson::array({std::move(a), std::move(b)}); }

// Invalid UTF-8 (say in an engine's error text) becomes U+FFFD rather than an exception.
std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

const char* engine_name(TraceEngine e) { return e == TraceEngine::reuse ? "reuse" : "no_reuse"; }

ojson header_json(const TraceHeader& h) {
  ojson j;
  j["trace"] = "bo-doctor";
  j["version"] = kTraceVersion;
  j["producer"] = h.producer;
  j["model"]["name"] = h.model_name;
  j["model"]["path"] = h.model_path;
  j["backend"]["name"] = h.backend;
  j["backend"]["host_emulated"] = h.host_emulated;
  j["backend"]["npu_launched"] = h.npu_launched;
  ojson& caps = j["capabilities"];
  caps["run"] = h.caps.run;
  caps["no_reuse"] = h.caps.no_reuse;
  caps["byte_diffs"] = h.caps.byte_diffs;
  caps["access"] = h.caps.access;
  caps["probe"] = h.caps.probe;
  caps["verify"] = h.caps.verify;
  ojson kernels = ojson::array();
  for (auto& k : h.kernels) {
    ojson kj;
    kj["name"] = k.name;
    kj["slots"] = ojson::array();
    for (auto& s : k.slots) {
      ojson sj;
      sj["name"] = s.name;
      sj["dtype"] = dtype_name(s.dtype);
      kj["slots"].push_back(std::move(sj));
    }
    kj["binary"] = k.binary;
    kernels.push_back(std::move(kj));
  }
  j["kernels"] = std::move(kernels);
  j["verify"]["top_k"] = h.top_k;
  j["verify"]["outputs"] = ojson::array();
  for (auto& v : h.verify) {
    ojson vj;
    vj["var"] = v.var;
    vj["min_cosine"] = num(v.min_cosine);
    vj["atol"] = num(v.atol);
    vj["rtol"] = num(v.rtol);
    j["verify"]["outputs"].push_back(std::move(vj));
  }
  return j;
}

ojson host_json(const HostArray& a) {
  ojson j;
  j["shape"] = a.shape;
  j["dtype"] = dtype_name(a.dtype);
  j["bytes"] = a.bytes;
  j["hash"] = hex(a.hash);
  j["source"] = array_source_name(a.source);
  j["name"] = a.name;
  j["view_of_call"] = a.view_of_call;
  return j;
}

ojson bo_json(const Placement& p) {
  ojson j;
  j["ns"] = p.ns;
  j["pool"] = bo_pool_name(p.pool);
  j["name"] = p.name;
  j["index"] = p.index;
  j["bytes"] = p.bytes;
  j["first_call"] = p.first_call;
  return j;
}

ojson slot_json(const Capabilities& caps, const TraceSlot& s) {
  ojson j;
  j["role"] = slot_role_name(s.role);
  j["output"] = s.output;
  j["host"] = host_json(s.host);
  j["bo"] = bo_json(s.place);
  if (caps.access) {
    j["access"]["reads_before_write"] = s.access.reads_before_write;
    j["access"]["overwritten"] = s.access.overwritten;
    j["access"]["written"] = s.access.written;
  }
  if (caps.run) {
    j["bo_bytes"] = s.bo_bytes;
    j["written"] = s.written;
    j["written_bytes"] = s.written_bytes;
    j["written_hash"] = hex(s.written_hash);
    j["reuse"] = pair(hex(s.reuse_pre), hex(s.reuse_post));
  }
  if (caps.no_reuse) j["no_reuse"] = pair(hex(s.noreuse_pre), hex(s.noreuse_post));
  if (caps.byte_diffs) j["diff"] = pair(s.diff_bytes, s.stale_diff_bytes);
  if (caps.probe && s.probe.probed) {
    j["probe"]["read"] = s.probe.read;
    j["probe"]["unwritten_bytes"] = s.probe.unwritten_bytes;
  }
  return j;
}

ojson output_json(const OutputMetrics& o) {
  ojson j;
  j["slot"] = o.slot;
  j["bit_exact"] = o.bit_exact;
  j["cosine"] = num(o.cosine);
  j["max_abs"] = num(o.max_abs);
  j["max_rel"] = num(o.max_rel);
  j["nan"] = pair(o.nan_reuse, o.nan_noreuse);
  j["inf"] = pair(o.inf_reuse, o.inf_noreuse);
  j["elements"] = o.elements;
  return j;
}

ojson call_json(const Capabilities& caps, const TraceCall& c) {
  ojson j;
  j["type"] = "call";
  j["n"] = c.number;
  j["ns"] = c.ns;
  j["kernel"] = c.kernel;
  j["bo_key"] = c.bo_key;
  j["bo_key_template"] = c.bo_key_template;
  j["static"] = c.statics;
  j["intermediate"] = c.inters;
  j["output"] = c.outputs;
  j["shared_nonstatic"] = c.shared_nonstatic;
  j["alias"] = ojson::object();
  for (auto& [slot, name] : c.alias) j["alias"][std::to_string(slot)] = name;
  j["labels"]["phase"] = c.phase;
  j["labels"]["token"] = c.token;
  j["labels"]["layer"] = c.layer;
  j["path"] = c.path;
  j["key_first_call"] = c.key_first_call;
  j["slots"] = ojson::array();
  for (auto& s : c.slots) j["slots"].push_back(slot_json(caps, s));
  if (caps.run) {
    j["failed"] = c.failed;
    j["error"] = c.error;
    j["h2d"] = pair(c.h2d_reuse, caps.no_reuse ? c.h2d_noreuse : 0);
    j["writes"] = pair(c.writes_reuse, caps.no_reuse ? c.writes_noreuse : 0);
  }
  if (caps.no_reuse) {
    j["outputs"] = ojson::array();
    for (auto& o : c.outputs_cmp) j["outputs"].push_back(output_json(o));
  }
  return j;
}

// Figures exist for the engines that ran.
bool engine_ran(const Capabilities& caps, TraceEngine e) {
  return e == TraceEngine::reuse ? caps.run : caps.no_reuse || caps.verify;
}

}  // namespace

std::string trace_header_line(const Trace& t) { return dump(header_json(t.header)); }

std::string trace_call_line(const Trace& t, const TraceCall& c) {
  return dump(call_json(t.header.caps, c));
}

std::string trace_view_read_line(const ViewRead& v) {
  ojson j;
  j["type"] = "view_read";
  j["var"] = v.var;
  j["reader"] = v.reader;
  j["read_call"] = v.read_call;
  j["captured_call"] = v.captured_call;
  j["slot"] = v.slot;
  j["overwritten_by"] = v.overwritten_by;
  j["by_host_write"] = v.overwritten_by_host_write;
  return dump(j);
}

std::string trace_token_line(TraceEngine e, const TokenStep& s) {
  ojson j;
  j["type"] = "token";
  j["engine"] = engine_name(e);
  j["token"] = s.token;
  j["topk"] = s.topk;
  return dump(j);
}

std::string trace_verify_line(const VerifyOutput& v) {
  ojson j;
  j["type"] = "verify";
  j["var"] = v.var;
  j["cosine"] = num(v.cosine);
  j["max_abs"] = num(v.max_abs);
  j["max_rel"] = num(v.max_rel);
  j["nan_inf"] = pair(v.nan_inf_reuse, v.nan_inf_noreuse);
  return dump(j);
}

std::string trace_figures_line(const Trace& t, TraceEngine e) {
  const EngineFigures& f = e == TraceEngine::reuse ? t.reuse : t.noreuse;
  ojson j;
  j["type"] = "figures";
  j["engine"] = engine_name(e);
  j["calls"] = f.calls;
  j["h2d_bytes"] = f.h2d_bytes;
  j["bo_writes"] = f.writes;
  if (t.timings) {
    j["seconds"]["write"] = num(f.write_s);
    j["seconds"]["dispatch"] = num(f.dispatch_s);
    j["seconds"]["read"] = num(f.read_s);
  }
  return dump(j);
}

std::string trace_end_line(const Trace& t) {
  ojson j;
  j["type"] = "end";
  j["no_reuse_extra_calls"] = t.noreuse_extra_calls;
  if (t.timings) j["wall_seconds"] = num(t.wall_s);
  return dump(j);
}

void write_trace(std::ostream& out, const Trace& t) {
  out << trace_header_line(t) << '\n';
  for (auto& c : t.calls) out << trace_call_line(t, c) << '\n';
  for (auto& v : t.view_reads) out << trace_view_read_line(v) << '\n';
  for (auto& s : t.tokens_reuse) out << trace_token_line(TraceEngine::reuse, s) << '\n';
  for (auto& s : t.tokens_noreuse) out << trace_token_line(TraceEngine::no_reuse, s) << '\n';
  if (t.header.caps.verify)
    for (auto& v : t.verify) out << trace_verify_line(v) << '\n';
  for (TraceEngine e : {TraceEngine::reuse, TraceEngine::no_reuse})
    if (engine_ran(t.header.caps, e)) out << trace_figures_line(t, e) << '\n';
  out << trace_end_line(t) << '\n';
}

namespace {

// ---------------------------------------------------------------------------------------------
// Messages

// Escapes control characters and cuts to at most `max` bytes, never inside a UTF-8 sequence.
std::string shorten(std::string_view s, size_t max = 80) {
  std::string r;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", ch);
      r += b;
    } else {
      r += static_cast<char>(ch);
    }
    if (r.size() > max + 8) break;
  }
  if (r.size() <= max) return r;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
  return r.substr(0, cut) + "...";
}

std::string quote(const ojson& v) { return shorten(dump(v)); }

std::string kind(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::object: return "an object";
    case ojson::value_t::array: return "an array";
    case ojson::value_t::string: return "a string";
    case ojson::value_t::boolean: return "a boolean";
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned:
    case ojson::value_t::number_float: return "a number";
    default: return "a value";
  }
}

std::string expected(const std::string& what, const ojson& found) {
  return "expected " + what + ", found " + kind(found) + " " + quote(found);
}

std::string join(std::initializer_list<const char*> names) {
  std::string r;
  for (auto* n : names) r += (r.empty() ? "" : ", ") + std::string(n);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Cursor: where the reader is

// File, line and JSON pointer of the value being read. The pointer is a stack of key/index
// segments (views into literals or into the parsed line) spelled out only for an error.
class Cursor {
 public:
  explicit Cursor(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  void start_line(size_t line) {
    line_ = line;
    path_.clear();
  }
  size_t line() const { return line_; }

  // "FILE:LINE" for the line, "FILE:LINE:/a/0/b" inside it.
  Error err(const std::string& what) const {
    std::string w = file_ + ":" + std::to_string(line_);
    if (!path_.empty()) w += ":";
    for (auto& s : path_) w += "/" + (s.is_key ? escape(s.key) : std::to_string(s.index));
    return Error{w, what, Exit::bad_input};
  }
  Error line_err(const std::string& what) const {
    return Error{file_ + ":" + std::to_string(line_), what, Exit::bad_input};
  }

  // Enters a key or an index until the returned scope ends.
  class Scope {
   public:
    explicit Scope(Cursor& c) : c_(c) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { c_.path_.pop_back(); }

   private:
    Cursor& c_;
  };
  Scope in(std::string_view key) {
    path_.push_back(Seg{key, 0, true});
    return Scope(*this);
  }
  Scope in(size_t index) {
    path_.push_back(Seg{{}, index, false});
    return Scope(*this);
  }

 private:
  struct Seg {
    std::string_view key;
    size_t index;
    bool is_key;
  };
  // JSON pointer escaping (~0, ~1), shortened so a huge key cannot flood the message.
  static std::string escape(std::string_view k) {
    std::string r;
    for (char ch : k) r += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
    return shorten(r);
  }
  std::string file_;
  size_t line_ = 0;
  std::vector<Seg> path_;
};

// ---------------------------------------------------------------------------------------------
// Typed reads. *_v read the value at the cursor; get_* read a field of an object (entering it).

const ojson* find(const ojson& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

Result<std::string> str_v(Cursor& c, const ojson& v) {
  if (!v.is_string()) return c.err(expected("a string", v));
  return v.get<std::string>();
}

Result<bool> bool_v(Cursor& c, const ojson& v) {
  if (!v.is_boolean()) return c.err(expected("true or false", v));
  return v.get<bool>();
}

Result<long long> int_v(Cursor& c, const ojson& v, long long lo, long long hi) {
  std::string want = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (!v.is_number_integer()) return c.err(expected(want, v));
  if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi))
    return c.err(expected(want, v));
  long long x = v.get<long long>();
  if (x < lo || x > hi) return c.err(expected(want, v));
  return x;
}

Result<double> num_v(Cursor& c, const ojson& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
  }
  return c.err(expected("a number or one of \"nan\", \"inf\", \"-inf\"", v));
}

Result<uint64_t> hash_v(Cursor& c, const ojson& v) {
  const char* want = "a hash: 16 lower-case hex digits";
  if (!v.is_string()) return c.err(expected(want, v));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() != 16) return c.err(expected(want, v));
  uint64_t h = 0;
  for (char ch : s) {
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return c.err(expected(want, v));
    h = h << 4 | static_cast<uint64_t>(d);
  }
  return h;
}

template <typename E, size_t N>
Result<E> enum_v(Cursor& c, const ojson& v, const std::pair<const char*, E> (&names)[N]) {
  std::string want = "one of";
  for (size_t i = 0; i < N; ++i) want += std::string(i ? ", " : " ") + names[i].first;
  if (v.is_string())
    for (auto& [n, e] : names)
      if (v.get_ref<const std::string&>() == n) return e;
  return c.err(expected(want, v));
}

const std::pair<const char*, DType> kDTypes[] = {
    {"bf16", DType::bf16}, {"f32", DType::f32}, {"i32", DType::i32}, {"i8", DType::i8}};
const std::pair<const char*, SlotRole> kRoles[] = {{"input", SlotRole::input},
                                                   {"static", SlotRole::static_input},
                                                   {"intermediate", SlotRole::intermediate}};
const std::pair<const char*, ArraySource> kSources[] = {
    {"tensor", ArraySource::tensor}, {"var", ArraySource::var},
    {"view", ArraySource::view},     {"zeros", ArraySource::zeros},
    {"placeholder", ArraySource::placeholder}};
const std::pair<const char*, BoPool> kPools[] = {
    {"key", BoPool::key}, {"shared", BoPool::shared}, {"alias", BoPool::alias}};
const std::pair<const char*, TraceEngine> kEngines[] = {{"reuse", TraceEngine::reuse},
                                                        {"no_reuse", TraceEngine::no_reuse}};

// Enters `key` of `o`, refuses it when missing, and reads it with `read(value)`.
template <typename F>
auto field(Cursor& c, const ojson& o, const char* key, const char* want, F read)
    -> decltype(read(o)) {
  auto in = c.in(key);
  const ojson* v = find(o, key);
  if (!v) return c.err(std::string("missing required field (expected ") + want + ")");
  return read(*v);
}

Result<std::string> get_str(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "a string", [&](const ojson& v) { return str_v(c, v); });
}
Result<bool> get_bool(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "true or false", [&](const ojson& v) { return bool_v(c, v); });
}
Result<long long> get_int(Cursor& c, const ojson& o, const char* k, long long lo, long long hi) {
  return field(c, o, k, "an integer", [&](const ojson& v) { return int_v(c, v, lo, hi); });
}
Result<size_t> get_size(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "an integer >= 0", [&](const ojson& v) -> Result<size_t> {
    BOD_TRY(long long x, int_v(c, v, 0, LLONG_MAX));
    return static_cast<size_t>(x);
  });
}
Result<double> get_num(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "a number", [&](const ojson& v) { return num_v(c, v); });
}
Result<uint64_t> get_hash(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "16 hex digits", [&](const ojson& v) { return hash_v(c, v); });
}
template <typename E, size_t N>
Result<E> get_enum(Cursor& c, const ojson& o, const char* k,
                   const std::pair<const char*, E> (&names)[N]) {
  return field(c, o, k, "a string", [&](const ojson& v) { return enum_v(c, v, names); });
}
Result<const ojson*> get_obj(Cursor& c, const ojson& o, const char* k) {
  return field(c, o, k, "an object", [&](const ojson& v) -> Result<const ojson*> {
    if (!v.is_object()) return c.err(expected("an object", v));
    return &v;
  });
}
// An array; `exact` elements unless it is SIZE_MAX.
Result<const ojson*> get_arr(Cursor& c, const ojson& o, const char* k, size_t exact = SIZE_MAX) {
  return field(c, o, k, "an array", [&](const ojson& v) -> Result<const ojson*> {
    if (exact == SIZE_MAX && v.is_array()) return &v;
    std::string want = "an array of " + std::to_string(exact) + " elements";
    if (!v.is_array() || v.size() != exact)
      return c.err(expected(exact == SIZE_MAX ? "an array" : want, v));
    return &v;
  });
}

// An array of integers, each in [lo, hi].
template <typename T>
Result<std::vector<T>> get_ints(Cursor& c, const ojson& o, const char* k, long long lo,
                                long long hi) {
  BOD_TRY(const ojson* a, get_arr(c, o, k));
  auto in = c.in(k);
  std::vector<T> r;
  r.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    auto at = c.in(i);
    BOD_TRY(long long x, int_v(c, (*a)[i], lo, hi));
    r.push_back(static_cast<T>(x));
  }
  return r;
}

// [reuse, no_reuse] counts.
Result<std::pair<long long, long long>> get_pair(Cursor& c, const ojson& o, const char* k) {
  BOD_TRY(const ojson* a, get_arr(c, o, k, 2));
  auto in = c.in(k);
  std::pair<long long, long long> r;
  {
    auto at = c.in(size_t(0));
    BOD_TRY(r.first, int_v(c, (*a)[0], 0, LLONG_MAX));
  }
  auto at = c.in(size_t(1));
  BOD_TRY(r.second, int_v(c, (*a)[1], 0, LLONG_MAX));
  return r;
}

// [pre, post] hashes.
Result<std::pair<uint64_t, uint64_t>> get_hashes(Cursor& c, const ojson& o, const char* k) {
  BOD_TRY(const ojson* a, get_arr(c, o, k, 2));
  auto in = c.in(k);
  std::pair<uint64_t, uint64_t> r;
  {
    auto at = c.in(size_t(0));
    BOD_TRY(r.first, hash_v(c, (*a)[0]));
  }
  auto at = c.in(size_t(1));
  BOD_TRY(r.second, hash_v(c, (*a)[1]));
  return r;
}

// Refuses keys outside `known` (typo protection). "x" holds a writer's extensions: any
// object, not read.
Status only_keys(Cursor& c, const ojson& o, std::initializer_list<const char*> known) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    auto in = c.in(k);
    if (k == "x") {
      if (!it.value().is_object()) return c.err(expected("an object (writer extensions)", *it));
      continue;
    }
    bool ok = false;
    for (auto* n : known) ok = ok || k == n;
    if (!ok)
      return c.err("unknown key \"" + shorten(k) + "\"; expected one of " + join(known) +
                   " (extensions go under \"x\")");
  }
  return ok_status();
}

// Fields that only a capability gives: refused when the header does not declare it.
Status gated(Cursor& c, const ojson& o, bool declared, const char* cap,
             std::initializer_list<const char*> keys) {
  if (declared) return ok_status();
  for (auto* k : keys)
    if (const ojson* v = find(o, k)) {
      auto in = c.in(k);
      return c.err("found " + quote(*v) + ", but this field needs capability \"" + cap +
                   "\", which the header does not declare");
    }
  return ok_status();
}

// A reference to call `n`, which must be in [lo, hi] (0 allowed only when lo is 0).
Result<int> get_call_ref(Cursor& c, const ojson& o, const char* k, int lo, int hi) {
  return field(c, o, k, "a call number", [&](const ojson& v) -> Result<int> {
    if (v.is_number_integer() && (!v.is_number_unsigned() || v.get<unsigned long long>() <= INT_MAX)) {
      long long x = v.get<long long>();
      if (x >= lo && x <= hi) return static_cast<int>(x);
    }
    std::string want = hi < lo ? "a call number, but no call precedes this line"
                               : "a call number from " + std::to_string(lo) + " to " +
                                     std::to_string(hi) + " (an earlier or the same call)";
    return c.err(expected(want, v));
  });
}

}  // namespace
}  // namespace bod
