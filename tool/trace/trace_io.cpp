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

// Written with a fixed key order; read into std::map objects (faster to parse and look up).
using ojson = nlohmann::ordered_json;
using rjson = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Writing

// Non-finite doubles have no JSON number, so they are written as strings.
ojson num(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

// u64 hashes do not fit a double (JavaScript, jq), so they are 16 hex digits.
ojson hex(uint64_t h) {
  return hash_hex(h);
}

ojson pair(ojson a, ojson b) {
  return ojson::array({std::move(a), std::move(b)});
}

// Invalid UTF-8 (say in an engine's error text) becomes U+FFFD rather than an exception.
std::string dump(const ojson& j) {
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

const char* engine_name(TraceEngine e) {
  return e == TraceEngine::reuse ? "reuse" : "no_reuse";
}

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
    if (s.access.rewritten_before_read) j["access"]["rewritten_before_read"] = true;
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

std::string trace_header_line(const Trace& t) {
  return dump(header_json(t.header));
}

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
    j["seconds"]["steady_call_median"] = num(f.steady_median_s);
    j["seconds"]["steady_calls"] = f.steady_calls;
    j["seconds"]["first_calls"] = num(f.first_calls_s);
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

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c0 = b(i);
  size_t n = c0 < 0x80           ? 1
             : (c0 >> 5) == 0x6  ? 2
             : (c0 >> 4) == 0xE  ? 3
             : (c0 >> 3) == 0x1E ? 4
                                 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

// For messages: escapes control characters and bytes that are not UTF-8, and cuts to at most
// `max` bytes (never inside a character) with "..." appended.
std::string shorten(std::string_view s, size_t max = 80) {
  std::string r;
  for (size_t i = 0; i < s.size() && r.size() <= max + 8;) {
    auto ch = static_cast<unsigned char>(s[i]);
    size_t n = utf8_len(s, i);
    if (n == 0 || ch < 0x20 || ch == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", ch);
      r += b;
      i += 1;
    } else {
      r.append(s.substr(i, n));
      i += n;
    }
  }
  if (r.size() <= max) return r;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
  return r.substr(0, cut) + "...";
}

std::string quote(const rjson& v) {
  return shorten(v.dump(-1, ' ', false, rjson::error_handler_t::replace));
}

std::string kind(const rjson& v) {
  switch (v.type()) {
    case rjson::value_t::null:
      return "null";
    case rjson::value_t::object:
      return "an object";
    case rjson::value_t::array:
      return "an array";
    case rjson::value_t::string:
      return "a string";
    case rjson::value_t::boolean:
      return "a boolean";
    case rjson::value_t::number_integer:
    case rjson::value_t::number_unsigned:
    case rjson::value_t::number_float:
      return "a number";
    default:
      return "a value";
  }
}

std::string expected(const std::string& what, const rjson& found) {
  return "expected " + what + ", found " + kind(found) + " " + quote(found);
}

std::string join(std::initializer_list<const char*> names) {
  std::string r;
  for (auto* n : names) r += (r.empty() ? "" : ", ") + std::string(n);
  return r;
}

std::string int_range(long long lo, long long hi) {
  if (lo == LLONG_MIN && hi == LLONG_MAX) return "an integer";
  if (lo == INT_MIN && hi == INT_MAX) return "a 32-bit integer";
  if (hi == LLONG_MAX) return "an integer >= " + std::to_string(lo);
  return "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}

// ---------------------------------------------------------------------------------------------
// Cursor: where the reader is

// File, line and JSON pointer of the value being read. The pointer is a stack of key/index
// segments (views into literals or into the parsed line) spelled out only for an error, so
// a valid trace reads without building strings for it.
class Cursor {
 public:
  explicit Cursor(std::string file) : file_(std::move(file)) {}
  void start_line(size_t line) {
    line_ = line;
    path_.clear();
  }

  // "FILE:LINE:/a/0/b: what" at the current pointer.
  Error err(const std::string& what) const {
    std::string w = file_ + ":" + std::to_string(line_);
    if (!path_.empty()) w += ":";
    for (auto& s : path_) w += "/" + (s.is_key ? escape(s.key) : std::to_string(s.index));
    return Error{w, what, Exit::bad_input};
  }
  // "FILE:LINE: what", for problems of the line as a whole.
  Error line_err(const std::string& what) const {
    return Error{file_ + ":" + std::to_string(line_), what, Exit::bad_input};
  }

  // Leaves the key or index entered by in() when it goes out of scope.
  class Scope {
   public:
    explicit Scope(Cursor& c) : c_(c) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { c_.path_.pop_back(); }

   private:
    Cursor& c_;
  };
  // `key` must outlive the scope (a literal or a key of the parsed line).
  [[nodiscard]] Scope in(std::string_view key) {
    path_.push_back(Seg{key, 0, true});
    return Scope(*this);
  }
  [[nodiscard]] Scope in(size_t index) {
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
// Typed reads. *_v read the value at the cursor; get_* enter a field of an object and read it.

const rjson* find(const rjson& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

Result<std::string> str_v(Cursor& c, const rjson& v) {
  if (!v.is_string()) return c.err(expected("a string", v));
  return v.get<std::string>();
}

Result<bool> bool_v(Cursor& c, const rjson& v) {
  if (!v.is_boolean()) return c.err(expected("true or false", v));
  return v.get<bool>();
}

Result<long long> int_v(Cursor& c, const rjson& v, long long lo, long long hi) {
  if (v.is_number_integer()) {
    bool big =
        v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi);
    long long x = v.get<long long>();
    if (!big && x >= lo && x <= hi) return x;
  }
  return c.err(expected(int_range(lo, hi), v));
}

Result<double> num_v(Cursor& c, const rjson& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
  }
  return c.err(expected("a number or one of \"nan\", \"inf\", \"-inf\"", v));
}

Result<uint64_t> hash_v(Cursor& c, const rjson& v) {
  if (v.is_string() && v.get_ref<const std::string&>().size() == 16) {
    uint64_t h = 0;
    bool ok = true;
    for (char ch : v.get_ref<const std::string&>()) {
      int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      ok = ok && d >= 0;
      h = h << 4 | static_cast<uint64_t>(d & 0xf);
    }
    if (ok) return h;
  }
  return c.err(expected("a hash: 16 lower-case hex digits", v));
}

template <typename E>
using Names = std::pair<const char*, E>;

template <typename E, size_t N>
Result<E> enum_v(Cursor& c, const rjson& v, const Names<E> (&names)[N]) {
  if (v.is_string())
    for (auto& [n, e] : names)
      if (v.get_ref<const std::string&>() == n) return e;
  std::string want = "one of";
  for (size_t i = 0; i < N; ++i) want += std::string(i ? ", " : " ") + names[i].first;
  return c.err(expected(want, v));
}

const Names<DType> kDTypes[] = {
    {"bf16", DType::bf16}, {"f32", DType::f32}, {"i32", DType::i32}, {"i8", DType::i8}};
const Names<SlotRole> kRoles[] = {{"input", SlotRole::input},
                                  {"static", SlotRole::static_input},
                                  {"intermediate", SlotRole::intermediate}};
const Names<ArraySource> kSources[] = {{"tensor", ArraySource::tensor},
                                       {"var", ArraySource::var},
                                       {"view", ArraySource::view},
                                       {"zeros", ArraySource::zeros},
                                       {"placeholder", ArraySource::placeholder}};
const Names<BoPool> kPools[] = {
    {"key", BoPool::key},
    {"shared", BoPool::shared},
    {"alias", BoPool::alias},
    {"unbound", BoPool::unbound}};
const Names<TraceEngine> kEngines[] = {{"reuse", TraceEngine::reuse},
                                       {"no_reuse", TraceEngine::no_reuse}};

// Enters `key` of `o`, refuses it when missing, and reads it with `read(value)`.
template <typename F>
auto field(Cursor& c, const rjson& o, const char* key, const char* want, F read)
    -> decltype(read(o)) {
  auto in = c.in(key);
  const rjson* v = find(o, key);
  if (!v) return c.err(std::string("missing required field (expected ") + want + ")");
  return read(*v);
}

Result<std::string> get_str(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "a string", [&](const rjson& v) { return str_v(c, v); });
}
Result<bool> get_bool(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "true or false", [&](const rjson& v) { return bool_v(c, v); });
}
Result<long long> get_int(Cursor& c, const rjson& o, const char* k, long long lo, long long hi) {
  return field(c, o, k, "an integer", [&](const rjson& v) { return int_v(c, v, lo, hi); });
}
Result<int> get_int32(Cursor& c, const rjson& o, const char* k, int lo = INT_MIN,
                      int hi = INT_MAX) {
  return field(c, o, k, "an integer", [&](const rjson& v) -> Result<int> {
    BOD_TRY(long long x, int_v(c, v, lo, hi));
    return static_cast<int>(x);
  });
}
Result<size_t> get_size(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "an integer >= 0", [&](const rjson& v) -> Result<size_t> {
    BOD_TRY(long long x, int_v(c, v, 0, LLONG_MAX));
    return static_cast<size_t>(x);
  });
}
Result<double> get_num(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "a number", [&](const rjson& v) { return num_v(c, v); });
}
Result<uint64_t> get_hash(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "16 hex digits", [&](const rjson& v) { return hash_v(c, v); });
}
template <typename E, size_t N>
Result<E> get_enum(Cursor& c, const rjson& o, const char* k, const Names<E> (&names)[N]) {
  return field(c, o, k, "a string", [&](const rjson& v) { return enum_v(c, v, names); });
}
Result<const rjson*> get_obj(Cursor& c, const rjson& o, const char* k) {
  return field(c, o, k, "an object", [&](const rjson& v) -> Result<const rjson*> {
    if (!v.is_object()) return c.err(expected("an object", v));
    return &v;
  });
}
// An array; of exactly `exact` elements unless that is SIZE_MAX.
Result<const rjson*> get_arr(Cursor& c, const rjson& o, const char* k, size_t exact = SIZE_MAX) {
  return field(c, o, k, "an array", [&](const rjson& v) -> Result<const rjson*> {
    if (v.is_array() && (exact == SIZE_MAX || v.size() == exact)) return &v;
    std::string want = "an array";
    if (exact != SIZE_MAX) want += " of " + std::to_string(exact) + " elements";
    return c.err(expected(want, v));
  });
}

