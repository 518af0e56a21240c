#include "runner/bo_hashes.h"

#include <algorithm>

#include "core/hash.h"

namespace bod {

uint64_t BoHashes::hash(BoHandle bo, size_t n) {
  auto it = known_.find(bo);
  if (it != known_.end() && it->second.first == n) return it->second.second;
  uint64_t h = chunked_hash(bo, n, nullptr);
  remember(bo, n, h);
  return h;
}

uint64_t BoHashes::after_dispatch(BoHandle bo, size_t n, const SlotAccess* rows) {
  uint64_t h = chunked_hash(bo, n, rows);
  remember(bo, n, h);
  return h;
}

void BoHashes::note_writes(const Prepared& rp) {
  for (auto& w : rp.slots) {
    if (w.bo == ReuseEngine::kNone || !w.written) continue;
    chunks_.erase(w.bo);
    remember(w.bo, w.written_bytes, w.written_hash);
  }
}

// Above one chunk (and with chunk hashes on) the BO's chunk hashes are kept until a host write
// drops them (note_writes); after a dispatch whose body wrote only some rows of the slot only
// those rows' chunks are read again.
uint64_t BoHashes::chunked_hash(BoHandle bo, size_t n, const SlotAccess* rows) {
  const uint8_t* d = b_.device_bytes(bo);
  if (!chunk_hashes_ || n <= kHashChunk) return hash_bytes(d, n);
  Chunks& e = chunks_[bo];
  size_t k = hash_chunk_count(n);
  long read = 0;
  auto chunk = [&](size_t c) {
    e.h[c] = hash_chunk(d + c * kHashChunk, std::min(kHashChunk, n - c * kHashChunk));
    ++read;
  };
  bool partial =
      rows && e.n == n && rows->total_rows > 0 && n % static_cast<size_t>(rows->total_rows) == 0;
  if (!partial) {
    e.n = n;
    e.h.resize(k);
    for (size_t c = 0; c < k; ++c) chunk(c);
  } else {
    // rb: bytes per row; next: the first chunk not yet read
    size_t rb = n / static_cast<size_t>(rows->total_rows), next = 0;
    for (auto [r0, r1] : rows->written_rows) {
      size_t from = static_cast<size_t>(r0) * rb;
      size_t to = std::min(n, static_cast<size_t>(r1) * rb);
      for (size_t c = std::max(from / kHashChunk, next); c * kHashChunk < to; ++c)
        chunk(c), next = c + 1;
    }
    chunks_kept_ += static_cast<long>(k) - read;
  }
  chunks_hashed_ += read;
  return combine_chunk_hashes(e.h.data(), k);
}

uint64_t HostHashes::hash(const HostSlot& h) {
  if (!h.stable || h.bytes == 0) return hash_bytes(h.data, h.bytes);
  auto [it, fresh] = stable_.try_emplace({h.data, h.bytes}, 0);
  if (fresh) it->second = hash_bytes(h.data, h.bytes);
  return it->second;
}

}  // namespace bod
