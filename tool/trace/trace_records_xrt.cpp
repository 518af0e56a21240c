// The record tables of a recording at the XRT boundary (capability "xrt", trace_xrt.h): per
// slot what the host did to its BO around the run, per call the run's number and state.
#include "trace/trace_codecs.h"
#include "trace/trace_records.h"

namespace bod::trace_json {

using namespace codec;

namespace {

// Byte ranges as [[offset, length], ...]: sorted, disjoint, each at least one byte.
struct Ranges {
  using T = ByteRanges;
  static constexpr const char* want = "an array";
  static ojson put(const T& v, const WriteCtx&) {
    ojson a = ojson::array();
    for (auto& r : v) a.push_back(ojson::array({r.off, r.len}));
    return a;
  }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) {
    BOD_CHECK(array_v(c, v));
    T out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      auto at = c.in(i);
      BOD_CHECK(array_v(c, v[i], 2));
      ByteRange r;
      {
        auto o = c.in(size_t(0));
        BOD_TRY(long long off, int_v(c, v[i][0], 0, LLONG_MAX));
        r.off = static_cast<uint64_t>(off);
      }
      auto l = c.in(size_t(1));
      BOD_TRY(long long len, int_v(c, v[i][1], 1, LLONG_MAX - static_cast<long long>(r.off)));
      r.len = static_cast<uint64_t>(len);
      if (!out.empty() && r.off < out.back().end())
        return c.err("ranges must be sorted and disjoint: this one starts at " +
                     std::to_string(r.off) + ", before the previous one ends (" +
                     std::to_string(out.back().end()) + ")");
      out.push_back(r);
    }
    return out;
  }
  static ojson schema() {
    return {{"type", "array"},
            {"items",
             {{"type", "array"},
              {"prefixItems", {ref("count"), {{"type", "integer"}, {"minimum", 1}}}},
              {"items", false},
              {"minItems", 2},
              {"maxItems", 2}}},
            {"description", "[offset, length] byte ranges, sorted and disjoint"}};
  }
};

struct Off {
  using T = uint64_t;
  static constexpr const char* want = "an integer >= 0";
  static ojson put(T v, const WriteCtx&) { return v; }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx&) {
    BOD_TRY(long long x, int_v(c, v, 0, LLONG_MAX));
    return static_cast<uint64_t>(x);
  }
  static ojson schema() { return ref("count"); }
};

struct HostOpList {
  using T = std::vector<HostOp>;
  static constexpr const char* want = "an array";
  static ojson put(const T& v, const WriteCtx& w) {
    ojson a = ojson::array();
    for (auto& e : v) a.push_back(write_record(host_op_record(), e, w));
    return a;
  }
  static Result<T> get(Cursor& c, const rjson& v, ReadCtx& st) {
    BOD_CHECK(array_v(c, v));
    T out;
    for (size_t i = 0; i < v.size(); ++i) {
      auto at = c.in(i);
      BOD_CHECK(object_v(c, v[i], "an object"));
      HostOp e;
      BOD_CHECK(read_record(c, v[i], host_op_record(), e, st));
      out.push_back(std::move(e));
    }
    return out;
  }
  static ojson schema() { return {{"type", "array"}, {"items", ref("host_op")}}; }
};

Status get_op(Cursor& c, const rjson& v, HostOp& h, ReadCtx&) {
  BOD_TRY(h.op, str_v(c, v));
  for (const char* ok : {"write", "store", "sync_to", "sync_from", "read"})
    if (h.op == ok) return ok_status();
  return c.err(expected("one of write, store, sync_to, sync_from, read", v));
}

bool is_bo(const XrtSlot& s) {
  return s.is_bo;
}
bool is_scalar(const XrtSlot& s) {
  return !s.is_bo;
}
bool has_unsynced(const XrtSlot& s) {
  return !s.unsynced.empty();
}
bool has_new_values(const XrtSlot& s) {
  return !s.new_values.empty();
}
bool has_compared(const XrtSlot& s) {
  return !s.out_compared.empty();
}
bool has_unsynced_read(const XrtSlot& s) {
  return !s.unsynced_read.empty();
}

}  // namespace

