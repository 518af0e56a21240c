#include "trace/xrt_log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace bod {

namespace {

using json = nlohmann::json;

constexpr size_t kKeptHostOps = 64;  // per BO: the latest host changes, to name the culprit

const char* state_name(long long s) {
  switch (s) {
    case 1:
      return "new";
    case 2:
      return "queued";
    case 3:
      return "running";
    case 4:
      return "completed";
    case 5:
      return "error";
    case 6:
      return "abort";
    case 7:
      return "submitted";
    case 8:
      return "timeout";
    case 9:
      return "no response";
    default:
      return "unknown";
  }
}

struct Bo {
  long long root = 0;  // the BO whose memory this is (itself, or a sub-buffer's parent's root)
  uint64_t base = 0, size = 0;
  long long group = -1;
};

struct RootState {
  ByteRanges stale;          // changed on the host, not synced to the device since
  ByteRanges changed_since;  // since the BO's last run
  ByteRanges synced_since;
  ByteRanges from_after;  // synced from the device after its last run
  std::vector<HostOp> ops;
  ByteRanges new_since;  // of changed_since, bytes known to hold new values
  // [offset, length) -> hash: the bytes the last bo.write of exactly that range carried (while
  // nothing else changed them on the host), and the reads back after the BO's previous and
  // last run (covered by a sync from the device, with hashes).
  using Hashes = std::map<std::pair<uint64_t, uint64_t>, uint64_t>;
  Hashes last_write, reads_prev, reads_last;
  int last_call = 0;  // the last call that bound it (0: none)
  bool synced_to_ever = false, synced_from_ever = false;
};

struct Replay {
  const std::string& name;
  const std::string& ns;
  Trace& t;
  XrtLogSummary& sum;
  std::map<long long, Bo> bos;
  std::map<long long, RootState> roots;
  std::map<long long, std::string> kernels;
  std::map<long long, int> run_call;          // run number -> call number
  std::map<long long, std::set<int>> flying;  // root -> started calls not waited for
  size_t line = 0;
  size_t first_call = 0;
  bool shadows = false;   // this process's recorder re-runs every run on fresh BOs (--shadow)
  bool plumbing = false;  // ... and compares nothing (the preload library)

  Error err(const std::string& what) const {
    return Error{name + ":" + std::to_string(line), what};
  }

  const Bo* bo(const json& j) const {
    auto it = bos.find(j.value("bo", 0LL));
    return it == bos.end() ? nullptr : &it->second;
  }
  // [off, off + len) of the BO, in its root's bytes, clipped to the BO.
  static ByteRanges window(const Bo& b, uint64_t off, uint64_t len) {
    if (off >= b.size || len == 0) return {};
    return {{b.base + off, std::min(len, b.size - off)}};
  }

  TraceCall& call(int n) { return t.calls[static_cast<size_t>(n - 1)]; }

  // Every slot of call n bound to this root.
  template <class F>
  void slots_of(int n, long long root, F&& fn) {
    for (auto& s : call(n).slots)
      if (s.xrt->is_bo && s.xrt->bo == root) fn(s);
  }

  void in_flight(long long root, const HostOp& op) {
    auto it = flying.find(root);
    if (it == flying.end()) return;
    for (int n : it->second)
      slots_of(n, root, [&](TraceSlot& s) { s.xrt->in_flight.push_back(op); });
  }

  void keep(RootState& r, const HostOp& op) {
    if (r.ops.size() == kKeptHostOps) r.ops.erase(r.ops.begin());
    r.ops.push_back(op);
  }

  // Drops the hashes of ranges that overlap `r`.
  static void forget(RootState::Hashes& h, const ByteRanges& r) {
    for (auto it = h.begin(); it != h.end();)
      if (!range_intersect({{it->first.first, it->first.second}}, r).empty())
        it = h.erase(it);
      else
        ++it;
  }

  static HostOp last_op_in(const RootState& r, const ByteRanges& in) {
    for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it)
      if ((it->op == "write" || it->op == "store") && !range_intersect({it->range}, in).empty())
        return *it;
    return {};
  }