// An array of integers, each in [lo, hi].
template <typename T>
Result<std::vector<T>> get_ints(Cursor& c, const rjson& o, const char* k, long long lo,
                                long long hi) {
  BOD_TRY(const rjson* a, get_arr(c, o, k));
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

// [reuse, no_reuse]: two integers in [0, hi].
Result<std::pair<long long, long long>> get_pair(Cursor& c, const rjson& o, const char* k,
                                                 long long hi = LLONG_MAX) {
  BOD_TRY(const rjson* a, get_arr(c, o, k, 2));
  auto in = c.in(k);
  long long r[2];
  for (size_t i = 0; i < 2; ++i) {
    auto at = c.in(i);
    BOD_TRY(r[i], int_v(c, (*a)[i], 0, hi));
  }
  return std::make_pair(r[0], r[1]);
}

// [pre, post] hashes.
Result<std::pair<uint64_t, uint64_t>> get_hashes(Cursor& c, const rjson& o, const char* k) {
  BOD_TRY(const rjson* a, get_arr(c, o, k, 2));
  auto in = c.in(k);
  uint64_t r[2];
  for (size_t i = 0; i < 2; ++i) {
    auto at = c.in(i);
    BOD_TRY(r[i], hash_v(c, (*a)[i]));
  }
  return std::make_pair(r[0], r[1]);
}

// A call number in [lo, hi]: the calls that exist when the line is read (0 only if lo is 0).
Result<int> get_call_ref(Cursor& c, const rjson& o, const char* k, int lo, int hi) {
  return field(c, o, k, "a call number", [&](const rjson& v) -> Result<int> {
    if (lo <= hi) {
      auto x = int_v(c, v, lo, hi);
      if (x) return static_cast<int>(*x);
    }
    std::string want = hi < lo ? "a call number, but no call precedes this line"
                               : "a call number from " + std::to_string(lo) + " to " +
                                     std::to_string(hi) + " (the calls read so far)";
    return c.err(expected(want, v));
  });
}

// Refuses keys outside `known` (typo protection). "x" holds a writer's extensions: any
// object, not read.
Status only_keys(Cursor& c, const rjson& o, std::initializer_list<const char*> known) {
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
Status gated(Cursor& c, const rjson& o, bool declared, const char* cap,
             std::initializer_list<const char*> keys) {
  if (declared) return ok_status();
  for (auto* k : keys)
    if (const rjson* v = find(o, k)) {
      auto in = c.in(k);
      return c.err("found " + quote(*v) + ", but this field needs capability \"" + cap +
                   "\", which the header does not declare");
    }
  return ok_status();
}

Status require_object(Cursor& c, const rjson& v, const char* what) {
  if (v.is_object()) return ok_status();
  return c.err(expected(what, v));
}

// ---------------------------------------------------------------------------------------------
// Header

// "trace" and "version" first, so a newer trace gets the version message, not key errors.
Status read_identity(Cursor& c, const rjson& o) {
  const rjson* magic = find(o, "trace");
  if (!magic) {
    const rjson* type = find(o, "type");
    return c.line_err(
        "the first line must be the trace header {\"trace\": \"bo-doctor\", "
        "\"version\": 1, ...}, found " +
        (type ? "a line of type " + quote(*type) : "a line without \"trace\""));
  }
  {
    auto in = c.in("trace");
    if (*magic != "bo-doctor") return c.err(expected("\"bo-doctor\" (a bo-doctor trace)", *magic));
  }
  BOD_TRY(long long v, get_int(c, o, "version", 1, LLONG_MAX));
  if (v > kTraceVersion) {
    auto in = c.in("version");
    return c.err("trace format version " + std::to_string(v) + " is newer than this build " +
                 "reads (version " + std::to_string(kTraceVersion) + "); use a newer bo-doctor");
  }
  return ok_status();
}

Status read_model_backend(Cursor& c, const rjson& o, TraceHeader& h) {
  {
    BOD_TRY(const rjson* m, get_obj(c, o, "model"));
    auto in = c.in("model");
    BOD_CHECK(only_keys(c, *m, {"name", "path"}));
    BOD_TRY(h.model_name, get_str(c, *m, "name"));
    BOD_TRY(h.model_path, get_str(c, *m, "path"));
  }
  BOD_TRY(const rjson* b, get_obj(c, o, "backend"));
  auto in = c.in("backend");
  BOD_CHECK(only_keys(c, *b, {"name", "host_emulated", "npu_launched"}));
  BOD_TRY(h.backend, get_str(c, *b, "name"));
  BOD_TRY(h.host_emulated, get_bool(c, *b, "host_emulated"));
  BOD_TRY(h.npu_launched, get_bool(c, *b, "npu_launched"));
  return ok_status();
}

Status read_caps(Cursor& c, const rjson& o, Capabilities& caps) {
  BOD_TRY(const rjson* j, get_obj(c, o, "capabilities"));
  auto in = c.in("capabilities");
  BOD_CHECK(only_keys(c, *j, {"run", "no_reuse", "byte_diffs", "access", "probe", "verify"}));
  BOD_TRY(caps.run, get_bool(c, *j, "run"));
  BOD_TRY(caps.no_reuse, get_bool(c, *j, "no_reuse"));
  BOD_TRY(caps.byte_diffs, get_bool(c, *j, "byte_diffs"));
  BOD_TRY(caps.access, get_bool(c, *j, "access"));
  BOD_TRY(caps.probe, get_bool(c, *j, "probe"));
  BOD_TRY(caps.verify, get_bool(c, *j, "verify"));
  struct Need {
    bool has;
    const char* key;
    bool met;
    const char* need;
    const char* why;
  };
  for (const Need& n :
       {Need{caps.no_reuse, "no_reuse", caps.run, "run",
             "no-reuse results are compared with the reuse engine's"},
        Need{caps.byte_diffs, "byte_diffs", caps.no_reuse, "no_reuse",
             "byte diffs compare the two engines' slots"},
        Need{caps.probe, "probe", caps.run, "run", "probes are runs of the reuse engine"}})
    if (n.has && !n.met) {
      auto k = c.in(n.key);
      return c.err(std::string("true needs \"") + n.need + "\": true as well (" + n.why + ")");
    }
  return ok_status();
}

Result<KernelInfo> read_kernel(Cursor& c, const rjson& j, const TraceLimits& lim) {
  BOD_CHECK(require_object(c, j, "an object {\"name\", \"slots\", \"binary\"}"));
  BOD_CHECK(only_keys(c, j, {"name", "slots", "binary"}));
  KernelInfo k;
  BOD_TRY(k.name, get_str(c, j, "name"));
  BOD_TRY(k.binary, get_str(c, j, "binary"));
  BOD_TRY(const rjson* slots, get_arr(c, j, "slots"));
  auto in = c.in("slots");
  if (slots->size() > lim.max_slots)
    return c.err(std::to_string(slots->size()) + " slots; expected at most " +
                 std::to_string(lim.max_slots) + " slots per kernel (the limit TraceLimits::max_slots)");
  for (size_t i = 0; i < slots->size(); ++i) {
    auto at = c.in(i);
    const rjson& s = (*slots)[i];
    BOD_CHECK(require_object(c, s, "an object {\"name\", \"dtype\"}"));
    BOD_CHECK(only_keys(c, s, {"name", "dtype"}));
    KernelSlotInfo si;
    BOD_TRY(si.name, get_str(c, s, "name"));
    BOD_TRY(si.dtype, get_enum(c, s, "dtype", kDTypes));
    k.slots.push_back(std::move(si));
  }
  return k;
}

Status read_kernels(Cursor& c, const rjson& o, const TraceLimits& lim,
                    std::vector<KernelInfo>& out) {
  BOD_TRY(const rjson* a, get_arr(c, o, "kernels"));
  auto in = c.in("kernels");
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < a->size(); ++i) {
    auto at = c.in(i);
    BOD_TRY(KernelInfo k, read_kernel(c, (*a)[i], lim));
    if (!seen.emplace(k.name, i).second) {
      auto n = c.in("name");
      return c.err("kernel \"" + shorten(k.name) + "\" is already listed at /kernels/" +
                   std::to_string(seen[k.name]) + "; kernel names must be unique");
    }
    out.push_back(std::move(k));
  }
  return ok_status();
}

Status read_verify_spec(Cursor& c, const rjson& o, TraceHeader& h) {
  BOD_TRY(const rjson* v, get_obj(c, o, "verify"));
  auto in = c.in("verify");
  BOD_CHECK(only_keys(c, *v, {"top_k", "outputs"}));
  BOD_TRY(h.top_k, get_int32(c, *v, "top_k", 0));
  BOD_TRY(const rjson* outs, get_arr(c, *v, "outputs"));
  auto in_outs = c.in("outputs");
  for (size_t i = 0; i < outs->size(); ++i) {
    auto at = c.in(i);
    const rjson& j = (*outs)[i];
    BOD_CHECK(require_object(c, j, "an object {\"var\", \"min_cosine\", \"atol\", \"rtol\"}"));
    BOD_CHECK(only_keys(c, j, {"var", "min_cosine", "atol", "rtol"}));
    VerifySpec s;
    BOD_TRY(s.var, get_str(c, j, "var"));
    BOD_TRY(s.min_cosine, get_num(c, j, "min_cosine"));
    BOD_TRY(s.atol, get_num(c, j, "atol"));
    BOD_TRY(s.rtol, get_num(c, j, "rtol"));
    h.verify.push_back(std::move(s));
  }
  return ok_status();
}

Result<TraceHeader> read_header(Cursor& c, const rjson& o, const TraceLimits& lim) {
  BOD_CHECK(read_identity(c, o));
  BOD_CHECK(only_keys(
      c, o,
      {"trace", "version", "producer", "model", "backend", "capabilities", "kernels", "verify"}));
  TraceHeader h;
  BOD_TRY(h.producer, get_str(c, o, "producer"));
  BOD_CHECK(read_model_backend(c, o, h));
  BOD_CHECK(read_caps(c, o, h.caps));
  BOD_CHECK(read_kernels(c, o, lim, h.kernels));
  BOD_CHECK(read_verify_spec(c, o, h));
  return h;
}

// ---------------------------------------------------------------------------------------------
// Call lines

// What lines after the header are read into and checked against.
struct ReadState {
  explicit ReadState(const TraceLimits& l) : lim(l) {}
  const TraceLimits& lim;
  Trace t;
  bool have_header = false;
  std::map<std::string, size_t> kernels;  // name -> index in t.header.kernels
  bool figures[2] = {false, false};       // per TraceEngine: a figures line was read
  size_t end_line = 0;                    // line of the "end" event, 0 before it
};

// A slot index written as an object key: a decimal integer ("3", "-1"), as std::to_string
// writes it, so two spellings cannot name the same slot.
Result<int> slot_key(Cursor& c, const std::string& k) {
  size_t d = k.size() > 0 && k[0] == '-' ? 1 : 0;
  bool ok = k.size() > d && k.size() - d <= 10 && (k[d] != '0' || k.size() == d + 1) &&
            !(d == 1 && k[1] == '0');
  for (size_t i = d; ok && i < k.size(); ++i) ok = k[i] >= '0' && k[i] <= '9';
  long long v = ok ? std::stoll(k) : 0;
  if (ok && v >= INT_MIN && v <= INT_MAX) return static_cast<int>(v);
  return c.err("expected a slot index as the key (a decimal integer such as \"2\"), found \"" +
               shorten(k) + "\"");
}

Status read_alias(Cursor& c, const rjson& o, std::map<int, std::string>& alias) {
  BOD_TRY(const rjson* a, get_obj(c, o, "alias"));
  auto in = c.in("alias");
  for (auto it = a->begin(); it != a->end(); ++it) {
    auto at = c.in(it.key());
    BOD_TRY(int slot, slot_key(c, it.key()));
    BOD_TRY(alias[slot], str_v(c, it.value()));
  }
  return ok_status();
}

Status read_labels(Cursor& c, const rjson& o, TraceCall& call) {
  BOD_TRY(const rjson* l, get_obj(c, o, "labels"));
  auto in = c.in("labels");
  BOD_CHECK(only_keys(c, *l, {"phase", "token", "layer"}));
  BOD_TRY(call.phase, get_str(c, *l, "phase"));
  BOD_TRY(call.token, get_int(c, *l, "token", -1, LLONG_MAX));
  BOD_TRY(call.layer, get_int(c, *l, "layer", -1, LLONG_MAX));
  return ok_status();
}

Status read_call_identity(Cursor& c, const rjson& o, const ReadState& st, TraceCall& call) {
  BOD_TRY(call.ns, get_str(c, o, "ns"));
  BOD_TRY(call.kernel, get_str(c, o, "kernel"));
  if (!st.kernels.count(call.kernel)) {
    auto in = c.in("kernel");
    std::string names;
    for (auto& k : st.t.header.kernels) names += (names.empty() ? "" : ", ") + k.name;
    return c.err("unknown kernel \"" + shorten(call.kernel) +
                 "\"; expected one of the header's kernels: " + shorten(names, 200));
  }
  BOD_TRY(call.bo_key, get_str(c, o, "bo_key"));
  BOD_TRY(call.bo_key_template, get_str(c, o, "bo_key_template"));
  // Slot indices as the call declared them; out-of-range ones are reported by the checks.
  BOD_TRY(call.statics, get_ints<int>(c, o, "static", INT_MIN, INT_MAX));
  BOD_TRY(call.inters, get_ints<int>(c, o, "intermediate", INT_MIN, INT_MAX));
  BOD_TRY(call.outputs, get_ints<int>(c, o, "output", INT_MIN, INT_MAX));
  BOD_TRY(call.shared_nonstatic, get_bool(c, o, "shared_nonstatic"));
  BOD_CHECK(read_alias(c, o, call.alias));
  BOD_CHECK(read_labels(c, o, call));
  BOD_TRY(call.path, get_str(c, o, "path"));
  BOD_TRY(call.key_first_call, get_call_ref(c, o, "key_first_call", 1, call.number));
  return ok_status();
}

Status read_host(Cursor& c, const rjson& o, int n, HostArray& a) {
  BOD_TRY(const rjson* h, get_obj(c, o, "host"));
  auto in = c.in("host");
  BOD_CHECK(
      only_keys(c, *h, {"shape", "dtype", "bytes", "hash", "source", "name", "view_of_call"}));
  BOD_TRY(a.shape, get_ints<int64_t>(c, *h, "shape", 0, LLONG_MAX));
  BOD_TRY(a.dtype, get_enum(c, *h, "dtype", kDTypes));
  BOD_TRY(a.bytes, get_size(c, *h, "bytes"));
  BOD_TRY(a.hash, get_hash(c, *h, "hash"));
  BOD_TRY(a.source, get_enum(c, *h, "source", kSources));
  BOD_TRY(a.name, get_str(c, *h, "name"));
  if (a.source == ArraySource::view) {
    BOD_TRY(a.view_of_call, get_call_ref(c, *h, "view_of_call", 1, n));
  } else {
    BOD_TRY(a.view_of_call, get_int32(c, *h, "view_of_call"));
    if (a.view_of_call != 0) {
      auto at = c.in("view_of_call");
      return c.err(expected(
          "0 (the source is \"" + std::string(array_source_name(a.source)) + "\", not \"view\")",
          (*h)["view_of_call"]));
    }
  }
  return ok_status();
}

Status read_bo(Cursor& c, const rjson& o, int n, Placement& p) {
  BOD_TRY(const rjson* b, get_obj(c, o, "bo"));
  auto in = c.in("bo");
  BOD_CHECK(only_keys(c, *b, {"ns", "pool", "name", "index", "bytes", "first_call"}));
  BOD_TRY(p.ns, get_str(c, *b, "ns"));
  BOD_TRY(p.pool, get_enum(c, *b, "pool", kPools));
  BOD_TRY(p.name, get_str(c, *b, "name"));
  BOD_TRY(p.index, get_int32(c, *b, "index"));
  BOD_TRY(p.bytes, get_size(c, *b, "bytes"));
  BOD_TRY(p.first_call, get_call_ref(c, *b, "first_call", 1, n));
  return ok_status();
}

Status read_access(Cursor& c, const rjson& o, BodyAccess& a) {
  BOD_TRY(const rjson* j, get_obj(c, o, "access"));
  auto in = c.in("access");
  BOD_CHECK(only_keys(c, *j, {"reads_before_write", "overwritten", "written",
                               "rewritten_before_read"}));
  BOD_TRY(a.reads_before_write, get_bool(c, *j, "reads_before_write"));
  BOD_TRY(a.overwritten, get_bool(c, *j, "overwritten"));
  BOD_TRY(a.written, get_bool(c, *j, "written"));
  if (j->contains("rewritten_before_read")) {  // optional; absent = false (conservative)
    BOD_TRY(a.rewritten_before_read, get_bool(c, *j, "rewritten_before_read"));
  }
  return ok_status();
}

Status read_probe(Cursor& c, const rjson& o, ProbeResult& p) {
  BOD_TRY(const rjson* j, get_obj(c, o, "probe"));
  auto in = c.in("probe");
  BOD_CHECK(only_keys(c, *j, {"read", "unwritten_bytes"}));
  BOD_TRY(p.read, get_bool(c, *j, "read"));
  BOD_TRY(p.unwritten_bytes, get_size(c, *j, "unwritten_bytes"));
  p.probed = true;
  return ok_status();
}

// The capability-dependent facts of a slot.
Status read_slot_run(Cursor& c, const rjson& j, const Capabilities& caps, TraceSlot& s) {
  if (caps.run) {
    BOD_TRY(s.bo_bytes, get_size(c, j, "bo_bytes"));
    BOD_TRY(s.written, get_bool(c, j, "written"));
    BOD_TRY(s.written_bytes, get_size(c, j, "written_bytes"));
    BOD_TRY(s.written_hash, get_hash(c, j, "written_hash"));
    BOD_TRY(auto h, get_hashes(c, j, "reuse"));
    std::tie(s.reuse_pre, s.reuse_post) = h;
  }
  if (caps.no_reuse) {
    BOD_TRY(auto h, get_hashes(c, j, "no_reuse"));
    std::tie(s.noreuse_pre, s.noreuse_post) = h;
  }
  if (caps.byte_diffs) {
    BOD_TRY(auto d, get_pair(c, j, "diff"));
    s.diff_bytes = static_cast<size_t>(d.first);
    s.stale_diff_bytes = static_cast<size_t>(d.second);
  }
  if (caps.probe && find(j, "probe")) BOD_CHECK(read_probe(c, j, s.probe));
  return ok_status();
}

Result<TraceSlot> read_slot(Cursor& c, const rjson& j, const Capabilities& caps, int n) {
  BOD_CHECK(require_object(c, j, "an object (a slot)"));
  BOD_CHECK(only_keys(c, j,
                      {"role", "output", "host", "bo", "access", "bo_bytes", "written",
                       "written_bytes", "written_hash", "reuse", "no_reuse", "diff", "probe"}));
  BOD_CHECK(gated(c, j, caps.access, "access", {"access"}));
  BOD_CHECK(gated(c, j, caps.run, "run",
                  {"bo_bytes", "written", "written_bytes", "written_hash", "reuse"}));
  BOD_CHECK(gated(c, j, caps.no_reuse, "no_reuse", {"no_reuse"}));
  BOD_CHECK(gated(c, j, caps.byte_diffs, "byte_diffs", {"diff"}));
  BOD_CHECK(gated(c, j, caps.probe, "probe", {"probe"}));
  TraceSlot s;
  BOD_TRY(s.role, get_enum(c, j, "role", kRoles));
  BOD_TRY(s.output, get_bool(c, j, "output"));
  BOD_CHECK(read_host(c, j, n, s.host));
  BOD_CHECK(read_bo(c, j, n, s.place));
  if (caps.access) BOD_CHECK(read_access(c, j, s.access));
  BOD_CHECK(read_slot_run(c, j, caps, s));
  return s;
}

Status read_call_slots(Cursor& c, const rjson& o, const ReadState& st, TraceCall& call) {
  const KernelInfo& k = st.t.header.kernels[st.kernels.at(call.kernel)];
  BOD_TRY(const rjson* a, get_arr(c, o, "slots"));
  auto in = c.in("slots");
  if (a->size() > st.lim.max_slots)
    return c.err(std::to_string(a->size()) + " slots; expected at most " +
                 std::to_string(st.lim.max_slots) + " slots per call (the limit TraceLimits::max_slots)");
  if (a->size() != k.slots.size())
    return c.err("expected " + std::to_string(k.slots.size()) + " slots (kernel \"" +
                 shorten(k.name) + "\" has " + std::to_string(k.slots.size()) +
                 " in the header), found " + std::to_string(a->size()));
  call.slots.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    auto at = c.in(i);
    BOD_TRY(TraceSlot s, read_slot(c, (*a)[i], st.t.header.caps, call.number));
    s.slot = static_cast<int>(i);
    s.name = k.slots[i].name;
    call.slots.push_back(std::move(s));
  }
  return ok_status();
}

