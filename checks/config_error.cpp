// config-error: the declared reuse settings of a call contradict each other or the kernel.
#include <unordered_set>
#include <vector>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "config-error",
    Severity::error,
    "the declared plan is inconsistent (an index out of range, a slot both static and "
    "intermediate, an output slot declared static, a duplicate index), or the real engine "
    "raises on it (a shared_alias on a static slot, out of range, or unnamed)",
    "the engine indexes the wrong BO or skips a write it needed",
    "lint reads every call's static_input_indices, intermediate_indices and output_indices "
    "against the kernel's slot list",
    "make every index name a real slot once; a slot is static, intermediate or a plain input, "
    "never two of them; outputs are never static; a shared_alias names an existing, non-static "
    "slot and a non-empty pool",
    0,
    0,
    true,
    "the real engine raises on this call, or the declared index lists contradict each other"};

void emit(FindingSink& sink, const TraceCall& c, int slot, const std::string& path,
          const std::string& msg) {
  Finding f = make_finding(kInfo, c, slot, 0);
  f.path = path;
  f.message = msg;
  sink.add(std::move(f));
}

// The JSON pointer of entry `i` of a call's index list (model.json calls); a recorded call's
// source location otherwise.
std::string entry_path(const TraceCall& c, const char* list, size_t i) {
  if (c.path.empty() || c.path[0] != '/') return c.path;
  return c.path + "/" + list + "/" + std::to_string(i);
}

// The JSON pointer of a call's member (model.json calls); a recorded call's "file:line" as it
// is, so editors and terminals can open it.
std::string member_path(const TraceCall& c, const char* member) {
  if (c.path.empty() || c.path[0] != '/') return c.path;
  return c.path + "/" + member;
}

void check_list(FindingSink& sink, const TraceCall& c, const std::vector<int>& refs,
                const char* list) {
  int n = static_cast<int>(c.slots.size());
  std::vector<char> seen(c.slots.size(), 0);  // runs on every call: no set, no strings
  for (size_t i = 0; i < refs.size(); ++i) {
    int r = refs[i];
    if (r < 0 || r >= n) {
      emit(sink, c, -1, entry_path(c, list, i),
           std::string(list) + " index " + std::to_string(r) + " is out of range; " + c.kernel +
               " has slots 0.." + std::to_string(n - 1));
    } else if (seen[static_cast<size_t>(r)]++) {
      emit(sink, c, r, entry_path(c, list, i),
           std::string(list) + " lists slot " + std::to_string(r) + " twice");
    }
  }
}

// Declarations that contradict each other or the kernel. bo-doctor does not run a plan
// with these (what the engine would do with them is not modelled).
void inconsistencies(const TraceCall& c, FindingSink& sink) {
  check_list(sink, c, c.statics, "static_input_indices");
  check_list(sink, c, c.inters, "intermediate_indices");
  // A default output list (the last slot) is always valid.
  check_list(sink, c, c.outputs, "output_indices");
  // Each static index against the other two lists: a scan of short lists (the usual call; no
  // allocation), sets when the product is large (300k + 300k indices took > 16 s scanned).
  const bool scan = c.statics.size() * (c.inters.size() + c.outputs.size()) <= 4096;
  std::unordered_set<int> inter, output;
  if (!scan) {
    inter.insert(c.inters.begin(), c.inters.end());
    output.insert(c.outputs.begin(), c.outputs.end());
  }
  auto is_inter = [&](int s) { return scan ? c.is_inter(s) : inter.count(s) != 0; };
  auto is_output = [&](int s) { return scan ? c.is_output(s) : output.count(s) != 0; };
  for (size_t i = 0; i < c.statics.size(); ++i) {
    int s = c.statics[i];
    auto path = [&] { return entry_path(c, "static_input_indices", i); };
    if (is_inter(s)) emit(sink, c, s, path(), "slot is both static and intermediate");
    if (is_output(s)) emit(sink, c, s, path(), "output slot is declared static");
  }
}

// What the real engine raises before touching a BO (R581-601): the call fails there and the
// run goes on, as it would in the engine's caller.
void engine_raises(const TraceCall& c, FindingSink& sink) {
  int n = static_cast<int>(c.slots.size());
  for (auto& [slot, pool] : c.alias) {
    if (slot < 0 || slot >= n)
      emit(sink, c, -1, member_path(c, "shared_alias"),
           "shared_alias slot " + std::to_string(slot) + " is out of range; " + c.kernel +
               " has slots 0.." + std::to_string(n - 1) +
               "; the real engine raises ValueError here");
    else if (c.is_static(slot))
      emit(sink, c, slot, member_path(c, "shared_alias"),
           "static slot " + c.slots[static_cast<size_t>(slot)].name + " is aliased to pool '" +
               pool +
               "'; the real engine raises ValueError here (an alias would share one "
               "layer's weights across every bo_key)");
    else if (pool.empty())
      emit(sink, c, slot, member_path(c, "shared_alias"),
           "shared_alias pool name of slot " + std::to_string(slot) +
               " is empty; the real engine raises ValueError here");
  }
}

}  // namespace

bool has_inconsistent_declarations(const Trace& t) {
  FindingSink sink;
  for (auto& c : t.calls) inconsistencies(c, sink);
  return !sink.sorted().empty();
}

void run_config_error(const Trace& t, FindingSink& sink) {
  for (auto& c : t.calls) {
    inconsistencies(c, sink);
    engine_raises(c, sink);
  }
}

const CheckInfo& config_error_info() {
  return kInfo;
}

}  // namespace bod
