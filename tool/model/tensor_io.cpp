#include "model/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>

namespace bod {
namespace {

// The formats are little-endian on disk and we copy bytes straight into tensors.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tensor_io assumes a little-endian host");

constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;  // the format's own limit (100 MB)

Error fail(const std::string& path, std::string what) {
  return Error{path, std::move(what), Exit::bad_input};
}

std::string errno_str() {
  return std::strerror(errno);
}

// "shape [3,4] bf16": how the caller's expectation is quoted in messages.
std::string desc(const Shape& s, DType t) {
  return "shape " + shape_str(s) + " " + dtype_name(t);
}

// numel with overflow detection (file shapes are untrusted); nullopt on overflow/negative.
std::optional<uint64_t> safe_bytes(const Shape& s, uint64_t elem) {
  uint64_t n = elem;
  for (int64_t d : s) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

// Read-only file with positional reads. Refuses directories and special files up front, so
// open() never blocks (FIFOs) and reads never fail with EISDIR.
class InFile {
 public:
  explicit InFile(std::string path) : path_(std::move(path)) {}
  ~InFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  // O_NONBLOCK: opening a FIFO returns at once (and is then refused); the type is checked on
  // the opened file, so it cannot be swapped between the check and the reads.
  Status open() {
    struct stat st;
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd_ < 0) return fail(path_, "cannot open: " + errno_str());
    if (::fstat(fd_, &st) != 0) return fail(path_, "cannot stat: " + errno_str());
    if (S_ISDIR(st.st_mode)) return fail(path_, "is a directory, expected a tensor file");
    if (!S_ISREG(st.st_mode))
      return fail(path_,
                  "is not a regular file (a device, FIFO or socket), expected a tensor file");
    size_ = static_cast<uint64_t>(st.st_size);
    return ok_status();
  }
  uint64_t size() const { return size_; }

  // Reads exactly n bytes at offset `off` (callers validate ranges against size() first).
  Status read(uint64_t off, void* dst, size_t n) const {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
      size_t chunk = std::min<size_t>(n, size_t{1} << 30);
      ssize_t got = ::pread(fd_, p, chunk, static_cast<off_t>(off));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        return fail(path_, "read failed at byte " + std::to_string(off) + ": " + errno_str());
      if (got == 0)
        return fail(path_, "truncated: unexpected end of file at byte " + std::to_string(off));
      p += got, off += static_cast<uint64_t>(got), n -= static_cast<size_t>(got);
    }
    return ok_status();
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Reads n elements of `src` type at `off` into dst as `dst_t`. Only src == dst_t and
// f32 -> bf16 are valid; callers check with loadable() first.
Status read_elements(const InFile& f, uint64_t off, DType src, DType dst_t, int64_t n,
                     uint8_t* dst) {
  if (src == dst_t) return f.read(off, dst, static_cast<size_t>(n) * dtype_size(src));
  std::vector<float> buf(static_cast<size_t>(std::min<int64_t>(n, 1 << 20)));
  for (int64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min<int64_t>(n - done, static_cast<int64_t>(buf.size())));
    auto st = f.read(off + static_cast<uint64_t>(done) * 4, buf.data(), k * 4);
    if (!st) return st;
    for (size_t i = 0; i < k; ++i) {
      uint16_t h = f32_to_bf16(buf[i]);
      std::memcpy(dst + 2 * (done + static_cast<int64_t>(i)), &h, 2);
    }
    done += static_cast<int64_t>(k);
  }
  return ok_status();
}

bool loadable(DType src, DType dst) {
  return src == dst || (src == DType::f32 && dst == DType::bf16);
}

std::string dtype_mismatch(const std::string& found, DType want) {
  return "file holds " + found + " data, expected " + dtype_name(want) +
         " (only matching dtypes and f32 -> bf16 can be loaded)";
}

std::string shape_mismatch(const char* fmt, const Shape& got, const Shape& want) {
  auto g = safe_bytes(got, 1);
  std::string gn = g ? std::to_string(*g) : "overflowing";
  return std::string(fmt) + " shape " + shape_str(got) + " (" + gn +
         " elements) does not match expected " + shape_str(want) + " (" +
         std::to_string(numel(want)) + " elements)";
}

// Checks that the data region [start, start+want) is exactly the rest of the file.
std::optional<Error> check_data_size(const std::string& path, uint64_t have, uint64_t want,
                                     const std::string& what) {
  if (have < want)
    return fail(path, "truncated: " + std::to_string(have) + " bytes, expected " +
                          std::to_string(want) + " (" + what + ")");
  if (have > want)
    return fail(path, "too large: " + std::to_string(have) + " bytes, expected " +
                          std::to_string(want) + " (" + what + ")");
  return std::nullopt;
}

Status load_bin(const InFile& f, const std::string& path, DType dtype, const Shape& shape,
                uint8_t* dst) {
  uint64_t want = static_cast<uint64_t>(numel(shape)) * dtype_size(dtype);
  if (auto e = check_data_size(path, f.size(), want, desc(shape, dtype))) return *e;
  if (!dst) return ok_status();  // validation only
  return f.read(0, dst, want);
}

// ---- npy ------------------------------------------------------------------------------------

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

// Minimal parser for the Python dict literal NumPy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }. Returns an error text or "".
class NpyDictParser {
 public:
  explicit NpyDictParser(std::string_view s) : s_(s) {}