// A [reuse, no_reuse] pair whose second element must be 0 without the no-reuse engine.
Result<std::pair<long long, long long>> get_engine_pair(Cursor& c, const rjson& o, const char* k,
                                                        bool no_reuse, long long hi) {
  BOD_TRY(auto p, get_pair(c, o, k, hi));
  if (!no_reuse && p.second != 0) {
    auto in = c.in(k);
    auto at = c.in(size_t(1));
    return c.err(
        expected("0 (the no-reuse engine did not run: no capability \"no_reuse\")", o[k][1]));
  }
  return p;
}

Status read_call_run(Cursor& c, const rjson& o, const Capabilities& caps, TraceCall& call) {
  BOD_TRY(call.failed, get_bool(c, o, "failed"));
  BOD_TRY(call.error, get_str(c, o, "error"));
  BOD_TRY(auto h2d, get_engine_pair(c, o, "h2d", caps.no_reuse, LLONG_MAX));
  call.h2d_reuse = static_cast<size_t>(h2d.first);
  call.h2d_noreuse = static_cast<size_t>(h2d.second);
  BOD_TRY(auto w, get_engine_pair(c, o, "writes", caps.no_reuse, INT_MAX));
  call.writes_reuse = static_cast<int>(w.first);
  call.writes_noreuse = static_cast<int>(w.second);
  return ok_status();
}

