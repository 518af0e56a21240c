// The codecs and row builders of the record tables (trace_records.cpp only). A codec reads,
// writes and describes one JSON value: T, want (for "missing required field"), put, get and
// schema; a row builder turns a member pointer and a codec into a Field.
#pragma once
#include <climits>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "core/hash.h"
#include "trace/trace_records.h"

namespace bod::trace_json::codec {

inline ojson ref(const char* def) {
  return {{"$ref", std::string("#/$defs/") + def}};
}

// ---------------------------------------------------------------------------------------------
// Codecs

struct Str {
  using T = std::string;
  static constexpr const char* want = "a string";
  static ojson put(const T& v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return str_v(c, v); }
  static ojson schema() { return {{"type", "string"}}; }
};

struct Bool {
  using T = bool;
  static constexpr const char* want = "true or false";
  static ojson put(T v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return bool_v(c, v); }
  static ojson schema() { return {{"type", "boolean"}}; }
};

// An integer in [Lo, Hi].
template <long long Lo, long long Hi = LLONG_MAX>
struct Int {
  using T = long long;
  static constexpr const char* want = "an integer";
  static ojson put(T v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return int_v(c, v, Lo, Hi); }
  static ojson schema() {
    if (Lo == INT_MIN && Hi == INT_MAX) return ref("int32");
    if (Lo == 0 && Hi == LLONG_MAX) return ref("count");
    ojson s = {{"type", "integer"}, {"minimum", Lo}};
    if (Hi != LLONG_MAX) s["maximum"] = Hi;
    return s;
  }
};
using I32 = Int<INT_MIN, INT_MAX>;

// A byte count or size: an integer >= 0.
struct Count : Int<0> {
  static constexpr const char* want = "an integer >= 0";
  static constexpr const char* pair_def = "counts";
};
// A count of one engine's BO writes in a call.
struct Count32 : Int<0, INT_MAX> {
  static constexpr const char* pair_def = "counts";
};

// Non-finite doubles have no JSON number, so they are written as strings.
struct Num {
  using T = double;
  static constexpr const char* want = "a number";
  static ojson put(T d, const WriteCtx&) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    return d;
  }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return num_v(c, v); }
  static ojson schema() { return ref("num"); }
};

// Seconds: present only in traces with measured times; reading one says the trace has them.
struct Seconds : Num {
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx& st) {
    st.t.timings = true;
    return num_v(c, v);
  }
};

// u64 hashes do not fit a double (JavaScript, jq), so they are 16 hex digits.
struct Hash {
  using T = uint64_t;
  static constexpr const char* want = "16 hex digits";
  static ojson put(T h, const WriteCtx&) { return hash_hex(h); }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return hash_v(c, v); }
  static ojson schema() { return ref("hash"); }
  static constexpr const char* pair_def = "hashes";
};

// One of the names of an enum: N::names, N::def (its $defs name, or null to list them inline).
template <class N>
struct Enum {
  using T = typename N::E;
  static constexpr const char* want = "a string";
  static ojson put(T e, const WriteCtx&) {
    for (auto& [n, v] : N::names)
      if (v == e) return n;
    return "";
  }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) { return enum_v(c, v, N::names); }
  static ojson list() {
    ojson l = ojson::array();
    for (auto& [n, v] : N::names) l.push_back(n);
    return {{"enum", l}};
  }
  static ojson schema() { return N::def ? ref(N::def) : list(); }
};
struct DTypes {
  using E = DType;
  static constexpr Names<E> names[] = {
      {"bf16", DType::bf16}, {"f32", DType::f32}, {"i32", DType::i32}, {"i8", DType::i8}};
  static constexpr const char* def = "dtype";
};
struct Roles {
  using E = SlotRole;
  static constexpr Names<E> names[] = {{"input", SlotRole::input},
                                       {"static", SlotRole::static_input},
                                       {"intermediate", SlotRole::intermediate}};
  static constexpr const char* def = nullptr;
};
struct Sources {
  using E = ArraySource;
  static constexpr Names<E> names[] = {{"tensor", ArraySource::tensor},
                                       {"var", ArraySource::var},
                                       {"view", ArraySource::view},
                                       {"zeros", ArraySource::zeros},
                                       {"placeholder", ArraySource::placeholder}};
  static constexpr const char* def = nullptr;
};
struct Pools {
  using E = BoPool;
  static constexpr Names<E> names[] = {{"key", BoPool::key},
                                       {"shared", BoPool::shared},
                                       {"alias", BoPool::alias},
                                       {"unbound", BoPool::unbound}};
  static constexpr const char* def = nullptr;
};
struct GapCauses {
  using E = GapCause;
  static constexpr Names<E> names[] = {{"recorder_stopped", GapCause::recorder_stopped},
                                       {"cut_off", GapCause::cut_off}};
  static constexpr const char* def = nullptr;
};
struct Engines {
  using E = TraceEngine;
  static constexpr Names<E> names[] = {{"reuse", TraceEngine::reuse},
                                       {"no_reuse", TraceEngine::no_reuse}};
  static constexpr const char* def = "engine";
};

// An array of integers, each in [Lo, Hi].
template <class V, long long Lo, long long Hi>
struct Ints {
  using T = std::vector<V>;
  static constexpr const char* want = "an array";
  static ojson put(const T& v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) {
    BOD_CHECK(array_v(c, v));
    T r;
    r.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      auto at = c.in(i);
      BOD_TRY(long long x, int_v(c, v[i], Lo, Hi));
      r.push_back(static_cast<V>(x));
    }
    return r;
  }
  static ojson schema() { return {{"type", "array"}, {"items", Int<Lo, Hi>::schema()}}; }
};

