#include "runner/host_data.h"

#include <algorithm>

#include "model/init.h"
#include "model/tensor_io.h"

namespace bod {

namespace {
Error named(const TensorDecl& t, const Error& e) {
  return Error{e.where, e.what + " (tensor " + t.name + " at " + t.path + ")", e.code};
}

}  // namespace

Status HostData::load_one(const Model& m, const TensorDecl& t, Bytes& out) {
  if (!t.init) {  // the file's size and header first: a tiny file cannot make us allocate
    auto st = check_tensor_file(t.file, t.format, t.key, t.dtype, t.shape);
    if (!st) return named(t, st.error());
  }
  out.n = static_cast<size_t>(numel(t.shape)) * dtype_size(t.dtype);
  out.p = alloc_pages(out.n, false);  // not zeroed: filled or read below
  if (t.init) {
    fill_tensor(out.data(), t.dtype, numel(t.shape), *t.init, m.seed, t.name);
    return ok_status();
  }
  auto st = load_tensor_file(t.file, t.format, t.key, t.dtype, t.shape, out.data());
  if (!st) return named(t, st.error());
  return ok_status();
}

Result<HostData> HostData::load(const Model& m) {
  HostData h;
  for (auto& t : m.tensors) BOD_CHECK(load_one(m, t, h.data_[t.name]));
  return h;
}

Status HostData::validate_files(const Model& m) {
  for (auto& t : m.tensors) {
    if (t.init) continue;
    Bytes tmp;
    BOD_CHECK(load_one(m, t, tmp));
  }
  return ok_status();
}

TensorRef HostData::tensor(const Model& m, const BoundArray& b) const {
  auto t = bound_type(m, b).value();
  const TensorDecl* d = m.tensor(b.name);
  size_t off = 0, stride = static_cast<size_t>(numel(d->shape)) * dtype_size(d->dtype);
  for (size_t i = 0; i < b.index.size(); ++i) {
    stride /= static_cast<size_t>(d->shape[i]);
    off += static_cast<size_t>(b.index[i]) * stride;
  }
  t.data = data_.at(b.name).p.get() + off;
  if (b.nrows >= 0) {  // t already has the range's shape; step over the rows before it
    size_t row_bytes = t.bytes() / static_cast<size_t>(b.nrows);
    t.data += static_cast<size_t>(b.row0) * row_bytes;
  }
  return t;
}

}  // namespace bod