Result<OutputMetrics> read_output(Cursor& c, const rjson& j) {
  BOD_CHECK(require_object(c, j, "an object (an output comparison)"));
  BOD_CHECK(only_keys(
      c, j, {"slot", "bit_exact", "cosine", "max_abs", "max_rel", "nan", "inf", "elements"}));
  OutputMetrics m;
  BOD_TRY(m.slot, get_int32(c, j, "slot"));
  BOD_TRY(m.bit_exact, get_bool(c, j, "bit_exact"));
  BOD_TRY(m.cosine, get_num(c, j, "cosine"));
  BOD_TRY(m.max_abs, get_num(c, j, "max_abs"));
  BOD_TRY(m.max_rel, get_num(c, j, "max_rel"));
  BOD_TRY(auto nan, get_pair(c, j, "nan"));
  std::tie(m.nan_reuse, m.nan_noreuse) = nan;
  BOD_TRY(auto inf, get_pair(c, j, "inf"));
  std::tie(m.inf_reuse, m.inf_noreuse) = inf;
  BOD_TRY(m.elements, get_int(c, j, "elements", 0, LLONG_MAX));
  return m;
}

Status read_call_outputs(Cursor& c, const rjson& o, TraceCall& call) {
  BOD_TRY(const rjson* a, get_arr(c, o, "outputs"));
  auto in = c.in("outputs");
  for (size_t i = 0; i < a->size(); ++i) {
    auto at = c.in(i);
    BOD_TRY(OutputMetrics m, read_output(c, (*a)[i]));
    call.outputs_cmp.push_back(std::move(m));
  }
  return ok_status();
}