  std::string parse(NpyHeader& h) {
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    if (!eat('{')) return "npy header is not a Python dict";
    while (!eat('}')) {
      std::string key;
      if (!str(key) || !eat(':')) return "npy header dict is malformed near byte " + pos();
      if (key == "descr") {
        if (!str(h.descr))
          return "npy descr is not a simple dtype string (structured dtypes are not supported)";
        seen_descr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          h.fortran = true;
        else if (word("False"))
          h.fortran = false;
        else
          return "npy fortran_order is not True or False";
        seen_fortran = true;
      } else if (key == "shape") {
        if (!tuple(h.shape)) return "npy shape is not a tuple of non-negative integers";
        seen_shape = true;
      } else {
        return "npy header has unexpected key '" + key + "'";
      }
      if (!eat(',') && !peek('}')) return "npy header dict is malformed near byte " + pos();
    }
    if (!seen_descr || !seen_fortran || !seen_shape)
      return "npy header lacks one of 'descr', 'fortran_order', 'shape'";
    return "";
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool peek(char c) {
    ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  bool word(std::string_view w) {
    ws();
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool str(std::string& out) {
    ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    char q = s_[i_++];
    size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) return false;
    out = std::string(s_.substr(i_, end - i_));
    i_ = end + 1;
    return true;
  }
  bool tuple(Shape& out) {
    out.clear();
    if (!eat('(')) return false;
    while (!eat(')')) {
      ws();
      int64_t v = 0;
      size_t start = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return false;
        v = v * 10 + (s_[i_++] - '0');
      }
      if (i_ == start) return false;
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
      out.push_back(v);
      if (!eat(',') && !peek(')')) return false;
    }
    return true;
  }
  std::string pos() const { return std::to_string(i_); }

  std::string_view s_;
  size_t i_ = 0;
};

std::optional<DType> npy_dtype(const std::string& d) {
  if (d == "<f4") return DType::f32;
  if (d == "<i4") return DType::i32;
  if (d == "|i1") return DType::i8;
  if (d == "<u2" || d == "<i2" || d == "|V2" || d == "<V2") return DType::bf16;
  return std::nullopt;
}

Status load_npy(const InFile& f, const std::string& path, DType dtype, const Shape& shape,
                uint8_t* dst) {
  uint8_t pre[12] = {};
  if (f.size() < 10)
    return fail(path,
                "truncated: " + std::to_string(f.size()) + " bytes, too short for an npy header");
  if (auto st = f.read(0, pre, 10); !st) return st;
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0)
    return fail(path, "not an npy file: bad magic, expected \\x93NUMPY");
  uint8_t major = pre[6];
  if (major < 1 || major > 3)
    return fail(path, "npy version " + std::to_string(major) + "." + std::to_string(pre[7]) +
                          " is not supported, expected 1.x, 2.x or 3.x");
  uint64_t hlen, hstart;
  if (major == 1) {
    hlen = pre[8] | (uint64_t{pre[9]} << 8);
    hstart = 10;
  } else {
    if (f.size() < 12)
      return fail(path, "truncated: " + std::to_string(f.size()) +
                            " bytes, too short for an npy v2 header");
    if (auto st = f.read(10, pre + 10, 2); !st) return st;
    hlen = pre[8] | (uint64_t{pre[9]} << 8) | (uint64_t{pre[10]} << 16) | (uint64_t{pre[11]} << 24);
    hstart = 12;
  }
  if (hlen > f.size() - hstart)
    return fail(path, "truncated: npy header length " + std::to_string(hlen) +
                          " exceeds the file size " + std::to_string(f.size()));
  std::string text(hlen, '\0');
  if (auto st = f.read(hstart, text.data(), hlen); !st) return st;