// A call number from Lo to the highest one this line may name (the calls read so far, or this
// call itself on a call line).
template <long long Lo>
struct CallRef {
  using T = int;
  static constexpr const char* want = "a call number";
  static ojson put(T v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx& st) {
    const long long hi = st.ref_hi;
    if (Lo <= hi)
      if (auto x = int_v(c, v, Lo, hi)) return static_cast<int>(*x);
    std::string want = hi < Lo ? "a call number, but no call precedes this line"
                               : "a call number from " + std::to_string(Lo) + " to " +
                                     std::to_string(hi) + " (the calls read so far)";
    return c.err(expected(want, v));
  }
  static ojson schema() { return ref("call_ref"); }
};

// ---------------------------------------------------------------------------------------------
// Row builders

template <class R, class C, auto M>
void put_member(const R& r, const WriteCtx& w, ojson& v) {
  v = C::put(r.*M, w);
}
template <class R, class C, auto M>
Status get_member(Cursor& c, const rjson& v, R& r, ReadCtx& st) {
  BOD_TRY(auto x, C::get(c, v, st));
  r.*M = static_cast<std::remove_reference_t<decltype(r.*M)>>(std::move(x));
  return ok_status();
}

// A member written and read by codec C; written only when `present` says so (if given).
template <class R, auto M, class C>
Field<R> f(const char* key, const char* doc, Gate g = Gate::none, Presence p = Presence::required,
           bool (*present)(const R&) = nullptr) {
  return {key, g, p, C::want, doc, &put_member<R, C, M>, &get_member<R, C, M>, &C::schema, present};
}

// Two members as one [a, b] array of codec C (its pair_def names the array's schema); with
// Engines, [reuse, no-reuse] where the second is 0 when the no-reuse engine did not run.
template <class R, auto A, auto B, class C, bool Engines = false>
Field<R> f2(const char* key, const char* doc, Gate g = Gate::none) {
  auto put = [](const R& r, const WriteCtx& w, ojson& v) {
    bool zero = Engines && !w.caps.no_reuse;
    v = ojson::array({C::put(r.*A, w), zero ? C::put(0, w) : C::put(r.*B, w)});
  };
  auto get = [](Cursor& c, const rjson& v, R& r, ReadCtx& st) -> Status {
    BOD_CHECK(array_v(c, v, 2));
    {
      auto at = c.in(size_t(0));
      BOD_CHECK((get_member<R, C, A>(c, v[0], r, st)));
    }
    auto at = c.in(size_t(1));
    BOD_CHECK((get_member<R, C, B>(c, v[1], r, st)));
    if (Engines && !st.t.header.caps.no_reuse && r.*B != 0)
      return c.err(
          expected("0 (the no-reuse engine did not run: no capability \"no_reuse\")", v[1]));
    return ok_status();
  };
  return {key, g, Presence::required, "an array", doc, put, get, [] { return ref(C::pair_def); }};
}

// The part of R a nested object describes: the member M, or R itself when M is nullptr (an
// object that groups some of R's members, such as "labels").
template <auto M, class R>
auto& part_of(R& r) {
  if constexpr (std::is_same_v<decltype(M), std::nullptr_t>)
    return r;
  else
    return r.*M;
}

// A nested object of the record table Rec.
template <class R, auto M, class S, const Record<S>& (*Rec)()>
Field<R> obj(const char* key, const char* doc, Gate g = Gate::none, Presence p = Presence::required,
             bool (*present)(const R&) = nullptr) {
  auto put = [](const R& r, const WriteCtx& w, ojson& v) {
    v = write_record(Rec(), static_cast<const S&>(part_of<M>(r)), w);
  };
  auto get = [](Cursor& c, const rjson& v, R& r, ReadCtx& st) -> Status {
    BOD_CHECK(object_v(c, v, "an object"));
    return read_record(c, v, Rec(), static_cast<S&>(part_of<M>(r)), st);
  };
  return {key, g, p, "an object", doc, put, get, [] { return ref(Rec().name); }, present};
}

// A vector member M of records Rec; Pre (if any) checks the array first (its limit).
template <class R, auto M, class S, const Record<S>& (*Rec)(), auto Pre = nullptr>
Field<R> list(const char* key, const char* doc, Gate g = Gate::none) {
  auto put = [](const R& r, const WriteCtx& w, ojson& v) {
    v = ojson::array();
    for (auto& e : r.*M) v.push_back(write_record(Rec(), e, w));
  };
  auto get = [](Cursor& c, const rjson& v, R& r, ReadCtx& st) -> Status {
    BOD_CHECK(array_v(c, v));
    if constexpr (!std::is_same_v<decltype(Pre), std::nullptr_t>) BOD_CHECK(Pre(c, v, r, st));
    (r.*M).reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      auto at = c.in(i);
      BOD_CHECK(object_v(c, v[i], Rec().want));
      S e;
      BOD_CHECK(read_record(c, v[i], Rec(), e, st));
      (r.*M).push_back(std::move(e));
    }
    return ok_status();
  };
  auto schema = [] { return ojson{{"type", "array"}, {"items", ref(Rec().name)}}; };
  return {key, g, Presence::required, "an array", doc, put, get, schema};
}

// "slots" of a kernel or a call: more than TraceLimits::max_slots is refused before reading.
inline Status slot_limit(Cursor& c, const rjson& v, ReadCtx& st, const char* per) {
  if (v.size() <= st.lim.max_slots) return ok_status();
  return c.err(std::to_string(v.size()) + " slots; expected at most " +
               std::to_string(st.lim.max_slots) + " slots per " + per +
               " (the limit TraceLimits::max_slots)");
}

}  // namespace bod::trace_json::codec