Status read_call(Cursor& c, const rjson& o, ReadState& st) {
  const Capabilities& caps = st.t.header.caps;
  const size_t max_calls = std::min<size_t>(st.lim.max_calls, INT_MAX - 1);  // call numbers are int
  if (st.t.calls.size() >= max_calls)
    return c.line_err("more than " + std::to_string(max_calls) + " calls; expected at most " +
                      std::to_string(max_calls) + " call lines (the limit TraceLimits::max_calls)");
  BOD_CHECK(only_keys(c, o, {"type",   "n",
                             "ns",     "kernel",
                             "bo_key", "bo_key_template",
                             "static", "intermediate",
                             "output", "shared_nonstatic",
                             "alias",  "labels",
                             "path",   "key_first_call",
                             "slots",  "failed",
                             "error",  "h2d",
                             "writes", "outputs"}));
  BOD_CHECK(gated(c, o, caps.run, "run", {"failed", "error", "h2d", "writes"}));
  BOD_CHECK(gated(c, o, caps.no_reuse, "no_reuse", {"outputs"}));
  TraceCall call;
  call.number = static_cast<int>(st.t.calls.size()) + 1;
  BOD_TRY(long long n, get_int(c, o, "n", LLONG_MIN, LLONG_MAX));
  if (n != call.number) {
    auto in = c.in("n");
    return c.err(expected(
        std::to_string(call.number) + " (calls are numbered consecutively from 1)", o["n"]));
  }
  BOD_CHECK(read_call_identity(c, o, st, call));
  BOD_CHECK(read_call_slots(c, o, st, call));
  if (caps.run) BOD_CHECK(read_call_run(c, o, caps, call));
  if (caps.no_reuse) BOD_CHECK(read_call_outputs(c, o, call));
  st.t.calls.push_back(std::move(call));
  return ok_status();
}

