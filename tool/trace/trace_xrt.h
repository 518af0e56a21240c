// What a recording at the XRT API boundary adds to a trace (capability "xrt"): engines that
// manage their BOs by hand (xrt::bo / pyxrt: write, map, sync, read; xrt::run: start, wait).
// Every kernel run is a call; each of its arguments a slot with the BO it was bound to and what
// the host did to that BO's bytes around the run: changed, synced either way, read. Byte ranges
// are [offset, length) in the BO. docs/trace-format.md, "Hand-managed runs".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace bod {

struct ByteRange {
  uint64_t off = 0, len = 0;
  uint64_t end() const { return off + len; }
};
using ByteRanges = std::vector<ByteRange>;  // sorted, disjoint, non-empty ranges

// Union, difference and intersection of sorted disjoint range lists.
ByteRanges range_union(const ByteRanges& a, const ByteRanges& b);
ByteRanges range_minus(const ByteRanges& a, const ByteRanges& b);
ByteRanges range_intersect(const ByteRanges& a, const ByteRanges& b);
uint64_t range_bytes(const ByteRanges& a);
std::string range_text(const ByteRanges& a);  // "bytes 16..32, 40..48" (end exclusive)

// One host operation on a BO: "write" (bo.write), "store" (bytes changed through map()),
// "sync_to", "sync_from", "read".
struct HostOp {
  std::string op;
  ByteRange range;
  std::string at;  // source location when the recorder knows it (file:line), else ""
};

struct XrtSlot {
  bool is_bo = false;     // a BO argument; otherwise a scalar (value)
  long long bo = 0;       // the BO's id (1, 2, ... in order of creation)
  uint64_t bo_bytes = 0;  // its size
  long long group = -1;   // its memory group (-1: unknown)
  uint64_t value = 0;     // a scalar argument's value (its first 8 bytes)
  ByteRanges changed;     // bytes the host changed since the BO's previous run
  // Of those, bytes known to hold new values: stores through map() (compared byte by byte) and
  // bo.write ranges, except a write of the same bytes the same range last received.
  ByteRanges new_values;
  ByteRanges synced_to;  // ranges synced to the device since then
  ByteRanges unsynced;   // at start: host bytes changed after their last sync to the device
  HostOp unsynced_by;    // the last host change inside them
  std::vector<HostOp> in_flight;  // host operations while the run was started, not waited for
  ByteRanges synced_from;     // after the run: ranges synced from the device (until its next run)
  ByteRanges device_changed;  // of those, bytes that came back other than the host had them
  ByteRanges read;            // after the run: ranges the host read (bo.read, a view of map())
  ByteRanges unsynced_read;   // of those, bytes no sync from the device covered after the run
  HostOp read_by;             // the first read of unsynced bytes
  // After the run: bytes read back (covered by a sync from the device) whose values after the
  // BO's previous run are known: the same range was read back then (covered too), and nothing
  // was changed on the host or synced to the device there in between. Recordings with read
  // hashes only (read events carrying "h").
  ByteRanges out_compared;
  ByteRanges out_changed;  // of those, ranges read back with other bytes than the last time
};

struct XrtRun {
  long long run = 0;  // the recorder's run number
  std::string state;  // after wait: "completed", "timeout", "error", "abort", ...; "" never waited
  std::string at;     // where the run was started (file:line), when known
};

}  // namespace bod
