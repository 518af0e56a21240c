// The run as plain data. A Trace is what bo-doctor's own replay of a model (the runner) and a
// recorder inside a real engine both produce, and the only thing the checks, classify, the
// per-key table and the end-to-end verdict read. It holds facts (sizes, hashes, what was
// written, divergence metrics), never buffers, so a real-size run stays small; it is written
// and read as JSON Lines (trace_io.h, docs/trace-format.md).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/placement.h"
#include "trace/trace_xrt.h"

namespace bod {

inline constexpr int kTraceVersion = 1;

// What a trace carries beyond the calls' identities. Checks state which they need
// (checks/check.h); `analyze` reports the checks a trace could not feed.
struct Capabilities {
  bool run = false;         // the reuse engine ran: placements, writes, BO hashes
  bool no_reuse = false;    // each call also ran on the no-reuse engine: hashes, output metrics
  bool byte_diffs = false;  // reuse vs no-reuse byte counts of slots that differ after dispatch
  bool access = false;      // per slot: does the kernel read it before writing, overwrite it
  bool probe = false;       // canary probes of (some) slots
  bool verify = false;      // end-to-end comparison of the two dataflows
  bool xrt = false;         // recorded at the XRT boundary: per slot the host's BO operations
};

struct KernelSlotInfo {
  std::string name;
  DType dtype = DType::f32;
};

struct KernelInfo {
  std::string name;
  std::vector<KernelSlotInfo> slots;
  std::string binary;  // NPU binary path ("" when none: a host-emulated reference body)
};

// Tolerances of one end-to-end output (model.json "verify").
struct VerifySpec {
  std::string var;
  double min_cosine = 0.99, atol = -1, rtol = -1;  // < 0: not checked
};

struct TraceHeader {
  int version = kTraceVersion;
  std::string producer;  // "bo-doctor 0.1.0 check", "bo-doctor record", ...
  std::string model_name;
  std::string model_path;  // file the call paths point into (findings print it)
  std::string backend;     // "cpu", "xrt", "npu"
  bool host_emulated = true;
  bool npu_launched = false;
  Capabilities caps;
  std::vector<KernelInfo> kernels;
  std::vector<VerifySpec> verify;
  int top_k = 5;
  // Host bindings' names identify the data bound (a model's tensor and var names). A recorder
  // makes names up (argument index, layer label): they then say nothing a check may rely on.
  bool named_bindings = true;
};

enum class SlotRole { input, static_input, intermediate };
const char* slot_role_name(SlotRole r);  // "input" | "static" | "intermediate"

// Where a call's host array came from.
enum class ArraySource {
  tensor,       // a model tensor (weights, LUTs): immutable
  var,          // a host variable the program writes
  view,         // a zero-copy view into the BO an earlier call returned
  zeros,        // no binding: zero bytes
  placeholder,  // a stand-in for freed host weights (the reuse engine gets zeros)
};
const char* array_source_name(ArraySource s);

struct HostArray {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  size_t bytes = 0;
  uint64_t hash = 0;  // XXH3-64 of the bytes the reuse engine was given
  ArraySource source = ArraySource::zeros;
  std::string name;      // binding as written: "wq[2]", "x", "zeros"
  int view_of_call = 0;  // source == view: the call whose BO it points into
};

// The kernel's access to one slot (from the reference body's analysis).
struct BodyAccess {
  bool reads_before_write = false;  // some op reads it before it is fully written
  bool overwritten = false;         // fully written before any read
  bool written = false;             // written at all
  // Every byte it writes is written before it is read in the same call: what one call leaves
  // there is never read by a later one (a harmless clobber of a static slot).
  bool rewritten_before_read = false;
};

struct ProbeResult {
  bool probed = false;
  bool read = false;           // a canary in this slot changed the outputs
  size_t unwritten_bytes = 0;  // bytes that kept the canary through dispatch
};

// A slot's XRT facts (capability xrt), held only once something sets them: inline, their 392
// bytes were more than half of every slot of every trace (a 10^5-call trace of 6 slots held
// 224 MiB of empty ranges). Reads of a slot without them see an empty XrtSlot.
class XrtSlotBox {
 public:
  XrtSlotBox() = default;
  XrtSlotBox(const XrtSlotBox& o) : p_(o.p_ ? std::make_unique<XrtSlot>(*o.p_) : nullptr) {}
  XrtSlotBox(XrtSlotBox&&) noexcept = default;
  XrtSlotBox& operator=(const XrtSlotBox& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<XrtSlot>(*o.p_) : nullptr;
    return *this;
  }
  XrtSlotBox& operator=(XrtSlotBox&&) noexcept = default;
  const XrtSlot& get() const { return p_ ? *p_ : none(); }
  XrtSlot& get() {  // created on first write
    if (!p_) p_ = std::make_unique<XrtSlot>();
    return *p_;
  }
  const XrtSlot* operator->() const { return &get(); }
  XrtSlot* operator->() { return &get(); }
  operator const XrtSlot&() const { return get(); }
  operator XrtSlot&() { return get(); }
  bool held() const { return p_ != nullptr; }