// ---------------------------------------------------------------------------------------------
// Event lines

Status read_view_read(Cursor& c, const rjson& o, ReadState& st) {
  BOD_CHECK(only_keys(c, o,
                      {"type", "var", "reader", "read_call", "captured_call", "slot",
                       "overwritten_by", "by_host_write"}));
  int last = static_cast<int>(st.t.calls.size());
  ViewRead v;
  BOD_TRY(v.var, get_str(c, o, "var"));
  BOD_TRY(v.reader, get_str(c, o, "reader"));
  BOD_TRY(v.read_call, get_call_ref(c, o, "read_call", 0, last));
  BOD_TRY(v.captured_call, get_call_ref(c, o, "captured_call", 1, last));
  BOD_TRY(v.slot, get_int32(c, o, "slot"));
  BOD_TRY(v.overwritten_by, get_call_ref(c, o, "overwritten_by", 1, last));
  BOD_TRY(v.overwritten_by_host_write, get_bool(c, o, "by_host_write"));
  st.t.view_reads.push_back(std::move(v));
  return ok_status();
}

Status read_token(Cursor& c, const rjson& o, ReadState& st) {
  BOD_CHECK(only_keys(c, o, {"type", "engine", "token", "topk"}));
  BOD_TRY(TraceEngine e, get_enum(c, o, "engine", kEngines));
  TokenStep s;
  BOD_TRY(s.token, get_int32(c, o, "token"));
  BOD_TRY(s.topk, get_ints<int32_t>(c, o, "topk", INT_MIN, INT_MAX));
  (e == TraceEngine::reuse ? st.t.tokens_reuse : st.t.tokens_noreuse).push_back(std::move(s));
  return ok_status();
}

