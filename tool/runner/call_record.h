// What the shadow runner observed for one kernel call, in both engines: per slot the host
// array, the reuse engine's write decision, BO hashes before/after dispatch, and per output
// the divergence metrics. Checks read only this (and the plan), so a recorded trace from a
// real engine can feed them too.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/plan.h"

namespace bod {

enum class SlotRole { input, static_input, intermediate };

struct SlotRecord {
  int slot = -1;
  std::string name;
  SlotRole role = SlotRole::input;
  bool output = false;
  size_t bytes = 0;            // this call's array size
  BoundArray binding;
  bool placeholder = false;    // the reuse engine was handed a placeholder
  uint64_t host_hash = 0;      // hash of the array the reuse engine was given
  // Reuse engine
  std::string bo_id;           // "key:rms_L0/3", "pool:attn/2/4096", "alias:x"
  size_t bo_bytes = 0;         // size of the BO (fixed at its first use)
  bool written = false;        // host write + sync happened this call
  size_t written_bytes = 0;
  std::string resident;        // binding whose data the BO held before this call's write
  int resident_call = 0;       // call that wrote it
  uint64_t resident_hash = 0;  // hash of the host bytes written then
  bool size_mismatch = false;
  std::string size_note;
  uint64_t reuse_pre = 0, reuse_post = 0;
  // Shadow engine (fresh BOs, every slot written)
  uint64_t shadow_pre = 0, shadow_post = 0;
  // Filled when reuse_post != shadow_post: differing bytes, and how many of them still hold
  // the reuse BO's pre-dispatch bytes (never written by the kernel).
  size_t diff_bytes = 0, stale_diff_bytes = 0;
  bool shared_with_other_slot = false;  // another slot of this call uses the same BO
  // From the reference body: the kernel overwrites the whole slot before any read of it.
  bool kernel_overwrites = false;
  bool kernel_reads_first = false;  // the reference body reads it before fully writing it
  // Probing (check --probe): canary runs of this slot in a no-reuse engine.
  bool probed = false, probe_read = false;
  size_t probe_unwritten_bytes = 0;
};

struct OutputMetrics {
  int slot = -1;
  bool bit_exact = true;
  double cosine = 1, max_abs = 0, max_rel = 0;
  long long nan_reuse = 0, inf_reuse = 0, nan_shadow = 0, inf_shadow = 0;
  long long elements = 0;
};

struct CallRecord {
  const PlanCall* call = nullptr;
  bool first_of_key = false;
  int key_first_call = 0;
  bool failed = false;          // the reuse engine could not run the call (size-mismatch)
  std::string fail_reason;
  bool host_emulated = true;
  std::vector<SlotRecord> slots;
  std::vector<OutputMetrics> outputs;
  size_t h2d_reuse = 0, h2d_shadow = 0;  // host->device bytes this call
  int writes_reuse = 0, writes_shadow = 0;
  bool diverged() const;
};

// A read of a zero-copy output view whose BO was overwritten after it was returned.
struct ViewEvent {
  std::string var;          // the var read, e.g. "caps[2]"
  std::string reader;       // "call 17 (attn)", "host step /program/...", "verification"
  int read_call = 0;
  int captured_call = 0;    // call that returned the view
  std::string kernel, bo_key, slot_name, phase, path;
  int slot = -1;
  long long token = -1, layer = -1;
  std::string overwritten_by;  // what last overwrote the BO
};

}  // namespace bod
