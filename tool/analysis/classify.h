// bo-doctor classify: infers each slot's role at every kernel call site from observed
// behaviour (host data constant across the calls of a key, read by the kernel, fully
// overwritten before any read, read and written) and recommends static_input_indices and
// intermediate_indices, explaining every disagreement with what the model declares.
#pragma once
#include <string>
#include <vector>

#include "trace/trace.h"

namespace bod {

enum class InferredRole { static_input, intermediate, in_out, input, output_only };
const char* role_name(InferredRole r);

struct SlotAdvice {
  int slot = -1;
  std::string name;
  size_t bytes = 0;
  InferredRole role = InferredRole::input;
  bool read = false, written = false, fully_overwritten = false, host_constant = false;
  bool declared_static = false, declared_inter = false, output = false;
  std::string disagreement;  // "" when the declaration matches the recommendation
  // The declaration would make the reuse engine compute with wrong bytes (stale static data,
  // a skipped write the kernel reads): classify exits 1.
  bool corrupts = false;
};

struct SiteAdvice {
  std::string kernel, path, bo_key_template;
  int calls = 0, keys = 0, first_call = 0;
  std::vector<SlotAdvice> slots;
  std::vector<int> declared_static, declared_inter, rec_static, rec_inter;
  size_t declared_saving = 0, recommended_saving = 0;  // host->device bytes per later call
};

// Needs a trace with no-reuse hashes and probes of every slot (check's classify mode).
std::vector<SiteAdvice> classify(const Trace& t);
// Whether any declared setting in `sites` corrupts results (SlotAdvice::corrupts).
bool any_corrupting(const std::vector<SiteAdvice>& sites);
std::string render_classify_text(const std::string& model, const std::vector<SiteAdvice>& sites);
std::string render_classify_json(const std::string& model, const std::vector<SiteAdvice>& sites);

}  // namespace bod
