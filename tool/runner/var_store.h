// The host side of one engine's dataflow: every var of the model, where a region may be a
// zero-copy view into a BO (an output kept "as view"), exactly like the numpy views a real
// engine hands back. Reading a view whose BO changed since it was returned is reported.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/backend.h"

namespace bod {

struct ViewRef {
  BoHandle bo = 0;
  // The BO's host mapping when the view was returned. Reads take the mapping again from the
  // backend (VarStore's `backend`): a host write or sync may have moved it (copy on write).
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  uint64_t hash = 0;  // of the bytes when the view was returned
  const PlanCall* call = nullptr;
  int slot = -1;
  bool reported = false;
};

class VarStore {
 public:
  // `backend`: where views read their BO's mapping (null: at ViewRef::data).
  explicit VarStore(const Model& m, Backend* backend = nullptr);
  VarStore(const VarStore&) = delete;
  // Called with every view a read touches whose bytes changed since it was returned.
  using StaleViewFn = std::function<void(const std::string& var, ViewRef& v)>;
  // The current contents of a var region (valid until the next call on this store).
  // `view_call` (optional) is set to the call whose returned view the bytes come from (the
  // first one, when several views make up the region), 0 when none does.
  TensorRef read(const BoundArray& b, const StaleViewFn& on_stale, int* view_call = nullptr);
  // A writable region; views inside it are dropped, views around it are copied in first.
  // The whole region counts as changed, unless `changed_bytes` (from the region's start) says
  // which part the caller writes (a KV-cache append writes a few rows).
  struct ByteRange {
    size_t offset = 0, bytes = 0;
  };
  TensorRef write(const BoundArray& b);
  TensorRef write(const BoundArray& b, ByteRange changed_bytes);
  // Marks bytes of a region changed after the fact (a writer that learns the range once its
  // operands are bound, having taken the region with an empty range).
  void mark_changed(const BoundArray& b, ByteRange changed_bytes);
  void keep_view(const BoundArray& b, const ViewRef& v);
  // hash_bytes(data, n) for bytes a read of `var` returned. When they lie in the var's own
  // memory, start on a 64 KiB chunk and span more than one, the chunk hashes are kept and
  // only chunks written since they were last hashed are read again: a KV cache is not
  // re-hashed whole on every call. Anything else (a view, a copy) is hashed as it is.
  uint64_t hash(const std::string& var, const uint8_t* data, size_t n);
  // false: hash() hashes everything as it is (the reference the tests compare with).
  void keep_chunk_hashes(bool on) { chunk_hashes_ = on; }
  // Chunks hash() read, and chunks it answered from a kept hash.
  long chunks_hashed() const { return chunks_hashed_; }
  long chunks_kept() const { return chunks_kept_; }

 private:
  struct Var {
    const VarDecl* decl;
    std::vector<uint8_t> base;
    std::map<std::vector<int64_t>, ViewRef> views;  // index prefix -> view of that region
    // Hash of each 64 KiB chunk of base, valid where `fresh` (sized on the first hash).
    std::vector<uint64_t> chunk;
    std::vector<char> fresh;
  };
  // Base bytes [off, off + n) changed: their chunks' hashes are stale.
  static void changed(Var& v, size_t off, size_t n);
  void mark(Var& v, const BoundArray& b, ByteRange r) const;
  Var& var(const std::string& name);
  // The view's bytes now (the BO's current mapping).
  const uint8_t* bytes_of(ViewRef& w) const {
    if (backend_) w.data = backend_->host_bytes(w.bo);
    return w.data;
  }
  Backend* backend_ = nullptr;
  bool chunk_hashes_ = true;
  long chunks_hashed_ = 0, chunks_kept_ = 0;
  std::vector<uint64_t> region_chunks_;  // hash()'s chunk hashes of the region asked for
  size_t offset(const Var& v, const std::vector<int64_t>& index) const;
  size_t region_bytes(const Var& v, size_t depth) const;
  void settle(Var& v, const std::vector<int64_t>& index);
  std::map<std::string, Var> vars_;
  std::vector<std::vector<uint8_t>> scratch_;
};

}  // namespace bod