  NpyHeader h;
  if (auto err = NpyDictParser(text).parse(h); !err.empty()) return fail(path, err);
  if (h.fortran)
    return fail(path,
                "npy array is in Fortran order, expected C order (fortran_order: False); "
                "save it with np.ascontiguousarray");
  auto src = npy_dtype(h.descr);
  if (!src)
    return fail(path, "unsupported npy dtype '" + h.descr +
                          "', expected <f4, <i4, |i1, or <u2/<i2/|V2 (bf16 bits)");
  if (!loadable(*src, dtype)) return fail(path, dtype_mismatch("npy '" + h.descr + "'", dtype));
  if (h.shape != shape) return fail(path, shape_mismatch("npy", h.shape, shape));

  uint64_t want = static_cast<uint64_t>(numel(shape)) * dtype_size(*src);
  uint64_t start = hstart + hlen;
  if (auto e = check_data_size(path, f.size() - start, want,
                               "npy data for shape " + shape_str(shape) + " '" + h.descr + "'"))
    return *e;
  if (!dst) return ok_status();  // validation only
  return read_elements(f, start, *src, dtype, numel(shape), dst);
}

// ---- safetensors ----------------------------------------------------------------------------

std::optional<DType> st_dtype(const std::string& d) {
  if (d == "BF16") return DType::bf16;
  if (d == "F32") return DType::f32;
  if (d == "I32") return DType::i32;
  if (d == "I8") return DType::i8;
  return std::nullopt;
}

const char* st_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "BF16";
    case DType::f32:
      return "F32";
    case DType::i32:
      return "I32";
    case DType::i8:
      return "I8";
  }
  return "?";
}

std::string available_keys(const nlohmann::json& hdr) {
  std::string r;
  size_t shown = 0, total = 0;
  for (auto it = hdr.begin(); it != hdr.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    if (++total <= 5) r += (shown++ ? ", " : "") + it.key();
  }
  if (total == 0) return "the file holds no tensors";
  if (total > 5) r += " (and " + std::to_string(total - 5) + " more)";
  return "available: " + r;
}

