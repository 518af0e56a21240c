#include "trace/trace.h"

#include <algorithm>

namespace bod {

const char* slot_role_name(SlotRole r) {
  switch (r) {
    case SlotRole::input:
      return "input";
    case SlotRole::static_input:
      return "static";
    case SlotRole::intermediate:
      return "intermediate";
  }
  return "?";
}

const char* array_source_name(ArraySource s) {
  switch (s) {
    case ArraySource::tensor:
      return "tensor";
    case ArraySource::var:
      return "var";
    case ArraySource::view:
      return "view";
    case ArraySource::zeros:
      return "zeros";
    case ArraySource::placeholder:
      return "placeholder";
  }
  return "?";
}

namespace {
bool has(const std::vector<int>& v, int s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

bool TraceCall::is_static(int s) const {
  return has(statics, s);
}
bool TraceCall::is_inter(int s) const {
  return has(inters, s);
}
bool TraceCall::is_output(int s) const {
  return has(outputs, s);
}

bool TraceCall::diverged() const {
  for (auto& o : outputs_cmp)
    if (!o.bit_exact) return true;
  return false;
}

std::string TraceCall::where() const {
  std::string s = phase;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (token >= 0) add("t=" + std::to_string(token));
  if (layer >= 0) add("l=" + std::to_string(layer));
  if (process > 0) add("process " + std::to_string(process));
  if (thread > 0) add("thread " + std::to_string(thread));
  return s;
}

const KernelInfo* Trace::kernel(const std::string& name) const {
  for (auto& k : header.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const TraceCall* Trace::call(int number) const {
  if (number < 1 || static_cast<size_t>(number) > calls.size()) return nullptr;
  const TraceCall& c = calls[static_cast<size_t>(number - 1)];
  return c.number == number ? &c : nullptr;
}

std::vector<std::vector<Resident>> residents(const Trace& t) {
  // BO numbers: the producer's, or (a producer that did not number them) numbered here by
  // identity in order of first use, as number_bos does, without copying the trace.
  bool numbered = true;
  for (auto& c : t.calls)
    for (auto& s : c.slots) numbered = numbered && s.place.bo != 0;
  std::map<decltype(Placement{}.identity()), int> seen;
  auto number = [&](const Placement& p) {
    if (numbered) return p.bo;
    if (p.pool == BoPool::unbound) return -1;
    return seen.emplace(p.identity(), int(seen.size()) + 1).first->second;
  };
  std::vector<Resident> bo;  // by BO number
  std::vector<std::vector<Resident>> out;
  out.reserve(t.calls.size());
  for (auto& c : t.calls) {
    std::vector<Resident> r(c.slots.size());
    // In slot order, as the engine prepares them: a slot sharing a BO with an earlier slot of
    // the same call sees that slot's write.
    for (size_t s = 0; s < c.slots.size(); ++s) {
      int b = number(c.slots[s].place);
      if (b < 0) continue;  // unbound: no BO
      auto n = static_cast<size_t>(b);
      if (n >= bo.size()) bo.resize(n + 1);
      r[s] = bo[n];
      if (c.slots[s].written && c.slots[s].written_bytes > 0)
        bo[n] = Resident{c.slots[s].host.name, c.number, c.slots[s].written_hash};
    }
    out.push_back(std::move(r));
  }
  return out;
}

void number_bos(Trace& t) {
  std::map<decltype(Placement{}.identity()), std::pair<int, int>> seen;  // -> (number, first)
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (s.place.pool == BoPool::unbound) {
        s.place.bo = -1;
        continue;
      }
      auto it = seen.find(s.place.identity());
      if (it == seen.end())
        it = seen.emplace(s.place.identity(), std::make_pair(int(seen.size()) + 1, c.number)).first;
      s.place.bo = it->second.first;
      s.place.first_call = it->second.second;
    }
}

std::vector<char> slots_sharing_a_bo(const TraceCall& c) {
  std::vector<char> out(c.slots.size(), 0);
  for (size_t a = 0; a < c.slots.size(); ++a)
    for (size_t b = a + 1; b < c.slots.size(); ++b)
      if (c.slots[a].place.same_bo(c.slots[b].place)) out[a] = out[b] = 1;
  return out;
}

bool shares_bo(const TraceCall& c, int slot) {
  const Placement& p = c.slots[static_cast<size_t>(slot)].place;
  for (auto& s : c.slots)
    if (s.slot != slot && s.place.same_bo(p)) return true;
  return false;
}

}  // namespace bod