Status read_verify_event(Cursor& c, const rjson& o, ReadState& st) {
  if (!st.t.header.caps.verify) {
    auto in = c.in("type");
    return c.err(
        "a \"verify\" line needs capability \"verify\", which the header does not "
        "declare");
  }
  BOD_CHECK(only_keys(c, o, {"type", "var", "cosine", "max_abs", "max_rel", "nan_inf"}));
  VerifyOutput v;
  BOD_TRY(v.var, get_str(c, o, "var"));
  BOD_TRY(v.cosine, get_num(c, o, "cosine"));
  BOD_TRY(v.max_abs, get_num(c, o, "max_abs"));
  BOD_TRY(v.max_rel, get_num(c, o, "max_rel"));
  BOD_TRY(auto p, get_pair(c, o, "nan_inf"));
  std::tie(v.nan_inf_reuse, v.nan_inf_noreuse) = p;
  st.t.verify.push_back(std::move(v));
  return ok_status();
}

Status read_seconds(Cursor& c, const rjson& o, EngineFigures& f) {
  BOD_TRY(const rjson* s, get_obj(c, o, "seconds"));
  auto in = c.in("seconds");
  BOD_CHECK(only_keys(c, *s, {"write", "dispatch", "read", "steady_call_median", "steady_calls",
                              "first_calls"}));
  BOD_TRY(f.write_s, get_num(c, *s, "write"));
  BOD_TRY(f.dispatch_s, get_num(c, *s, "dispatch"));
  BOD_TRY(f.read_s, get_num(c, *s, "read"));
  if (find(*s, "steady_call_median")) {  // optional: traces before these figures lack them
    BOD_TRY(f.steady_median_s, get_num(c, *s, "steady_call_median"));
    BOD_TRY(f.steady_calls, get_int(c, *s, "steady_calls", 0, LONG_MAX));
    BOD_TRY(f.first_calls_s, get_num(c, *s, "first_calls"));
  }
  return ok_status();
}

Status read_figures(Cursor& c, const rjson& o, ReadState& st) {
  BOD_CHECK(only_keys(c, o, {"type", "engine", "calls", "h2d_bytes", "bo_writes", "seconds"}));
  BOD_TRY(TraceEngine e, get_enum(c, o, "engine", kEngines));
  if (!engine_ran(st.t.header.caps, e) || st.figures[int(e)]) {
    auto in = c.in("engine");
    if (st.figures[int(e)]) return c.err("a second figures line for this engine");
    return c.err(std::string("figures of an engine that did not run: needs capability ") +
                 (e == TraceEngine::reuse ? "\"run\"" : "\"no_reuse\" or \"verify\"") +
                 ", which the header does not declare");
  }
  st.figures[int(e)] = true;
  EngineFigures& f = e == TraceEngine::reuse ? st.t.reuse : st.t.noreuse;
  BOD_TRY(f.calls, get_int(c, o, "calls", 0, LONG_MAX));
  BOD_TRY(f.h2d_bytes, get_size(c, o, "h2d_bytes"));
  BOD_TRY(f.writes, get_int(c, o, "bo_writes", 0, LONG_MAX));
  if (find(o, "seconds")) {
    BOD_CHECK(read_seconds(c, o, f));
    st.t.timings = true;
  }
  return ok_status();
}

Status read_end(Cursor& c, const rjson& o, ReadState& st, size_t line) {
  BOD_CHECK(only_keys(c, o, {"type", "no_reuse_extra_calls", "wall_seconds"}));
  BOD_TRY(st.t.noreuse_extra_calls, get_int32(c, o, "no_reuse_extra_calls", 0));
  if (find(o, "wall_seconds")) {
    BOD_TRY(st.t.wall_s, get_num(c, o, "wall_seconds"));
    st.t.timings = true;
  }
  st.end_line = line;
  return ok_status();
}

// One parsed line after the header, by its "type".
Status read_line(Cursor& c, const rjson& o, ReadState& st, size_t line) {
  if (st.end_line)
    return c.line_err("a line after the \"end\" line (line " + std::to_string(st.end_line) +
                      "); \"end\" must be the last line");
  const rjson* type = find(o, "type");
  if (!type && find(o, "trace")) return c.line_err("a second header line; only the first is one");
  if (type && *type == "call") return read_call(c, o, st);
  if (type && *type == "view_read") return read_view_read(c, o, st);
  if (type && *type == "token") return read_token(c, o, st);
  if (type && *type == "verify") return read_verify_event(c, o, st);
  if (type && *type == "figures") return read_figures(c, o, st);
  if (type && *type == "end") return read_end(c, o, st, line);
  auto in = c.in("type");
  const char* want = "one of call, view_read, token, verify, figures, end";
  if (!type) return c.err(std::string("missing required field (expected ") + want + ")");
  return c.err(expected(want, *type));
}

// ---------------------------------------------------------------------------------------------
// Lines

// Reads '\n'-terminated lines in chunks and refuses a line longer than the limit before more
// than the limit is held in memory.
class LineReader {
 public:
  enum class Got { line, eof, too_long, io_error };
  LineReader(std::istream& in, size_t max) : in_(in), max_(max), buf_(size_t(1) << 16) {}

