// The runner's hash bookkeeping, so that no bytes are hashed twice when nothing changed them:
// what is known of each reuse BO's device bytes (their hash, and above one 64 KiB chunk the
// chunk hashes, kept until a host write or a dispatch changes them), and the hashes of host
// arrays that never change during a run (model tensors, the zeros).
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "plan/body.h"
#include "runtime/backend.h"

namespace bod {

// Hashes of the reuse engine's BOs' device bytes [0, n). A BO's bytes change only by a host
// write (written) or a dispatch (after_dispatch): until then its hash is known.
class BoHashes {
 public:
  // `chunk_hashes` false: every BO is hashed whole, every time (RunOptions::chunk_hashes).
  BoHashes(Backend& b, bool chunk_hashes) : b_(b), chunk_hashes_(chunk_hashes) {}
  // The hash of `bo`'s device bytes [0, n): known, or hashed now and remembered.
  uint64_t hash(BoHandle bo, size_t n);
  // Hashes `bo`'s device bytes [0, n) after a dispatch and remembers it. `rows`: the rows the
  // body wrote (its access analysis), when they are known; only their chunks are read again.
  // Null: any byte may have changed.
  uint64_t after_dispatch(BoHandle bo, size_t n, const SlotAccess* rows);
  // The hash of `bo`'s device bytes [0, n), valid until a write or a dispatch changes them.
  // Where two slots share a BO, the last one hashed stays known.
  void remember(BoHandle bo, size_t n, uint64_t h) { known_[bo] = {n, h}; }
  // The reuse engine's writes changed these BOs: what is known of them is what was written.
  void note_writes(const Prepared& rp);
  // 64 KiB chunks read, and chunks kept because the body wrote other rows of the slot only.
  long chunks_hashed() const { return chunks_hashed_; }
  long chunks_kept() const { return chunks_kept_; }

 private:
  // hash_bytes of `bo`'s device bytes [0, n), through the BO's kept chunk hashes above one
  // chunk (see after_dispatch).
  uint64_t chunked_hash(BoHandle bo, size_t n, const SlotAccess* rows);
  Backend& b_;
  bool chunk_hashes_;
  // The hash of each BO's first n bytes, kept from the last write or hash of them.
  std::unordered_map<BoHandle, std::pair<size_t, uint64_t>> known_;
  // Chunk hashes of BOs' device bytes [0, n) (chunked_hash), until a host write drops them.
  struct Chunks {
    size_t n = 0;
    std::vector<uint64_t> h;
  };
  std::unordered_map<BoHandle, Chunks> chunks_;
  long chunks_hashed_ = 0, chunks_kept_ = 0;
};

// Hashes of the host arrays a call hands the engines. Model tensors and the zeros never change
// during a run (HostSlot::stable): theirs are taken once per (address, size); vars and views
// are hashed every time.
class HostHashes {
 public:
  uint64_t hash(const HostSlot& h);

 private:
  std::map<std::pair<const uint8_t*, size_t>, uint64_t> stable_;
};

}  // namespace bod
