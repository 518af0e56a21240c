// A bo_key in its KernelCache instance: the pair the reuse engine keeps one BO list for, the
// plan's placements and first calls are computed per, and the probe selection counts calls of.
#pragma once
#include <string>
#include <tuple>

namespace bod {

struct BoKeyId {
  // The KernelCache instance, a namespace of keys and pools: a call's `cache` in model.json,
  // `ns` in the trace and in Placement; "" when the engine has one.
  std::string ns;
  std::string bo_key;
  bool operator==(const BoKeyId& o) const { return ns == o.ns && bo_key == o.bo_key; }
  bool operator!=(const BoKeyId& o) const { return !(*this == o); }
  bool operator<(const BoKeyId& o) const { return std::tie(ns, bo_key) < std::tie(o.ns, o.bo_key); }
};

}  // namespace bod