 private:
  static const XrtSlot& none() {
    static const XrtSlot empty;
    return empty;
  }
  std::unique_ptr<XrtSlot> p_;
};

struct TraceSlot {
  int slot = -1;
  std::string name;  // from the kernel table
  SlotRole role = SlotRole::input;
  bool output = false;
  HostArray host;
  Placement place;
  BodyAccess access;  // meaningful with caps.access
  // Reuse engine (caps.run)
  size_t bo_bytes = 0;   // size of the BO (fixed at its first use)
  bool written = false;  // host write + sync happened this call
  size_t written_bytes = 0;
  uint64_t written_hash = 0;               // XXH3-64 of the bytes written
  uint64_t reuse_pre = 0, reuse_post = 0;  // BO bytes before / after dispatch
  // No-reuse engine (caps.no_reuse): fresh BOs, every slot written
  uint64_t noreuse_pre = 0, noreuse_post = 0;
  // caps.byte_diffs: bytes that differ after dispatch, and how many of them still hold the
  // reuse BO's pre-dispatch bytes (never written by the kernel). 0 when the hashes agree.
  size_t diff_bytes = 0, stale_diff_bytes = 0;
  ProbeResult probe;  // caps.probe
  XrtSlotBox xrt;     // caps.xrt (trace_xrt.h)
};

// One output slot compared between the engines (caps.no_reuse).
struct OutputMetrics {
  int slot = -1;
  bool bit_exact = true;
  double cosine = 1, max_abs = 0, max_rel = 0;
  long long nan_reuse = 0, inf_reuse = 0, nan_noreuse = 0, inf_noreuse = 0;
  long long elements = 0;
};

struct TraceCall {
  // Identity (always present)
  int number = 0;  // 1-based, in execution order
  std::string ns;  // cache instance
  std::string kernel;
  std::string bo_key, bo_key_template;
  std::vector<int> statics, inters, outputs;  // as the call declared them
  bool shared_nonstatic = false;
  std::map<int, std::string> alias;  // slot -> alias pool name
  std::string phase;                 // labels
  long long token = -1, layer = -1;
  std::string path;  // source location (JSON pointer, or file:line)
  int thread = 0;    // the program thread that made the call: 0 the first to call, 1, 2 ... others
  int process = 0;   // the recorded process that made it: 0 the first to start, 1, 2 ... others
  int key_first_call = 0;  // first call of this bo_key in this namespace
  std::vector<TraceSlot> slots;
  // Run (caps.run)
  bool failed = false;  // the reuse engine raised instead of running the kernel
  std::string error;    // what it raised
  size_t h2d_reuse = 0, h2d_noreuse = 0;
  int writes_reuse = 0, writes_noreuse = 0;
  std::vector<OutputMetrics> outputs_cmp;  // caps.no_reuse
  // caps.no_reuse: 0 when the no-reuse engine ran this call. Otherwise the call was not run
  // there (record --shadow's selection): outputs_cmp is empty, noreuse_post unknown (0), and
  // this is the earlier call of the same kernel, binary, shapes and kind of before-state
  // difference whose no-reuse run gave bit-identical outputs and left every static slot as it
  // was written.
  int shadow_like = 0;
  XrtRun xrt;  // caps.xrt