  Status event(const json& j) {
    std::string e = j.value("e", "");
    std::string at = j.contains("at") && j["at"].is_string() ? j["at"].get<std::string>() : "";
    if (e == "open") {
      if (t.header.producer.empty()) {
        std::string producer = j.value("producer", "");
        std::string device = j.value("device", "");
        bool computes = j.value("computes", device != "noop");
        t.header.producer = "bo-doctor record --xrt (" + producer + ")";
        t.header.backend = device.empty() ? "xrt" : "xrt " + device;
        t.header.host_emulated = producer == "xrt-wrap" && computes;
        t.header.npu_launched = producer == "xrt-preload" && computes;
      }
      shadows = j.contains("shadow") && j["shadow"].is_boolean() && j["shadow"].get<bool>();
      plumbing = j.contains("shadow_plumbing") && j["shadow_plumbing"].is_boolean() &&
                 j["shadow_plumbing"].get<bool>();
      return ok_status();
    }
    if (e == "shadow") return shadow(j);
    if (e == "shadow_out") return shadow_out(j);
    if (e == "kernel") {
      kernels[j.value("k", 0LL)] = j.value("name", "");
      return ok_status();
    }
    if (e == "bo") {
      Bo b;
      long long id = j.value("bo", 0LL), parent = j.value("parent", 0LL);
      b.size = j.value("size", 0ULL);
      b.group = j.value("group", -1LL);
      b.root = id;
      if (parent) {
        auto p = bos.find(parent);
        if (p == bos.end())
          return err("sub-buffer of BO " + std::to_string(parent) + ", which no event made");
        b.root = p->second.root;
        b.base = p->second.base + j.value("offset", 0ULL);
      }
      bos[id] = b;
      if (!parent) roots[id] = RootState{};
      sum.bos++;
      return ok_status();
    }
    if (e == "map") return ok_status();
    const Bo* b = nullptr;
    if (e == "host" || e == "sync" || e == "read") {
      b = bo(j);
      if (!b) return err("BO " + std::to_string(j.value("bo", 0LL)) + " was never made");
    }
    if (e == "host") {
      ByteRanges r;
      if (j.contains("r") && j["r"].is_array())
        for (auto& x : j["r"])
          if (x.is_array() && x.size() == 2)
            r = range_union(r, window(*b, x[0].get<uint64_t>(), x[1].get<uint64_t>()));
      if (r.empty()) return ok_status();
      RootState& rs = roots[b->root];
      rs.stale = range_union(rs.stale, r);
      rs.changed_since = range_union(rs.changed_since, r);
      // A bo.write of the bytes its range last received changes nothing; a store through map()
      // is a byte-by-byte difference, and a write without a hash (an older recorder) counts.
      bool write = j.value("how", "") == "write";
      bool same = false;
      if (write && r.size() == 1 && j.contains("h") && j["h"].is_number_unsigned()) {
        auto key = std::make_pair(r[0].off, r[0].len);
        auto h = j["h"].get<uint64_t>();
        auto it = rs.last_write.find(key);
        same = it != rs.last_write.end() && it->second == h;
        forget(rs.last_write, r);
        rs.last_write[key] = h;
      } else {
        forget(rs.last_write, r);
      }
      if (!same) rs.new_since = range_union(rs.new_since, r);
      HostOp op{write ? "write" : "store", {r.front().off, r.back().end() - r.front().off}, at};
      keep(rs, op);
      in_flight(b->root, op);
      return ok_status();
    }
    if (e == "sync") {
      bool to = j.value("dir", "") == "to";
      ByteRanges r = window(*b, j.value("off", 0ULL), j.value("len", 0ULL));
      RootState& rs = roots[b->root];
      HostOp op{to ? "sync_to" : "sync_from", r.empty() ? ByteRange{} : r.front(), at};
      in_flight(b->root, op);
      if (to) {
        rs.stale = range_minus(rs.stale, r);
        rs.synced_since = range_union(rs.synced_since, r);
        rs.synced_to_ever = true;
        return ok_status();
      }
      rs.stale = range_minus(rs.stale, r);  // the host now holds the device's bytes
      rs.synced_from_ever = true;
      forget(rs.last_write, r);
      if (!rs.last_call) return ok_status();
      rs.from_after = range_union(rs.from_after, r);
      ByteRanges changed;
      if (j.contains("changed") && j["changed"].is_array())
        for (auto& x : j["changed"])
          if (x.is_array() && x.size() == 2)
            changed = range_union(changed, window(*b, x[0].get<uint64_t>(), x[1].get<uint64_t>()));
      slots_of(rs.last_call, b->root, [&](TraceSlot& s) {
        s.xrt->synced_from = range_union(s.xrt->synced_from, r);
        s.xrt->device_changed = range_union(s.xrt->device_changed, changed);
      });
      return ok_status();
    }
    if (e == "read") {
      ByteRanges r = window(*b, j.value("off", 0ULL), j.value("len", 0ULL));
      RootState& rs = roots[b->root];
      HostOp op{"read", r.empty() ? ByteRange{} : r.front(), at};
      in_flight(b->root, op);
      if (!rs.last_call || r.empty()) return ok_status();
      ByteRanges uncovered = range_minus(r, rs.from_after);
      // What came back, against what came back after the BO's previous run: the first read of
      // a range after this run, covered by a sync from the device and hashed.
      bool compared = false, differs = false;
      if (uncovered.empty() && j.contains("h") && j["h"].is_number_unsigned()) {
        auto key = std::make_pair(r[0].off, r[0].len);
        auto h = j["h"].get<uint64_t>();
        if (rs.reads_last.emplace(key, h).second) {
          auto prev = rs.reads_prev.find(key);
          compared = prev != rs.reads_prev.end();
          differs = compared && prev->second != h;
        }
      }
      slots_of(rs.last_call, b->root, [&](TraceSlot& s) {
        s.xrt->read = range_union(s.xrt->read, r);
        if (compared) s.xrt->out_compared = range_union(s.xrt->out_compared, r);
        if (differs) s.xrt->out_changed = range_union(s.xrt->out_changed, r);
        if (uncovered.empty()) return;
        if (s.xrt->unsynced_read.empty()) s.xrt->read_by = op;
        s.xrt->unsynced_read = range_union(s.xrt->unsynced_read, uncovered);
      });
      return ok_status();
    }
    if (e == "start") return start(j, at);
    if (e == "wait") {
      auto it = run_call.find(j.value("run", 0LL));
      if (it == run_call.end()) return ok_status();  // a wait on a run started elsewhere
      TraceCall& c = call(it->second);
      c.xrt.state = state_name(j.value("state", 0LL));
      for (auto& s : c.slots)
        if (s.xrt->is_bo) flying[s.xrt->bo].erase(c.number);
      return ok_status();
    }
    return ok_status();  // unknown events: a newer recorder's; nothing to replay
  }

