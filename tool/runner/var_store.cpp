#include "runner/var_store.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/hash.h"
#include "model/init.h"

namespace bod {

namespace {
bool is_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}
}  // namespace

VarStore::VarStore(const Model& m, Backend* backend) : backend_(backend) {
  for (auto& d : m.vars) {
    Var v{&d,
          std::vector<uint8_t>(static_cast<size_t>(numel(d.shape)) * dtype_size(d.dtype)),
          {},
          {},
          {}};
    if (d.init)
      fill_tensor(v.base.data(), d.dtype, numel(d.shape), *d.init, m.seed, "var:" + d.name);
    vars_.emplace(d.name, std::move(v));
  }
}

VarStore::Var& VarStore::var(const std::string& name) {
  return vars_.at(name);
}

size_t VarStore::region_bytes(const Var& v, size_t depth) const {
  int64_t n = 1;
  for (size_t i = depth; i < v.decl->shape.size(); ++i) n *= v.decl->shape[i];
  return static_cast<size_t>(n) * dtype_size(v.decl->dtype);
}

size_t VarStore::offset(const Var& v, const std::vector<int64_t>& index) const {
  size_t off = 0;
  for (size_t i = 0; i < index.size(); ++i)
    off += static_cast<size_t>(index[i]) * region_bytes(v, i + 1);
  return off;
}

TensorRef VarStore::read(const BoundArray& b, const StaleViewFn& on_stale, int* view_call) {
  if (view_call) *view_call = 0;
  Var& v = var(b.name);
  Shape shape(v.decl->shape.begin() + static_cast<long>(b.index.size()), v.decl->shape.end());
  size_t bytes = region_bytes(v, b.index.size());
  auto check = [&](const std::vector<int64_t>& key, ViewRef& w) {
    if (w.reported || hash_bytes(bytes_of(w), w.bytes) == w.hash) return;
    std::string name = b.name;
    for (auto i : key) name += "[" + std::to_string(i) + "]";
    on_stale(name, w);
  };
  // A view covering the whole region: read straight from BO memory.
  for (auto& [key, w] : v.views)
    if (is_prefix(key, b.index)) {
      check(key, w);
      if (view_call) *view_call = w.call->number;
      return slice_rows(
          TensorRef{const_cast<uint8_t*>(bytes_of(w)) + offset(v, b.index) - offset(v, key),
                    v.decl->dtype, shape},
          b.row0, b.nrows);
    }
  uint8_t* base = v.base.data() + offset(v, b.index);
  bool inside = false;
  // A view inside the region but outside its row range is not read.
  auto in_range = [&](const std::vector<int64_t>& key) {
    if (b.nrows < 0 || key.size() <= b.index.size()) return true;
    int64_t row = key[b.index.size()];
    return row >= b.row0 && row < b.row0 + b.nrows;
  };
  for (auto& [key, w] : v.views) inside = inside || (is_prefix(b.index, key) && in_range(key));
  if (!inside) return slice_rows(TensorRef{base, v.decl->dtype, shape}, b.row0, b.nrows);
  // Views inside the region: assemble a copy (base bytes overlaid with each view's bytes).
  scratch_.emplace_back(base, base + bytes);
  auto& out = scratch_.back();
  for (auto& [key, w] : v.views) {
    if (!is_prefix(b.index, key) || !in_range(key)) continue;
    check(key, w);
    if (view_call && !*view_call) *view_call = w.call->number;
    std::memcpy(out.data() + offset(v, key) - offset(v, b.index), bytes_of(w), w.bytes);
  }
  if (scratch_.size() > 64) scratch_.erase(scratch_.begin());
  return slice_rows(TensorRef{out.data(), v.decl->dtype, shape}, b.row0, b.nrows);
}

void VarStore::changed(Var& v, size_t off, size_t n) {
  if (v.fresh.empty() || n == 0 || off >= v.base.size()) return;
  n = std::min(n, v.base.size() - off);
  for (size_t c = off / kHashChunk; c <= (off + n - 1) / kHashChunk; ++c) v.fresh[c] = 0;
}

uint64_t VarStore::hash(const std::string& name, const uint8_t* data, size_t n) {
  Var& v = var(name);
  const uint8_t* base = v.base.data();
  // Inside the var's own memory (compared as addresses: `data` may point anywhere).
  auto at = reinterpret_cast<uintptr_t>(data), from = reinterpret_cast<uintptr_t>(base);
  bool own = at >= from && at - from <= v.base.size() && n <= v.base.size() - (at - from);
  if (!chunk_hashes_ || !own || n <= kHashChunk || (at - from) % kHashChunk)
    return hash_bytes(data, n);
  if (v.fresh.empty()) {
    v.chunk.assign(hash_chunk_count(v.base.size()), 0);
    v.fresh.assign(v.chunk.size(), 0);
  }
  size_t first = (at - from) / kHashChunk, k = hash_chunk_count(n);
  std::vector<uint64_t>& h = region_chunks_;  // kept between calls: no allocation per hash
  h.resize(k);
  for (size_t i = 0; i < k; ++i) {
    size_t len = std::min(kHashChunk, n - i * kHashChunk), c = first + i;
    size_t var_len = std::min(kHashChunk, v.base.size() - c * kHashChunk);
    if (len != var_len) {  // the region ends inside this chunk of the var: not the var's chunk
      h[i] = hash_chunk(data + i * kHashChunk, len);
      continue;
    }
    if (v.fresh[c]) {
      ++chunks_kept_;
    } else {
      v.chunk[c] = hash_chunk(base + c * kHashChunk, len), v.fresh[c] = 1;
      ++chunks_hashed_;
    }
    h[i] = v.chunk[c];
  }
  return combine_chunk_hashes(h.data(), k);
}

void VarStore::settle(Var& v, const std::vector<int64_t>& index) {
  for (auto it = v.views.begin(); it != v.views.end();) {
    if (is_prefix(it->first, index) && it->first != index) {  // covers the region: copy in
      changed(v, offset(v, it->first), it->second.bytes);
      std::memcpy(v.base.data() + offset(v, it->first), bytes_of(it->second), it->second.bytes);
      it = v.views.erase(it);
    } else if (is_prefix(index, it->first)) {  // inside the region: superseded
      it = v.views.erase(it);
    } else {
      ++it;
    }
  }
}

TensorRef VarStore::write(const BoundArray& b) {
  return write(b, ByteRange{0, SIZE_MAX});
}

TensorRef VarStore::write(const BoundArray& b, ByteRange changed_bytes) {
  Var& v = var(b.name);
  settle(v, b.index);
  mark(v, b, changed_bytes);
  Shape shape(v.decl->shape.begin() + static_cast<long>(b.index.size()), v.decl->shape.end());
  return TensorRef{v.base.data() + offset(v, b.index), v.decl->dtype, shape};
}

void VarStore::mark_changed(const BoundArray& b, ByteRange changed_bytes) {
  mark(var(b.name), b, changed_bytes);
}

void VarStore::mark(Var& v, const BoundArray& b, ByteRange r) const {
  if (v.fresh.empty()) return;  // never hashed by chunks: nothing kept to invalidate
  size_t off = offset(v, b.index), bytes = region_bytes(v, b.index.size());
  if (r.offset < bytes) changed(v, off + r.offset, std::min(r.bytes, bytes - r.offset));
}

void VarStore::keep_view(const BoundArray& b, const ViewRef& w) {
  Var& v = var(b.name);
  settle(v, b.index);
  v.views[b.index] = w;
}

}  // namespace bod
