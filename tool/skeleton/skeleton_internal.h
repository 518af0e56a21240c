// Internal to `bo-doctor skeleton`: what skeleton.cpp shares with the kernel planner
// (skeleton_kernels.cpp), the array namer (skeleton_arrays.cpp) and the program folder
// (skeleton_fold.cpp). Not for use outside tool/skeleton/.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "skeleton/skeleton.h"
#include "trace/trace.h"

namespace bod::skeleton_detail {

using ojson = nlohmann::ordered_json;
using Shape = std::vector<int64_t>;

// ---------------------------------------------------------------- kernels

struct KernelPlan {
  std::string name;
  std::vector<int> calls;  // indices into Trace::calls
  std::vector<std::string> slot_names;
  std::vector<DType> dtypes;
  std::vector<Shape> shape;         // fixed shape, or the dims after the leading one
  std::vector<int> param_of;        // -1: fixed; else the param giving the leading dim
  std::vector<std::string> params;  // "n", "m", ...
  std::vector<std::string> notes;
  std::vector<int> fill;  // slots the stub body fills with 0
};

// `known`: per slot index, a shape the same kernel recorded under another argument count
// ("k" and "k/15args"), used for a slot whose every call here passed no shape (an np.empty(0)
// placeholder); empty entries where none is known.
KernelPlan plan_kernel(const Trace& t, const KernelInfo& k, std::vector<int> calls,
                       const std::vector<Shape>& known = {});

// The kernel a recorder's arity variant stands for: "rms/15args" -> "rms"; other names as they
// are.
std::string base_kernel(const std::string& name);

// The leading-dimension params of one call of the kernel.
std::vector<int64_t> call_params(const KernelPlan& kp, const TraceCall& c);

// The slot's shape in the model at a call with these params.
Shape model_shape(const KernelPlan& kp, size_t s, const std::vector<int64_t>& params);

ojson kernel_json(const KernelPlan& kp, const KernelInfo& k);

// The distinct values one slice of moving data holds, numbered by first appearance (one
// lookup per call: searching the list of values before it made a slot with a new value per
// call O(calls^2)). Keeps at most cap + 1: past the cap the slice is not replayed.
class ValueNumbers {
 public:
  explicit ValueNumbers(size_t cap = 0) : cap_(cap) {}
  void add(uint64_t v) {
    if (at_.size() <= cap_) at_.emplace(v, at_.size());
  }
  bool over() const { return at_.size() > cap_; }
  size_t size() const { return at_.size(); }
  size_t number(uint64_t v) const { return at_.at(v); }  // a value add() kept

 private:
  size_t cap_;
  std::unordered_map<uint64_t, size_t> at_;
};

// ---------------------------------------------------------------- arrays

// One distinct recorded binding: its name as recorded, and the type the model's slot gives it.
struct Ident {
  std::string name;
  DType dtype = DType::bf16;
  Shape shape;
  size_t group = 0;
  std::vector<int64_t> index;  // into the group's array
};

// One model tensor or var: the identities it holds, one per index.
struct Group {
  std::string base;  // the name in the model
  bool tensor = false;
  bool seeded = false;  // a var of distinct recorded values: seeded data
  std::vector<size_t> members;
  size_t depth = 0;
};

class Arrays {
 public:
  // The identity of a binding, created on first use.
  // `seeded`: a var whose slices hold the distinct values one recorded binding had (seeded
  // data, so they differ), never a tensor.
  int use(const std::string& name, bool tensor_use, DType dt, const Shape& shape,
          bool seeded = false, bool placeholder = false);

  // Groups the identities into tensors and vars (after every use is known).
  void build();

  std::string binding(int id) const;

  // A recorded name that takes an index: itself when it parses as "name[i]...", else made valid.
  static std::string indexable(const std::string& name);

  // The model's "tensors" and "vars" sections.
  void emit(ojson& tensors, ojson& vars) const;

 private:
  static std::string base_of(const std::string& name);

  // Whole arrays whose names differ only in one number ("w0", "w1"; "layers.3.wq") become the
  // slices of one array, so a loop can bind them as "w[l]".
  void stack_numbered();

  std::map<std::tuple<std::string, DType, int64_t>, int> ids_;
  std::vector<Ident> idents_;
  std::set<std::string> tensor_names_;       // bases bound as tensors, placeholders or statics
  std::set<std::string> seeded_names_;       // bases holding a binding's distinct values
  std::set<std::string> placeholder_names_;  // bases passed as placeholders
  std::vector<Group> groups_;
};

// ---------------------------------------------------------------- folding

// A step of the program being built: its JSON (templated inside loops), a signature of what must
// be equal for two steps to fold, the layer labels of its calls and the loop variables inside.
struct Item {
  ojson step;
  int sig = 0;
  std::vector<long long> layers;
  std::set<std::string> vars;
};

struct Var {
  std::string name;
  int64_t first = 0;  // value at the first iteration (+1 per iteration)
};

class Folder {
 public:
  Item item(ojson step, std::vector<long long> layers, std::set<std::string> vars);

  // Folds repeated blocks of `items` into loops, largest coverage first, until nothing changes.
  std::vector<Item> fold(std::vector<Item> items, const std::set<std::string>& enclosing);

  // The steps of `n` blocks of `k` items each folded over `var` (no loop made), or nullopt.
  std::optional<std::vector<ojson>> fold_blocks(const std::vector<Item>& items, size_t i, size_t k,
                                                size_t n, const Var& var);

 private:
  int intern(const std::string& s);

  static bool pair_folds(const std::vector<Item>& items, size_t a, size_t k,
                         std::vector<signed char>& cache);

  static bool same_sigs(const std::vector<Item>& items, size_t a, size_t b, size_t k);

  // How the loop over these blocks is labelled: a layer loop when block j's calls all carry
  // layer first+j, a plain loop when every block carries the same labels; nullopt otherwise.
  static std::optional<Var> loop_var(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                                     const std::set<std::string>& enclosing);

  bool foldable(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                const std::set<std::string>& enclosing);

  std::optional<Item> make_loop(const std::vector<Item>& items, size_t i, size_t k, size_t n,
                                const std::set<std::string>& enclosing);

  std::map<std::string, int> sigs_;
};

}  // namespace bod::skeleton_detail