  Status start(const json& j, const std::string& at) {
    if (t.calls.size() >= 10000000) return err("more than 10000000 runs");
    std::string kname = kernels.count(j.value("k", 0LL)) ? kernels[j.value("k", 0LL)] : "";
    if (kname.empty()) kname = "kernel" + std::to_string(j.value("k", 0LL));
    std::map<int, json> args;
    if (j.contains("args") && j["args"].is_array())
      for (auto& a : j["args"])
        if (a.is_object()) {
          long long i = a.value("i", -1LL);
          if (i < 0 || i >= 4096)
            return err("argument index " + std::to_string(i) + " out of range");
          args[static_cast<int>(i)] = a;
        }
    size_t nslots = args.empty() ? 0 : static_cast<size_t>(args.rbegin()->first) + 1;
    KernelInfo* k = nullptr;
    for (auto& x : t.header.kernels)
      if (x.name == kname) k = &x;
    if (!k) {
      t.header.kernels.push_back({kname, {}, ""});
      k = &t.header.kernels.back();
    }
    while (k->slots.size() < nslots)
      k->slots.push_back({"arg" + std::to_string(k->slots.size()), DType::i8});
    TraceCall c;
    c.number = static_cast<int>(t.calls.size()) + 1;
    c.ns = ns;
    c.kernel = kname;
    c.bo_key = kname;
    c.bo_key_template = kname;
    c.path = at;
    c.xrt.run = j.value("run", 0LL);
    c.xrt.at = at;
    c.key_first_call = c.number;
    for (auto& prev : t.calls)
      if (prev.ns == ns && prev.bo_key == kname) {
        c.key_first_call = prev.number;
        break;
      }
    c.slots.resize(k->slots.size());
    for (size_t i = 0; i < c.slots.size(); ++i) {
      TraceSlot& s = c.slots[i];
      s.slot = static_cast<int>(i);
      s.name = k->slots[i].name;
      s.host.dtype = DType::i8;
      s.host.name = s.name;
      s.place.pool = BoPool::unbound;
      s.place.first_call = c.number;
      auto a = args.find(static_cast<int>(i));
      if (a == args.end() || !a->second.contains("bo")) {
        if (a != args.end()) s.xrt->value = a->second.value("v", 0ULL);
        continue;
      }
      const Bo* b = bo(a->second);
      if (!b)
        return err("run " + std::to_string(c.xrt.run) + " binds BO " +
                   std::to_string(a->second.value("bo", 0LL)) + ", which was never made");
      RootState& rs = roots[b->root];
      ByteRanges win = window(*b, 0, b->size);
      s.xrt->is_bo = true;
      s.xrt->bo = b->root;
      s.xrt->bo_bytes = b->size;
      s.xrt->group = b->group;
      s.xrt->changed = range_intersect(rs.changed_since, win);
      s.xrt->new_values = range_intersect(rs.new_since, win);
      s.xrt->synced_to = range_intersect(rs.synced_since, win);
      s.xrt->unsynced = range_intersect(rs.stale, win);
      if (!s.xrt->unsynced.empty()) s.xrt->unsynced_by = last_op_in(rs, s.xrt->unsynced);
      s.host.bytes = b->size;
      s.host.shape = {static_cast<int64_t>(b->size)};
      s.host.source = ArraySource::var;
      s.place.pool = BoPool::key;
      s.place.name = "bo" + std::to_string(b->root);
      s.place.index = 0;
      s.place.ns = ns;
      s.place.bytes = b->size;
    }
    t.calls.push_back(std::move(c));
    TraceCall& added = t.calls.back();
    for (auto& s : added.slots) {
      if (!s.xrt->is_bo) continue;
      RootState& rs = roots[s.xrt->bo];
      if (rs.last_call == added.number) continue;  // a BO bound twice: once is enough
      // The reads after the BO's last run stand for its bytes before this one, unless the host
      // changed or sent bytes there in between.
      forget(rs.reads_last, range_union(rs.changed_since, rs.synced_since));
      rs.reads_prev = std::move(rs.reads_last);
      rs.reads_last.clear();
      rs.new_since.clear();
      rs.changed_since.clear();
      rs.synced_since.clear();
      rs.from_after.clear();
      rs.last_call = added.number;
      flying[s.xrt->bo].insert(added.number);
    }
    run_call[added.xrt.run] = added.number;
    sum.runs++;
    if (!shadows) sum.not_shadowed++;
    if (!shadows && plumbing) sum.plumbing_runs++;
    return ok_status();
  }

