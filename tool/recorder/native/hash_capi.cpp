// libbod_hash.so: bo-doctor's own XXH3 hashing (tool/core/hash*) behind a small C API, for the
// Python recorder (tool/recorder/python/bo_doctor/_hashing.py loads it with ctypes). The
// recorder's hashes and bo-doctor's are thus one implementation, picked per CPU at run time
// exactly as bo-doctor picks it (BOD_HASH_PATH honoured).
//
// Every function only reads the bytes it is given and writes only its `out` array.
#include <cstddef>
#include <cstdint>

#include "core/hash.h"

extern "C" {

// The version of this API; the recorder refuses a library whose version it does not know.
__attribute__((visibility("default"))) int bod_hash_api_version() {
  return 1;
}

// The trace hash of n bytes (docs/trace-format.md §8): plain XXH3-64 up to 64 KiB, above that
// the hash of the 64 KiB chunks' hashes.
__attribute__((visibility("default"))) uint64_t bod_hash_bytes(const void* data, size_t n) {
  return bod::hash_bytes(data, n);
}

// The chunk size of the trace hash (64 KiB).
__attribute__((visibility("default"))) size_t bod_hash_chunk_size() {
  return bod::kHashChunk;
}

// Plain XXH3-64 of each `block` bytes of data (the last block may be short) into out, which
// holds ceil(n / block) values (one, the hash of 0 bytes, when n is 0).
__attribute__((visibility("default"))) void bod_block_hashes(const void* data, size_t n,
                                                             size_t block, uint64_t* out) {
  if (block == 0) {  // one block: the whole
    out[0] = bod::hash_chunk(data, n);
    return;
  }
  bod::hash_blocks(data, n, block, out);
}

// The trace hash of an array from its k chunk hashes (k > 1), as bod_hash_bytes combines them.
__attribute__((visibility("default"))) uint64_t bod_combine_chunk_hashes(const uint64_t* h,
                                                                         size_t k) {
  return bod::combine_chunk_hashes(h, k);
}

}  // extern "C"
