#include "runner/metrics.h"

#include <cmath>
#include <cstring>

namespace bod {

Divergence compare(const TensorRef& a, const TensorRef& b) {
  Divergence d;
  d.elements = a.numel();
  d.bit_exact = a.bytes() == b.bytes() && (a.data == b.data ||  // the same bytes (shadow_skip)
                                           std::memcmp(a.data, b.data, a.bytes()) == 0);
  if (d.bit_exact) return d;  // identical: nothing to measure (NaN/Inf counts stay 0)
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    bool fx = std::isfinite(x), fy = std::isfinite(y);
    if (std::isnan(x))
      d.nan_a++;
    else if (!fx)
      d.inf_a++;
    if (std::isnan(y))
      d.nan_b++;
    else if (!fy)
      d.inf_b++;
    if (!fx || !fy) continue;
    dot += x * y;
    na += x * x;
    nb += y * y;
    double diff = std::fabs(x - y);
    d.max_abs = std::max(d.max_abs, diff);
    if (std::fabs(y) > 1e-6) d.max_rel = std::max(d.max_rel, diff / std::fabs(y));
  }
  if (na == 0 && nb == 0)
    d.cosine = 1;
  else if (na == 0 || nb == 0)
    d.cosine = 0;
  else
    d.cosine = dot / std::sqrt(na * nb);
  return d;
}

}  // namespace bod