const Record<HostOp>& host_op_record() {
  using R = HostOp;
  static const auto r = Record<R>{
      "host_op",
      false,
      "an object",
      "one host operation on a BO",
      {
          {"op", Gate::none, Presence::required, "a string",
           "write (bo.write), store (bytes changed through map()), sync_to, sync_from, read",
           &put_member<R, Str, &R::op>, get_op,
           [] {
             return ojson{{"enum", {"write", "store", "sync_to", "sync_from", "read"}}};
           }},
          {"offset", Gate::none, Presence::required, "an integer >= 0", "first byte",
           [](const R& h, const WriteCtx&, ojson& v) { v = h.range.off; },
           [](Cursor& c, const rjson& v, R& h, ReadCtx& st) -> Status {
             BOD_TRY(h.range.off, Off::get(c, v, st));
             return ok_status();
           },
           &Off::schema},
          {"bytes", Gate::none, Presence::required, "an integer >= 0", "how many bytes",
           [](const R& h, const WriteCtx&, ojson& v) { v = h.range.len; },
           [](Cursor& c, const rjson& v, R& h, ReadCtx& st) -> Status {
             BOD_TRY(h.range.len, Off::get(c, v, st));
             return ok_status();
           },
           &Off::schema},
          f<R, &R::at, Str>("at", "source location (file:line); empty when unknown"),
      }}.keyed();
  return r;
}

const Record<XrtSlot>& xrt_slot_record() {
  using R = XrtSlot;
  static const auto r = Record<R>{
      "xrt_slot",
      false,
      "an object",
      "capability xrt: the slot's argument and what the host did to its BO around the run",
      {
          f<R, &R::is_bo, Bool>("is_bo", "a BO argument; false: a scalar"),
          f<R, &R::value, Off>("value", "a scalar's value (its first 8 bytes); written for scalars",
                               Gate::none, Presence::optional, is_scalar),
          f<R, &R::bo, Int<0>>("bo", "the BO's id, in order of creation; written for BOs",
                               Gate::none, Presence::optional, is_bo),
          f<R, &R::bo_bytes, Off>("bo_bytes", "the BO's size", Gate::none, Presence::optional,
                                  is_bo),
          f<R, &R::group, Int<-1>>("group", "its memory group; -1 when unknown", Gate::none,
                                   Presence::optional, is_bo),
          f<R, &R::changed, Ranges>("changed", "bytes the host changed since the BO's previous run",
                                    Gate::none, Presence::optional, is_bo),
          f<R, &R::new_values, Ranges>(
              "new_values",
              "of changed, bytes known to hold new values: stores through map() (compared byte "
              "by byte) and bo.write ranges other than a write of the bytes the same range last "
              "received",
              Gate::none, Presence::optional, has_new_values),
          f<R, &R::synced_to, Ranges>("synced_to", "ranges synced to the device since then",
                                      Gate::none, Presence::optional, is_bo),
          f<R, &R::unsynced, Ranges>(
              "unsynced", "at start: host bytes changed after their last sync to the device",
              Gate::none, Presence::optional, has_unsynced),
          obj<R, &R::unsynced_by, HostOp, host_op_record>(
              "unsynced_by", "the last host change inside them", Gate::none, Presence::optional,
              has_unsynced),
          f<R, &R::in_flight, HostOpList>(
              "in_flight", "host operations while the run was started and not waited for",
              Gate::none, Presence::optional, is_bo),
          f<R, &R::synced_from, Ranges>(
              "synced_from",
              "after the run, until the BO's next run: ranges synced from the device", Gate::none,
              Presence::optional, is_bo),
          f<R, &R::device_changed, Ranges>(
              "device_changed", "of those, bytes that came back other than the host had them",
              Gate::none, Presence::optional, is_bo),
          f<R, &R::read, Ranges>("read", "after the run: ranges the host read", Gate::none,
                                 Presence::optional, is_bo),
          f<R, &R::unsynced_read, Ranges>(
              "unsynced_read", "of those, bytes no sync from the device covered after the run",
              Gate::none, Presence::optional, has_unsynced_read),
          obj<R, &R::read_by, HostOp, host_op_record>("read_by", "the first such read", Gate::none,
                                                      Presence::optional, has_unsynced_read),
          f<R, &R::out_compared, Ranges>(
              "out_compared",
              "after the run: bytes read back (covered by a sync from the device) whose values "
              "after the BO's previous run are known: the same range was read back then, and "
              "nothing was changed on the host or synced to the device there in between",
              Gate::none, Presence::optional, has_compared),
          f<R, &R::out_changed, Ranges>(
              "out_changed", "of those, ranges read back with other bytes than the last time",
              Gate::none, Presence::optional, has_compared),
      }}.keyed();
  return r;
}

const Record<XrtRun>& xrt_run_record() {
  using R = XrtRun;
  static const auto r = Record<R>{
      "xrt_run",
      false,
      "an object",
      "capability xrt: the kernel run",
      {
          f<R, &R::run, Int<0>>("run", "the recorder's run number"),
          f<R, &R::state, Str>("state",
                               "after wait: completed, timeout, error, abort, ...; empty when the "
                               "program never waited for it"),
          f<R, &R::at, Str>("at", "where it was started (file:line); empty when unknown"),
      }}.keyed();
  return r;
}

}  // namespace bod::trace_json