  Got next(std::string& line) {
    line.clear();
    bool any = false;
    for (;;) {
      if (pos_ == end_ && !fill()) return any ? Got::line : in_.bad() ? Got::io_error : Got::eof;
      any = true;
      const char* b = buf_.data() + pos_;
      size_t n = end_ - pos_;
      auto nl = static_cast<const char*>(std::memchr(b, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - b) : n;
      if (line.size() + take > max_) return Got::too_long;
      line.append(b, take);
      pos_ += take + (nl ? 1 : 0);
      if (nl) return Got::line;
    }
  }

 private:
  bool fill() {
    in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    end_ = static_cast<size_t>(in_.gcount());
    pos_ = 0;
    return end_ > 0;
  }
  std::istream& in_;
  size_t max_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
};

// Nesting depth and string lengths, checked on the raw line before it is parsed.
Status prescan(Cursor& c, const std::string& s, const TraceLimits& lim) {
  int depth = 0;
  size_t start = 0;
  bool in_str = false;
  auto too_long = [&](size_t len) {
    return c.line_err("a string of " + std::to_string(len) + (in_str ? "+" : "") +
                      " bytes at column " + std::to_string(start + 1) + " (\"" +
                      shorten(std::string_view(s).substr(start + 1, 40)) +
                      "...\"); expected at most " + std::to_string(lim.max_string_bytes) +
                      " bytes per string as written (the limit TraceLimits::max_string_bytes)");
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (in_str) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_str = false;
        if (i - start - 1 > lim.max_string_bytes) return too_long(i - start - 1);
      }
    } else if (ch == '"') {
      in_str = true;
      start = i;
    } else if (ch == '{' || ch == '[') {
      if (++depth > lim.max_depth)
        return c.line_err("JSON nested deeper than " + std::to_string(lim.max_depth) +
                          " levels at column " + std::to_string(i + 1) + "; expected at most " +
                          std::to_string(lim.max_depth) +
                          " levels of [ and { per line (the limit TraceLimits::max_depth)");
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  if (in_str && s.size() - start - 1 > lim.max_string_bytes) return too_long(s.size() - start - 1);
  return ok_status();
}

// Keys of the objects open while one line is parsed: nlohmann keeps the last of duplicate keys
// silently, the reader refuses them.
class DupKeys {
 public:
  void reset() {
    depth_ = 0;
    dup_.clear();
  }
  const std::string& dup() const { return dup_; }
  bool operator()(rjson::parse_event_t ev, const rjson& parsed) {
    if (ev == rjson::parse_event_t::object_start) {
      if (depth_ == open_.size()) open_.emplace_back();
      open_[depth_++].clear();
    } else if (ev == rjson::parse_event_t::object_end) {
      --depth_;
    } else if (ev == rjson::parse_event_t::key && depth_ > 0 && dup_.empty()) {
      auto& keys = open_[depth_ - 1];
      const std::string& k = parsed.get_ref<const std::string&>();
      for (auto& seen : keys)
        if (seen == k) dup_ = k;
      keys.push_back(k);
    }
    return true;
  }

 private:
  std::vector<std::vector<std::string>> open_;
  size_t depth_ = 0;
  std::string dup_;
};

Result<rjson> parse_line(Cursor& c, const std::string& s, DupKeys& dk) {
  dk.reset();
  rjson j;
  try {
    j = rjson::parse(s, [&dk](int, rjson::parse_event_t ev, rjson& p) { return dk(ev, p); });
  } catch (const rjson::parse_error& e) {
    std::string w = e.what();
    size_t p = w.find(": ");
    std::string why = p == std::string::npos ? w : w.substr(p + 2);
    return c.line_err("not valid JSON at column " + std::to_string(e.byte) + ": " +
                      shorten(why, 160));
  } catch (const rjson::exception& e) {
    return c.line_err("not valid JSON: " + shorten(e.what(), 160));
  }
  if (!dk.dup().empty())
    return c.line_err("duplicate key \"" + shorten(dk.dup()) + "\" in one object");
  if (!j.is_object()) return c.line_err(expected("one JSON object per line", j));
  return j;
}

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r") == std::string::npos;
}

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<Trace> read_trace(std::istream& in, const std::string& name, const TraceLimits& limits) {
  Cursor c(name);
  ReadState st(limits);
  LineReader lines(in, limits.max_line_bytes);
  DupKeys dk;
  std::string s;
  for (size_t n = 1;; ++n) {
    c.start_line(n);
    auto got = lines.next(s);
    if (got == LineReader::Got::eof) break;
    if (got == LineReader::Got::io_error) return c.line_err("read error");
    if (got == LineReader::Got::too_long)
      return c.line_err("line longer than the limit of " + std::to_string(limits.max_line_bytes) +
                        " bytes; expected at most " + std::to_string(limits.max_line_bytes) +
                        " bytes per line (the limit TraceLimits::max_line_bytes)");
    if (blank(s)) continue;
    BOD_CHECK(prescan(c, s, limits));
    BOD_TRY(rjson j, parse_line(c, s, dk));
    if (!st.have_header) {
      BOD_TRY(st.t.header, read_header(c, j, limits));
      for (size_t k = 0; k < st.t.header.kernels.size(); ++k)
        st.kernels[st.t.header.kernels[k].name] = k;
      st.have_header = true;
      continue;
    }
    BOD_CHECK(read_line(c, j, st, n));
  }
  if (!st.have_header)
    return Error{name + ":1",
                 "empty trace: expected the header line {\"trace\": \"bo-doctor\", "
                 "\"version\": 1, ...}",
                 Exit::bad_input};
  // BO numbers are derived, not stored in the file; a first_call the file states must agree.
  std::vector<int> stated;
  for (auto& call : st.t.calls)
    for (auto& slot : call.slots) stated.push_back(slot.place.first_call);
  number_bos(st.t);
  size_t i = 0;
  for (auto& call : st.t.calls)
    for (auto& slot : call.slots)
      if (stated[i++] != slot.place.first_call)
        return Error{name,
                     "call " + std::to_string(call.number) + " slot " + std::to_string(slot.slot) +
                         ": bo.first_call is " + std::to_string(stated[i - 1]) + " but BO " +
                         slot.place.label() + " is first used at call " +
                         std::to_string(slot.place.first_call),
                     Exit::bad_input};
  return std::move(st.t);
}

Result<Trace> read_trace(const std::string& path, const TraceLimits& limits) {
  if (path == "-") return read_trace(std::cin, "<stdin>", limits);
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0)
    return Error{path, std::string("cannot read the trace: ") + std::strerror(errno),
                 Exit::bad_input};
  if (!S_ISREG(sb.st_mode))
    return Error{path,
                 std::string("is ") + file_kind(sb.st_mode) +
                     ", not a regular file; expected a trace file (JSON Lines) or - for stdin",
                 Exit::bad_input};
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Error{path, std::string("cannot open the trace: ") + std::strerror(errno),
                 Exit::bad_input};
  return read_trace(f, path, limits);
}

}  // namespace bod
