// intermediate-read: a slot in intermediate_indices is read by the kernel before it is
// written, so skipping its host write feeds the kernel stale bytes.
#include <map>
#include <string_view>
#include <tuple>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "intermediate-read",
    Severity::error,
    "a slot in intermediate_indices is read by the kernel before it is written (e.g. a GEMM "
    "that accumulates into its output)",
    "NaN or garbage on the second call, or right only by luck",
    "the skipped slot held stale bytes before dispatch and the kernel then wrote different "
    "values than in the no-reuse engine (or the outputs diverged), i.e. it read them",
    "drop the slot from intermediate_indices so the host writes it each call, or make the "
    "kernel overwrite it before reading",
    kNeedRun | kNeedNoReuse | kNeedByteDiffs | kNeedAccess,
    kNeedProbe,
    false,
    "the kernel reads the slot before writing it, and the skipped write leaves it other bytes than "
    "the no-reuse engine's"};

void latent(const Trace& t, const TraceCall& c, const TraceSlot& s, FindingSink& sink) {
  Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
  f.latent = true;
  f.message = "intermediate slot " + s.name +
              " is read by the kernel: filling it with a "
              "canary changed the outputs; today its stale bytes match, so nothing diverges yet";
  f.evidence = {{"probe", "canary in slot changed the outputs"},
                {"stale before dispatch", stale_before(t.header.caps, s) ? "yes" : "no"},
                {"severity",
                 "error (latent): the kernel reads the slot, so any other stale "
                 "bytes there change its outputs"}};
  sink.add(std::move(f));
}

// A recording has no kernel bodies (no access facts): judged by the caller's own data. A skipped
// intermediate slot normally holds the previous call's output (the B2 pattern: the caller
// passes the same scratch each time) and is no finding. When the caller passes new data for it
// (other bytes than it passed there at the key's previous call) that the BO does not hold, the
// slot was meant as input and the kernel may read bytes the caller never sent: a warning
// without shadow outputs, then an error when the outputs diverged, a note when they are
// bit-identical.
// With shadow outputs: the call diverged, and the only slots whose bytes before dispatch
// differed from the no-reuse run's are intermediates; of those, the one to blame (the only one,
// or the only one the call reads back: an accumulating output). Null when none or unclear.
const TraceSlot* blamed(const Trace& t, const TraceCall& c) {
  if (!t.header.caps.no_reuse || !c.diverged() || !only_intermediates_stale(c)) return nullptr;
  const TraceSlot *one = nullptr, *out = nullptr;
  int n = 0, outs = 0;
  for (auto& s : c.slots)
    if (s.reuse_pre != s.noreuse_pre) {
      ++n, one = &s;
      if (s.output) ++outs, out = &s;
    }
  return n == 1 ? one : outs == 1 ? out : nullptr;
}

// The B2 pattern gone wrong: the kernel reads the skipped slot (it accumulates into it).
void accumulated(const TraceCall& c, const TraceSlot& s, FindingSink& sink) {
  Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
  f.message = "intermediate slot " + s.name +
              " held the previous call's bytes and the outputs differ from the no-reuse run's, "
              "where it was written: the kernel reads it (an accumulating output?)";
  f.evidence = {{"device bytes before (reuse vs no-reuse)", hash_pair(s.reuse_pre, s.noreuse_pre)}};
  f.severity_basis =
      "the outputs diverged and this intermediate is the slot whose bytes before dispatch "
      "differed from the no-reuse run's";
  sink.add(std::move(f));
}

