// Factories and texts of every built-in check (one file each), for the registry, plus small
// helpers several checks share.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "checks/check.h"

namespace bod {

#define BOD_DECLARE_CHECK(name)           \
  std::unique_ptr<Check> make_##name();   \
  const CheckInfo& name##_info();
BOD_DECLARE_CHECK(stale_static)
BOD_DECLARE_CHECK(key_collision)
BOD_DECLARE_CHECK(size_mismatch)
BOD_DECLARE_CHECK(static_clobber)
BOD_DECLARE_CHECK(intermediate_read)
BOD_DECLARE_CHECK(partial_overwrite)
BOD_DECLARE_CHECK(output_divergence)
BOD_DECLARE_CHECK(view_overwritten)
BOD_DECLARE_CHECK(placeholder_upload)
BOD_DECLARE_CHECK(alias_conflict)
BOD_DECLARE_CHECK(missed_static)
BOD_DECLARE_CHECK(missed_intermediate)
BOD_DECLARE_CHECK(config_error)
#undef BOD_DECLARE_CHECK

// bo_key -> number of its first call.
std::map<std::string, int> key_first_calls(const Plan& p);
// "a1b2...  vs  c3d4..." evidence value.
std::string hash_pair(uint64_t a, uint64_t b);
// True when the reuse engine skipped a slot whose device bytes then differed from the shadow's.
bool stale_before(const SlotRecord& s);
// True when every slot whose bytes differed before dispatch is an intermediate: only then can a
// difference after dispatch be blamed on an intermediate slot.
bool only_intermediates_stale(const CallRecord& r);

}  // namespace bod