Status load_safetensors(const InFile& f, const std::string& path, const std::string& key,
                        DType dtype, const Shape& shape, uint8_t* dst) {
  using nlohmann::json;
  if (f.size() < 8)
    return fail(path, "truncated: " + std::to_string(f.size()) +
                          " bytes, too short for a safetensors header length");
  uint8_t lb[8];
  if (auto st = f.read(0, lb, 8); !st) return st;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | lb[i];
  if (hlen > f.size() - 8)
    return fail(path, "safetensors header length " + std::to_string(hlen) +
                          " exceeds the file size " + std::to_string(f.size()) +
                          " (not a safetensors file, or truncated)");
  if (hlen > kMaxSafetensorsHeader)
    return fail(path, "safetensors header length " + std::to_string(hlen) +
                          " exceeds the 100 MB limit of the format");
  std::string text(hlen, '\0');
  if (auto st = f.read(8, text.data(), hlen); !st) return st;
  json hdr = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (hdr.is_discarded()) return fail(path, "safetensors header is not valid JSON");
  if (!hdr.is_object()) return fail(path, "safetensors header is not a JSON object");

  std::string k = "tensor '" + key + "'";
  auto it = hdr.find(key);
  if (key.empty() || key == "__metadata__" || it == hdr.end())
    return fail(path, "no " + k + " in safetensors file; " + available_keys(hdr));
  const json& e = *it;
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    return fail(path, k + " entry must be an object with dtype, shape and data_offsets");
  const json& jd = e["dtype"];
  const json& js = e["shape"];
  const json& jo = e["data_offsets"];
  if (!jd.is_string()) return fail(path, k + " dtype is not a string");
  auto src = st_dtype(jd.get<std::string>());
  if (!src)
    return fail(path, k + " has unsupported dtype " + jd.get<std::string>() +
                          ", expected BF16, F32, I32 or I8");
  if (!loadable(*src, dtype))
    return fail(path, k + ": " + dtype_mismatch(jd.get<std::string>(), dtype));
  if (!js.is_array()) return fail(path, k + " shape is not an array");
  Shape fs;
  for (const auto& d : js) {
    if (!d.is_number_unsigned() ||
        d.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
      return fail(path, k + " shape has an entry that is not a non-negative integer");
    fs.push_back(d.get<int64_t>());
  }
  if (fs != shape) return fail(path, k + ": " + shape_mismatch("safetensors", fs, shape));
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
      !jo[1].is_number_unsigned())
    return fail(path, k + " data_offsets is not a pair of non-negative integers");
  uint64_t b = jo[0].get<uint64_t>(), en = jo[1].get<uint64_t>();
  std::string span = "[" + std::to_string(b) + "," + std::to_string(en) + "]";
  uint64_t want = static_cast<uint64_t>(numel(shape)) * dtype_size(*src);
  if (en < b || en - b != want)
    return fail(path, k + " data_offsets " + span + " cover " +
                          (en < b ? "a negative range" : std::to_string(en - b) + " bytes") +
                          ", expected " + std::to_string(want) + " (shape " + shape_str(shape) +
                          " " + jd.get<std::string>() + ")");
  uint64_t data_len = f.size() - 8 - hlen;
  if (en > data_len)
    return fail(path, "truncated: " + k + " data_offsets " + span + " end beyond the " +
                          std::to_string(data_len) + " data bytes in the file");
  if (!dst) return ok_status();  // validation only
  return read_elements(f, 8 + hlen + b, *src, dtype, numel(shape), dst);
}

// ---- writing --------------------------------------------------------------------------------

// Buffered output file whose every failure becomes an Error naming the path.
class OutFile {
 public:
  explicit OutFile(std::string path) : path_(std::move(path)) {}
  ~OutFile() {
    if (f_) std::fclose(f_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  Status open() {
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) return fail(path_, "cannot write: " + errno_str());
    return ok_status();
  }
  Status write(const void* p, size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f_) != n) return fail(path_, "cannot write: " + errno_str());
    return ok_status();
  }
  Status close() {
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) return fail(path_, "cannot write: " + errno_str());
    return ok_status();
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

Status write_file(const std::string& path, const std::string& head, const uint8_t* data, size_t n) {
  OutFile f(path);
  if (auto st = f.open(); !st) return st;
  if (auto st = f.write(head.data(), head.size()); !st) return st;
  if (auto st = f.write(data, n); !st) return st;
  return f.close();
}

}  // namespace