  // The shadow run of a run (record --xrt --shadow): its fresh BOs' hashes before and after, or
  // why it was not made.
  Status shadow(const json& j) {
    auto it = run_call.find(j.value("run", 0LL));
    if (it == run_call.end()) return ok_status();
    if (j.contains("error")) {
      if (!sum.shadow_failed++ && j["error"].is_string()) sum.shadow_error = j["error"];
      return ok_status();
    }
    if (!shadows) {  // re-run, nothing compared: no no-reuse data in the trace
      sum.plumbing_shadowed += plumbing;
      return ok_status();
    }
    TraceCall& c = call(it->second);
    if (j.contains("bos") && j["bos"].is_array())
      for (auto& x : j["bos"]) {
        if (!x.is_array() || x.size() != 3) continue;
        auto b = bos.find(x[0].get<long long>());
        if (b == bos.end()) continue;
        slots_of(c.number, b->second.root, [&](TraceSlot& s) {
          s.noreuse_pre = x[1].get<uint64_t>();
          s.noreuse_post = x[2].get<uint64_t>();
        });
      }
    t.noreuse.calls++;
    t.noreuse.h2d_bytes += j.value("h2d", 0ULL);
    t.noreuse.writes += j.value("writes", 0L);
    sum.shadowed++;
    return ok_status();
  }