void recorded(const Trace& t, FindingSink& sink) {
  std::map<std::tuple<std::string_view, std::string_view, int>, uint64_t> passed;
  for (auto& c : t.calls) {
    for (auto& s : c.slots) {
      if (s.host.source == ArraySource::placeholder || s.host.source == ArraySource::view) continue;
      // What the caller passed in this slot at the key's previous call, whatever its role then.
      auto key = std::make_tuple(std::string_view(c.ns), std::string_view(c.bo_key), s.slot);
      auto it = passed.find(key);
      bool new_data = it != passed.end() && it->second != s.host.hash;
      passed[key] = s.host.hash;
      if (s.role != SlotRole::intermediate) continue;
      if (c.failed || s.written || s.place.pool == BoPool::alias || s.reuse_pre == s.host.hash ||
          s.host.bytes != s.bo_bytes)
        continue;
      if (!new_data) {  // the B2 pattern, unless the shadow run pins the divergence on it
        if (const TraceSlot* only = blamed(t, c); only == &s) accumulated(c, s, sink);
        continue;
      }
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "intermediate slot " + s.name + " was passed new data (" + s.host.name +
                  ") but not written: the kernel ran on the bytes the BO held";
      f.evidence = {{"device bytes before dispatch vs the call's host data",
                     hash_pair(s.reuse_pre, s.host.hash)}};
      if (!t.header.caps.no_reuse) {
        f.severity = Severity::warning;
        f.message += "; whether it reads them: record --shadow to decide";
        f.severity_basis =
            "the caller meant the slot as input, but nothing shows yet whether "
            "the kernel reads it (no shadow outputs)";
      } else if (c.diverged() && !only_intermediates_stale(c)) {
        f.severity = Severity::warning;
        f.message += "; the outputs diverged, but other slots of the call were stale too";
        f.severity_basis = "the outputs diverged, but a stale non-intermediate slot may be why";
      } else if (!c.shadowed()) {
        f.severity = Severity::note;
        f.message += "; not shadowed: call " + std::to_string(c.shadow_like) +
                     ", with the same kernel, binary, shapes and kind of difference, gave "
                     "bit-identical outputs";
        f.severity_basis =
            "this call was not shadowed (record --shadow's selection); the earlier call the "
            "message names, of the same kind, gave bit-identical outputs on its shadow run";
      } else if (c.diverged()) {
        f.message += ", and its outputs differ from the no-reuse run's";
        f.severity_basis = "the kernel read bytes the caller never sent: the outputs diverged";
      } else {
        f.severity = Severity::note;
        f.message += "; benign here: the outputs are bit-identical to the no-reuse run's";
        f.severity_basis =
            "the shadow outputs are bit-identical: the kernel overwrote the slot "
            "before reading it, or never read it";
      }
      sink.add(std::move(f));
    }
  }
}

}  // namespace

void run_intermediate_read(const Trace& t, FindingSink& sink) {
  if (t.header.caps.run && !t.header.caps.access) return recorded(t, sink);
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls) {
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    bool others_fine = only_intermediates_stale(c);
    for (auto& s : c.slots) {
      if (s.role != SlotRole::intermediate) continue;
      // An aliased slot is a baton: reading what the producer left in the pool is its purpose;
      // whether the pool held the right bytes is alias-conflict's to say.
      if (s.place.pool == BoPool::alias) continue;
      bool stale = stale_before(t.header.caps, s);
      // Stale bytes went in and different values came out; blamed on this slot when nothing
      // else was stale and the kernel's body reads the slot before writing it.
      bool blame = stale && others_fine && s.access.reads_before_write;
      bool wrote_differently =
          blame && s.reuse_post != s.noreuse_post && s.stale_diff_bytes < s.diff_bytes;
      bool silent_read = blame && s.reuse_post == s.noreuse_post && c.diverged();
      if (!wrote_differently && !silent_read) {
        if (s.probe.probed && s.probe.read) latent(t, c, s, sink);
        continue;
      }
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "intermediate slot " + s.name + " held stale bytes and the kernel read them: " +
                  (wrote_differently ? std::to_string(s.diff_bytes - s.stale_diff_bytes) +
                                           " bytes it wrote differ from the no-reuse engine's"
                                     : std::string("the outputs diverged"));
      f.evidence = {
          {"device bytes before (reuse vs no-reuse)", hash_pair(s.reuse_pre, s.noreuse_pre)},
          {"device bytes after (reuse vs no-reuse)", hash_pair(s.reuse_post, s.noreuse_post)}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& intermediate_read_info() {
  return kInfo;
}

}  // namespace bod