  bool first_of_key() const { return key_first_call == number; }
  bool shadowed() const { return shadow_like == 0; }  // ran on the no-reuse engine (caps.no_reuse)
  bool is_static(int s) const;
  bool is_inter(int s) const;
  bool is_output(int s) const;
  bool diverged() const;      // an output differs between the engines
  std::string where() const;  // "decode t=3 l=1"
};

// A read of a zero-copy output view whose BO had been overwritten since it was returned.
struct ViewRead {
  std::string var;         // the var read, e.g. "caps[2]"
  std::string reader;      // "call 17 (attn)", "host step ...", "the end-to-end verification"
  int read_call = 0;       // 0 when not a kernel call
  int captured_call = 0;   // the call that returned the view
  int slot = -1;           // its output slot
  int overwritten_by = 0;  // the call that last changed the BO
  bool overwritten_by_host_write = false;  // by that call's host write, not its kernel
};

// One generated token (a host argmax), per engine, with the top-k of its logits row.
struct TokenStep {
  int32_t token = 0;
  std::vector<int32_t> topk;
};

// End-to-end comparison of one output var between the two dataflows (caps.verify).
struct VerifyOutput {
  std::string var;
  double cosine = 1, max_abs = 0, max_rel = 0;
  long long nan_inf_reuse = 0, nan_inf_noreuse = 0;
};

struct EngineFigures {
  size_t h2d_bytes = 0;
  long writes = 0;
  long calls = 0;
  double write_s = 0, dispatch_s = 0, read_s = 0;
  double wall_s() const { return write_s + dispatch_s + read_s; }
  // Steady state, what reuse saves in a running engine: the median engine time (write +
  // dispatch + read) of one call over the calls after their bo_key's first call, and the total
  // of those first calls (BO allocation and first touch of new memory), kept apart.
  double steady_median_s = 0;
  long steady_calls = 0;
  double first_calls_s = 0;
};

// A stretch of a recording that is missing (record): the calls a process made after
// `after_call` are not all in the trace.
enum class GapCause : uint8_t {
  recorder_stopped,  // the recorder failed at the next call and recorded nothing more there
  cut_off,           // the process died while writing a call's line: that call is lost
};
struct RecordingGap {
  int process = 0;     // the recorded process (TraceCall::process)
  int after_call = 0;  // the last call of it in the trace before the gap; 0: none
  GapCause cause = GapCause::recorder_stopped;
  std::string detail;  // what the recorder said ("TypeError: ..."), or ""
};

struct Trace {
  TraceHeader header;
  std::vector<TraceCall> calls;  // calls[i].number == i + 1
  std::vector<ViewRead> view_reads;
  std::vector<RecordingGap> gaps;  // a recording's missing stretches ("gap" lines)
  std::vector<TokenStep> tokens_reuse, tokens_noreuse;
  std::vector<VerifyOutput> verify;
  int noreuse_extra_calls = 0;  // calls the no-reuse dataflow ran alone after the split
  EngineFigures reuse, noreuse;
  bool timings = false;  // figures carry measured times
  double wall_s = 0;
  bool finished =
      true;  // the run reached its end ("end" line): false when the program stopped early

  const KernelInfo* kernel(const std::string& name) const;
  // The call with this number, or null.
  const TraceCall* call(int number) const;
};

// What the reuse engine's BO held before a call's host writes: the last write into the same
// placement (binding, call, hash of the bytes written). Derived from the trace, per call and
// slot, so every consumer agrees on it.
struct Resident {
  std::string_view binding;  // into the Trace's strings: valid while the Trace is
  int call = 0;
  uint64_t hash = 0;
};
std::vector<std::vector<Resident>> residents(const Trace& t);
// Resident::binding points into the trace: a temporary would leave it dangling.
std::vector<std::vector<Resident>> residents(const Trace&& t) = delete;

// Gives every slot's placement its BO number (Placement::bo, by identity in order of first
// use) and first call, for traces whose producer did not (a trace file's reader calls it).
void number_bos(Trace& t);

// True when another slot of the call lands in the same BO.
bool shares_bo(const TraceCall& c, int slot);
// shares_bo of every slot (by slot index), in one pass: for loops over a call's slots.
std::vector<char> slots_sharing_a_bo(const TraceCall& c);

}  // namespace bod
