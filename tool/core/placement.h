// Where a slot's BO lives in the reuse engine. Computed once, when the plan is expanded (or
// recorded from a real engine), and passed downstream as this type: the engine, the Trace and
// the checks compare placements, they never rebuild or parse them from strings.
#pragma once
#include <cstddef>
#include <string>
#include <tuple>

namespace bod {

// Which table of the engine owns the BO.
enum class BoPool {
  key,      // the bo_key's own BO set, one BO per slot index
  shared,   // a shared_nonstatic pool, keyed by (kernel, slot index, bytes)
  alias,    // a shared_alias pool, keyed by (name, bytes)
  unbound,  // no BO: an argument beyond the count the key's first call set up
};
const char* bo_pool_name(BoPool p);  // "key" | "shared" | "alias"

struct Placement {
  std::string ns;  // cache instance; "" when the engine has one
  BoPool pool = BoPool::key;
  std::string name;    // key, unbound: the bo_key; shared: the kernel; alias: the pool name
  int index = -1;      // key, shared, unbound: slot index; alias: -1
  size_t bytes = 0;    // the BO's size (set by the key's first call); unbound: 0
  int first_call = 0;  // number of the first call that used this BO
  int bo = 0;  // the BO's number: 1, 2, ... in order of first use (0: unnumbered; -1: unbound)

  // Two placements name the same BO exactly when their identities are equal (a map key).
  auto identity() const {
    bool sized = pool == BoPool::shared || pool == BoPool::alias;
    return std::make_tuple(ns, pool, name, index, sized ? bytes : size_t(0));
  }
  // identity() == o.identity(), without building the tuples.
  bool same_bo(const Placement& o) const {
    if (pool == BoPool::unbound || o.pool == BoPool::unbound) return false;
    if (bo > 0 && o.bo > 0) return bo == o.bo;
    bool sized = pool == BoPool::shared || pool == BoPool::alias;
    return pool == o.pool && index == o.index && (!sized || bytes == o.bytes) && name == o.name &&
           ns == o.ns;
  }
  // "key:rms_L0/3", "pool:attn/2/4096", "alias:x": for messages only.
  std::string label() const;
};

}  // namespace bod