namespace {

// Loads into dst, or with dst == nullptr only checks the file (size, header, dtype, shape).
Status load_or_check(const std::string& path, const std::string& format, const std::string& key,
                     DType dtype, const Shape& shape, uint8_t* dst, bool size_first) {
  try {
    if (!safe_bytes(shape, dtype_size(dtype)))
      return fail(path, "expected shape " + shape_str(shape) + " is negative or too large");
    if (format != "bin" && format != "npy" && format != "safetensors")
      return fail(path,
                  "unknown tensor file format '" + format + "', expected bin, npy or safetensors");
    InFile f(path);
    if (auto st = f.open(); !st) return st;
    // The declared data must fit in the file whatever its header says (f32 data loaded as
    // bf16 only needs more): checked on the file's size, before the caller allocates.
    uint64_t declared = *safe_bytes(shape, dtype_size(dtype));
    if (size_first && f.size() < declared)
      return fail(path, "truncated: declared as shape " + shape_str(shape) + " " +
                            dtype_name(dtype) + " = " + std::to_string(declared) +
                            " bytes, but the file holds only " + std::to_string(f.size()) +
                            " bytes; expected a file with the whole tensor");
    if (format == "bin") return load_bin(f, path, dtype, shape, dst);
    if (format == "npy") return load_npy(f, path, dtype, shape, dst);
    return load_safetensors(f, path, key, dtype, shape, dst);
  } catch (const std::bad_alloc&) {
    return fail(path, "out of memory while reading the tensor file");
  } catch (const std::exception& e) {
    return fail(path, std::string("unexpected error while reading the tensor file: ") + e.what());
  }
}

}  // namespace

Status load_tensor_file(const std::string& path, const std::string& format, const std::string& key,
                        DType dtype, const Shape& shape, uint8_t* dst) {
  return load_or_check(path, format, key, dtype, shape, dst, false);
}

Status check_tensor_file(const std::string& path, const std::string& format, const std::string& key,
                         DType dtype, const Shape& shape) {
  return load_or_check(path, format, key, dtype, shape, nullptr, true);
}

Status save_bin(const std::string& path, const uint8_t* bytes, size_t n) {
  return write_file(path, "", bytes, n);
}

Status save_npy(const std::string& path, DType dtype, const Shape& shape, const uint8_t* data) {
  static const char* descr[] = {"<u2", "<f4", "<i4", "|i1"};  // indexed by DType
  std::string dims;  // Python tuple body: "3, 4", "12," or "" (scalar)
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict = std::string("{'descr': '") + descr[static_cast<int>(dtype)] +
                     "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + dict.size() + 1;       // magic+version+len, dict, '\n'
  dict.append((64 - total % 64) % 64, ' ');  // NumPy aligns data to 64 bytes
  dict += '\n';
  if (dict.size() > 0xffff) return fail(path, "npy header too long for format 1.0");
  std::string head = "\x93NUMPY";
  head += '\x01';
  head += '\x00';
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  auto bytes = safe_bytes(shape, dtype_size(dtype));
  if (!bytes) return fail(path, "shape " + shape_str(shape) + " is negative or too large");
  return write_file(path, head + dict, data, *bytes);
}

Status save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors) {
  nlohmann::json hdr = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& [name, dt, shape, data] : tensors) {
    (void)data;
    if (name == "__metadata__" || hdr.contains(name))
      return fail(path, "tensor name '" + name + "' is reserved or duplicated");
    auto bytes = safe_bytes(shape, dtype_size(dt));
    if (!bytes)
      return fail(path, "tensor '" + name + "' shape " + shape_str(shape) + " is invalid");
    hdr[name] = {{"dtype", st_name(dt)}, {"shape", shape}, {"data_offsets", {off, off + *bytes}}};
    off += *bytes;
  }
  std::string text = hdr.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep data 8-byte aligned, as the format does
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  OutFile f(path);
  if (auto st = f.open(); !st) return st;
  if (auto st = f.write(head.data(), 8); !st) return st;
  if (auto st = f.write(text.data(), text.size()); !st) return st;
  for (const auto& [name, dt, shape, data] : tensors) {
    (void)name;
    if (auto st = f.write(data, static_cast<size_t>(numel(shape)) * dtype_size(dt)); !st) return st;
  }
  return f.close();
}

}  // namespace bod
