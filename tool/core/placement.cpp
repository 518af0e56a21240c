#include "core/placement.h"

namespace bod {

const char* bo_pool_name(BoPool p) {
  switch (p) {
    case BoPool::key:
      return "key";
    case BoPool::shared:
      return "shared";
    case BoPool::alias:
      return "alias";
    case BoPool::unbound:
      return "unbound";
  }
  return "?";
}

std::string Placement::label() const {
  std::string pre = ns.empty() ? "" : ns + ":";
  switch (pool) {
    case BoPool::key:
      return pre + "key:" + name + "/" + std::to_string(index);
    case BoPool::shared:
      return pre + "pool:" + name + "/" + std::to_string(index) + "/" + std::to_string(bytes);
    case BoPool::alias:
      return pre + "alias:" + name + "/" + std::to_string(bytes);
    case BoPool::unbound:
      return pre + "unbound:" + name + "/" + std::to_string(index);
  }
  return "?";
}

}  // namespace bod