  // A run's output bytes, as the program synced them back from the device, against the shadow
  // run's bytes of the same ranges: one `outputs` entry for the first slot bound to the BO.
  Status shadow_out(const json& j) {
    auto it = run_call.find(j.value("run", 0LL));
    const Bo* b = bo(j);
    if (it == run_call.end() || !b) return ok_status();
    TraceCall& c = call(it->second);
    for (auto& s : c.slots) {
      if (!s.xrt->is_bo || s.xrt->bo != b->root) continue;
      OutputMetrics o;
      o.slot = s.slot;
      o.bit_exact = j.value("bit_exact", true);
      o.cosine = j.value("cosine", 1.0);
      o.max_abs = j.value("max_abs", 0.0);
      o.max_rel = j.value("max_rel", 0.0);
      o.elements = j.value("elements", 0LL);
      auto pair = [&](const char* k, long long& real, long long& shadow) {
        if (j.contains(k) && j[k].is_array() && j[k].size() == 2) {
          real = j[k][0].get<long long>();
          shadow = j[k][1].get<long long>();
        }
      };
      pair("nan", o.nan_reuse, o.nan_noreuse);
      pair("inf", o.inf_reuse, o.inf_noreuse);
      c.outputs_cmp.push_back(o);
      break;
    }
    return ok_status();
  }

  // A read of a BO the host sent bytes to and never fetched back is the host reading its own
  // input; only outputs (fetched from the device at some point, or never sent) count.
  void finish() {
    for (size_t i = first_call; i < t.calls.size(); ++i)
      for (auto& s : t.calls[i].slots) {
        if (!s.xrt->is_bo || s.xrt->unsynced_read.empty()) continue;
        const RootState& rs = roots[s.xrt->bo];
        if (rs.synced_to_ever && !rs.synced_from_ever) {
          s.xrt->unsynced_read.clear();
          s.xrt->read_by = {};
        }
      }
  }
};

}  // namespace

Status add_xrt_log(std::istream& in, const std::string& name, const std::string& ns, Trace& t,
                   XrtLogSummary& summary) {
  Replay r{name, ns, t, summary, {}, {}, {}, {}, {}, 0, t.calls.size()};
  std::string line, next;
  bool have = static_cast<bool>(std::getline(in, line));
  while (have) {
    bool more = static_cast<bool>(std::getline(in, next));
    ++r.line;
    if (!line.empty()) {
      if (line.size() > (size_t(64) << 20)) return r.err("an event line over 64 MiB");
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        if (!more) {
          summary.torn = true;  // the process died mid-write
          break;
        }
        return r.err("not a JSON object; the event log is corrupt");
      }
      try {
        BOD_CHECK(r.event(j));
      } catch (const json::exception& e) {
        return r.err(std::string("malformed event: ") + e.what());
      }
      summary.events++;
    }
    line = std::move(next);
    have = more;
  }
  r.finish();
  return ok_status();
}

Result<Trace> trace_from_xrt_logs(const std::string& dir, const std::string& command,
                                  XrtLogSummary& summary) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  if (ec) return Error{dir, "cannot list the event logs: " + ec.message()};
  std::sort(files.begin(), files.end());
  Trace t;
  t.header.caps.xrt = true;
  t.header.named_bindings = false;
  t.header.model_name = command;
  t.header.host_emulated = false;
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return Error{f.string(), "cannot read the event log"};
    std::string ns = files.size() > 1 ? "process " + f.stem().string() : "";
    BOD_CHECK(add_xrt_log(in, f.string(), ns, t, summary));
    summary.processes++;
  }
  // Findings print a call's path: the recorder's file:line, else the program and the run.
  std::string program = command.substr(0, command.find(' '));
  for (auto& c : t.calls)
    if (c.path.empty()) c.path = program + " (run " + std::to_string(c.xrt.run) + ")";
  if (t.header.producer.empty()) t.header.producer = "bo-doctor record --xrt";
  if (t.header.backend.empty()) t.header.backend = "xrt";
  // Shadow runs stand for the no-reuse engine only when every run had its chance at one.
  t.header.caps.no_reuse = summary.runs > 0 && summary.not_shadowed == 0;
  if (!t.header.caps.no_reuse) {
    for (auto& c : t.calls) {
      c.outputs_cmp.clear();
      for (auto& s : c.slots) s.noreuse_pre = s.noreuse_post = 0;
    }
    t.noreuse = {};
  }
  number_bos(t);
  return t;
}

}  // namespace bod
