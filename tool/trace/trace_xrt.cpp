#include "trace/trace_xrt.h"

#include <algorithm>

namespace bod {

ByteRanges range_union(const ByteRanges& a, const ByteRanges& b) {
  ByteRanges all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all),
             [](const ByteRange& x, const ByteRange& y) { return x.off < y.off; });
  ByteRanges out;
  for (auto& r : all) {
    if (r.len == 0) continue;
    if (!out.empty() && r.off <= out.back().end())
      out.back().len = std::max(out.back().end(), r.end()) - out.back().off;
    else
      out.push_back(r);
  }
  return out;
}

ByteRanges range_minus(const ByteRanges& a, const ByteRanges& b) {
  ByteRanges out;
  size_t j = 0;
  for (auto r : a) {
    uint64_t lo = r.off, hi = r.end();
    while (j < b.size() && b[j].end() <= lo) ++j;
    for (size_t k = j; k < b.size() && b[k].off < hi; ++k) {
      if (b[k].off > lo) out.push_back({lo, b[k].off - lo});
      lo = std::max(lo, b[k].end());
      if (lo >= hi) break;
    }
    if (lo < hi) out.push_back({lo, hi - lo});
  }
  return out;
}

ByteRanges range_intersect(const ByteRanges& a, const ByteRanges& b) {
  return range_minus(a, range_minus(a, b));
}

uint64_t range_bytes(const ByteRanges& a) {
  uint64_t n = 0;
  for (auto& r : a) n += r.len;
  return n;
}

std::string range_text(const ByteRanges& a) {
  std::string s = a.size() == 1 && a[0].len == 1 ? "byte " : "bytes ";
  for (size_t i = 0; i < a.size() && i < 4; ++i)
    s += (i ? ", " : "") + std::to_string(a[i].off) + ".." + std::to_string(a[i].end());
  if (a.size() > 4) s += " and " + std::to_string(a.size() - 4) + " more ranges";
  return s;
}

}  // namespace bod
