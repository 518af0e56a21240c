#include "analysis/xrt_reuse.h"

#include <map>
#include <string_view>

namespace bod {

std::vector<XrtKernelReuse> xrt_reuse(const Trace& t) {
  std::vector<XrtKernelReuse> out;
  if (!t.header.caps.xrt) return out;
  std::map<std::pair<std::string_view, std::string_view>, size_t> at;
  std::vector<std::vector<int>> resent_same;  // per kernel, per arg: re-sends with no new bytes
  for (auto& c : t.calls) {
    auto [it, fresh] =
        at.emplace(std::make_pair(std::string_view(c.ns), std::string_view(c.kernel)), out.size());
    if (fresh) {
      out.push_back({c.ns, c.kernel, 0, c.number, {}});
      resent_same.emplace_back();
    }
    XrtKernelReuse& k = out[it->second];
    std::vector<int>& same = resent_same[it->second];
    bool first = k.runs == 0;
    k.runs++;
    if (k.args.size() < c.slots.size()) k.args.resize(c.slots.size());
    if (same.size() < c.slots.size()) same.resize(c.slots.size());
    for (auto& s : c.slots) {
      XrtArgReuse& a = k.args[static_cast<size_t>(s.slot)];
      const XrtSlot& x = s.xrt;
      if (a.slot < 0) {
        a.slot = s.slot;
        a.name = s.name;
        a.is_bo = x.is_bo;
        a.bytes = x.bo_bytes;
      }
      if (!x.is_bo) continue;
      a.is_bo = true;
      if (!x.read.empty()) a.read_back++;
      uint64_t sent = range_bytes(x.synced_to);
      if (first) {
        a.first_sent = sent;
        continue;
      }
      a.later_runs++;
      ByteRanges fresh_bytes = x.new_values;
      if (!fresh_bytes.empty()) a.later_new++;
      if (sent) {
        a.later_resent++;
        a.later_sent_bytes += sent;
        // Evidence of the same bytes: no host change at all since the BO's previous run (a
        // rewrite of the same bytes counts as a change here: re-sending it is not advised away).
        if (x.changed.empty()) same[static_cast<size_t>(s.slot)]++;
      }
      // Not re-sent, yet host bytes changed after their last sync: the argument stayed resident
      // although it changed (a partial re-send that misses bytes is unsynced-write's case).
      if (!sent && !x.unsynced.empty()) {
        if (!a.resident_changed) a.first_resident_changed = c.number;
        a.resident_changed++;
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < out[i].args.size(); ++j) {
      XrtArgReuse& a = out[i].args[j];
      if (a.slot < 0) a.slot = static_cast<int>(j), a.name = "arg" + std::to_string(j);
      if (!a.is_bo) {
        a.role = "scalar";
        continue;
      }
      bool sent = a.first_sent || a.later_resent;
      int same = resent_same[i][j];
      if (a.resident_changed) {
        a.role = "static";
        a.corrupts = true;
        a.advice = "stays resident while its host bytes change (first on run " +
                   std::to_string(a.first_resident_changed) + ", " +
                   std::to_string(a.resident_changed) + " of " + std::to_string(a.later_runs) +
                   " later runs): the hand-managed stale-static; sync the changed bytes before "
                   "the run (or set the dirty flag that re-sends them)";
      } else if (!sent) {
        a.role = a.read_back ? "output" : "resident";
      } else if (a.later_runs && a.later_resent == 0) {
        a.role = "static";  // sent on the first run, resident since
      } else if (a.later_new == 0 && same > 0 && same == a.later_resent) {
        a.role = "static";
        a.advice = "re-sent on " + std::to_string(same) + " of " + std::to_string(a.later_runs) +
                   " later runs with host bytes that did not change: send it once and keep it "
                   "resident (missed-static), saving " +
                   std::to_string(a.later_sent_bytes) + " bytes over the later runs";
      } else {
        a.role = "input";  // re-sent as it changes
      }
    }
  return out;
}

std::string xrt_first_run_text(const XrtArgReuse& a) {
  return a.first_sent ? "sent " + std::to_string(a.first_sent) + " B" : "not sent";
}

std::string xrt_later_runs_text(const XrtArgReuse& a) {
  if (!a.later_runs) return "-";
  if (a.later_resent)
    return "re-sent " + std::to_string(a.later_resent) + " of " + std::to_string(a.later_runs) +
           ", " + std::to_string(a.later_sent_bytes) + " B";
  return a.first_sent ? "resident on " + std::to_string(a.later_runs) : "not sent";
}

}  // namespace bod
