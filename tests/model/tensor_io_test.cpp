#include "model/tensor_io.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace bod {
namespace {

namespace fs = std::filesystem;

class TensorIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "bod_tensor_io_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  std::string write_raw(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string read_raw(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  // Loads and expects failure with where == p and a message containing `frag`.
  static void expect_error(const std::string& p, const std::string& format, const std::string& key,
                           DType dt, const Shape& shape, const std::string& frag) {
    std::vector<uint8_t> buf(static_cast<size_t>(numel(shape)) * dtype_size(dt) + 1);
    Status st = load_tensor_file(p, format, key, dt, shape, buf.data());
    ASSERT_FALSE(st.ok()) << "expected failure containing: " << frag;
    EXPECT_EQ(st.error().where, p);
    EXPECT_EQ(st.error().code, Exit::bad_input);
    EXPECT_NE(st.error().what.find(frag), std::string::npos) << st.error().what;
  }

  std::string dir_;
};

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + salt);
  return v;
}

std::string le32(uint32_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 4);
}
std::string le64(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 8);
}

// An npy file exactly as NumPy 1.x writes it (v1, header padded to 64 bytes).
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string d = dict;
  while ((10 + d.size() + 1) % 64) d += ' ';
  d += '\n';
  std::string h = "\x93NUMPY\x01";
  h += '\0';
  h += static_cast<char>(d.size() & 0xff);
  h += static_cast<char>(d.size() >> 8);
  return h + d + data;
}

// A safetensors file with a hand-written header.
std::string safetensors(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

const DType kAll[] = {DType::bf16, DType::f32, DType::i32, DType::i8};

TEST_F(TensorIoTest, BinRoundTripsEveryDtype) {
  for (DType dt : kAll) {
    Shape shape{3, 5};
    auto src = pattern(15 * dtype_size(dt), 1);
    std::string p = path(std::string("t_") + dtype_name(dt) + ".bin");
    ASSERT_TRUE(save_bin(p, src.data(), src.size()).ok());
    std::vector<uint8_t> dst(src.size());
    Status st = load_tensor_file(p, "bin", "", dt, shape, dst.data());
    ASSERT_TRUE(st.ok()) << st.error().line();
    EXPECT_EQ(dst, src) << dtype_name(dt);
  }
}

TEST_F(TensorIoTest, NpyRoundTripsEveryDtypeAndRank) {
  for (DType dt : kAll) {
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3}, Shape{2, 1, 4}, Shape{0, 3}}) {
      auto src = pattern(static_cast<size_t>(numel(shape)) * dtype_size(dt), 3);
      std::string p = path("t.npy");
      ASSERT_TRUE(save_npy(p, dt, shape, src.data()).ok());
      EXPECT_EQ((read_raw(p).size() - src.size()) % 64, 0u) << "data aligned to 64 bytes";
      std::vector<uint8_t> dst(src.size());
      Status st = load_tensor_file(p, "npy", "", dt, shape, dst.data());
      ASSERT_TRUE(st.ok()) << st.error().line();
      EXPECT_EQ(dst, src) << dtype_name(dt) << " " << shape_str(shape);
    }
  }
}

TEST_F(TensorIoTest, NpyWriterMatchesNumpyHeader) {
  uint8_t d[24] = {};
  ASSERT_TRUE(save_npy(path("a.npy"), DType::f32, {2, 3}, d).ok());
  std::string s = read_raw(path("a.npy"));
  EXPECT_EQ(s.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(s.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(s.size(), 128u + 24);
  EXPECT_EQ(s[127], '\n');
  ASSERT_TRUE(save_npy(path("b.npy"), DType::bf16, {4}, d).ok());
  EXPECT_NE(read_raw(path("b.npy")).find("'descr': '<u2'"), std::string::npos);
  EXPECT_NE(read_raw(path("b.npy")).find("'shape': (4,)"), std::string::npos);
}

TEST_F(TensorIoTest, NpyF32ConvertsToBf16) {
  std::vector<float> v{1.0f, 1.00390625f, -2.5f, 3.14159f, 1e30f, -0.0f};
  std::string p = write_raw(
      "f.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats(v)));
  std::vector<uint16_t> out(6);
  Status st =
      load_tensor_file(p, "npy", "", DType::bf16, {2, 3}, reinterpret_cast<uint8_t*>(out.data()));
  ASSERT_TRUE(st.ok()) << st.error().line();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(out[i], f32_to_bf16(v[i])) << i;
}

TEST_F(TensorIoTest, NpyAcceptsBf16AliasesAndV2Header) {
  std::string data("\x80\x3f\x00\x40", 4);  // bf16 1.0, 2.0
  for (const char* descr : {"<i2", "|V2", "<u2"}) {
    std::string p = write_raw("v.npy", npy_v1(std::string("{'descr': '") + descr +
                                                  "', 'fortran_order': False, 'shape': (2,), }",
                                              data));
    uint16_t out[2] = {};
    Status st = load_tensor_file(p, "npy", "", DType::bf16, {2}, reinterpret_cast<uint8_t*>(out));
    ASSERT_TRUE(st.ok()) << descr << ": " << st.error().line();
    EXPECT_EQ(bf16_to_f32(out[0]), 1.0f);
    EXPECT_EQ(bf16_to_f32(out[1]), 2.0f);
  }
  std::string dict = "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2L,)}\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + le32(static_cast<uint32_t>(dict.size())) +
                   dict + le32(7) + le32(static_cast<uint32_t>(-9));
  std::string p = write_raw("v2.npy", v2);
  int32_t out[2] = {};
  Status st = load_tensor_file(p, "npy", "", DType::i32, {2}, reinterpret_cast<uint8_t*>(out));
  ASSERT_TRUE(st.ok()) << st.error().line();
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], -9);
}

TEST_F(TensorIoTest, SafetensorsRoundTripsSeveralTensors) {
  auto a = pattern(6 * 2, 1), b = pattern(4 * 4, 2), c = pattern(3 * 4, 3), d = pattern(5, 4);
  std::string p = path("m.safetensors");
  ASSERT_TRUE(save_safetensors(p, {{"w.bf16", DType::bf16, {2, 3}, a.data()},
                                   {"w.f32", DType::f32, {4}, b.data()},
                                   {"ids", DType::i32, {1, 3}, c.data()},
                                   {"q", DType::i8, {5}, d.data()}})
                  .ok());
  struct Case {
    const char* key;
    DType dt;
    Shape shape;
    const std::vector<uint8_t>* want;
  };
  for (const Case& k : {Case{"w.bf16", DType::bf16, {2, 3}, &a}, Case{"w.f32", DType::f32, {4}, &b},
                        Case{"ids", DType::i32, {1, 3}, &c}, Case{"q", DType::i8, {5}, &d}}) {
    std::vector<uint8_t> out(k.want->size());
    Status st = load_tensor_file(p, "safetensors", k.key, k.dt, k.shape, out.data());
    ASSERT_TRUE(st.ok()) << st.error().line();
    EXPECT_EQ(out, *k.want) << k.key;
  }
  EXPECT_EQ(read_raw(p).size() % 8, (6 * 2 + 16 + 12 + 5) % 8) << "header padded to 8 bytes";
}

TEST_F(TensorIoTest, SafetensorsF32ConvertsToBf16AndSkipsMetadata) {
  std::vector<float> v{0.1f, -7.75f, 65504.0f};
  std::string hdr =
      R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[3],"data_offsets":[4,16]}})";
  std::string p = write_raw("c.safetensors", safetensors(hdr, std::string(4, '\0') + floats(v)));
  uint16_t out[3] = {};
  Status st =
      load_tensor_file(p, "safetensors", "x", DType::bf16, {3}, reinterpret_cast<uint8_t*>(out));
  ASSERT_TRUE(st.ok()) << st.error().line();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[i], f32_to_bf16(v[i]));
}

// ---- errors ---------------------------------------------------------------------------------

TEST_F(TensorIoTest, MissingFileAndDirectory) {
  expect_error(path("nope.bin"), "bin", "", DType::f32, {2},
               "cannot open: No such file or directory");
  expect_error(dir_, "npy", "", DType::f32, {2}, "is a directory");
}

TEST_F(TensorIoTest, UnknownFormat) {
  std::string p = write_raw("x.pt", "1234");
  expect_error(p, "pt", "", DType::f32, {1}, "unknown tensor file format 'pt'");
}

TEST_F(TensorIoTest, BinSizeMustMatchExactly) {
  std::string p = write_raw("short.bin", std::string(10, 'x'));
  expect_error(p, "bin", "", DType::bf16, {3, 2},
               "truncated: 10 bytes, expected 12 (shape [3,2] bf16)");
  p = write_raw("long.bin", std::string(14, 'x'));
  expect_error(p, "bin", "", DType::bf16, {3, 2}, "14 bytes, expected 12 (shape [3,2] bf16)");
}

TEST_F(TensorIoTest, NpyBadMagicAndTruncation) {
  std::string p = write_raw("bad.npy", "PK\x03\x04 this is a zip file, not npy");
  expect_error(p, "npy", "", DType::f32, {2}, "bad magic");
  p = write_raw("tiny.npy", "\x93NUM");
  expect_error(p, "npy", "", DType::f32, {2}, "truncated");
  std::string good =
      npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", floats({1, 2, 3, 4}));
  p = write_raw("cut.npy", good.substr(0, good.size() - 3));
  expect_error(p, "npy", "", DType::f32, {4}, "truncated: 13 bytes, expected 16");
  p = write_raw("cuthdr.npy", good.substr(0, 30));
  expect_error(p, "npy", "", DType::f32, {4}, "exceeds the file size 30");
}

TEST_F(TensorIoTest, NpyFortranOrderRejected) {
  std::string p = write_raw(
      "f.npy",
      npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", floats({1, 2, 3, 4})));
  expect_error(p, "npy", "", DType::f32, {2, 2}, "Fortran order");
}

TEST_F(TensorIoTest, NpyShapeMismatchReportsBoth) {
  std::string p = write_raw(
      "s.npy",
      npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", std::string(48, '\0')));
  expect_error(p, "npy", "", DType::f32, {12},
               "npy shape [3,4] (12 elements) does not match expected [12]");
  expect_error(p, "npy", "", DType::f32, {3, 5}, "expected [3,5] (15 elements)");
}

TEST_F(TensorIoTest, NpyDtypeProblems) {
  std::string p = write_raw(
      "i.npy",
      npy_v1("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')));
  expect_error(p, "npy", "", DType::f32, {2}, "file holds npy '<i4' data, expected f32");
  p = write_raw("d.npy", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                std::string(16, '\0')));
  expect_error(p, "npy", "", DType::f32, {2}, "unsupported npy dtype '<f8'");
  p = write_raw("g.npy", npy_v1("not a dict at all", ""));
  expect_error(p, "npy", "", DType::f32, {2}, "npy header is not a Python dict");
  p = write_raw("s.npy",
                npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", ""));
  expect_error(p, "npy", "", DType::f32, {2}, "structured dtypes");
}

TEST_F(TensorIoTest, SafetensorsMissingKeyListsAvailable) {
  std::vector<NamedTensor> ts;
  std::vector<std::string> names;
  uint8_t z[4] = {};
  for (int i = 0; i < 7; ++i) names.push_back("t" + std::to_string(i));
  for (auto& n : names) ts.emplace_back(n, DType::f32, Shape{1}, z);
  std::string p = path("k.safetensors");
  ASSERT_TRUE(save_safetensors(p, ts).ok());
  expect_error(p, "safetensors", "t9", DType::f32, {1},
               "no tensor 't9' in safetensors file; available: t0, t1, t2, t3, t4 (and 2 more)");
  expect_error(p, "safetensors", "", DType::f32, {1}, "no tensor ''");
}

TEST_F(TensorIoTest, SafetensorsOffsetsBeyondFile) {
  std::string hdr = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  std::string p = write_raw("o.safetensors", safetensors(hdr, std::string(10, '\0')));
  expect_error(p, "safetensors", "x", DType::f32, {4},
               "truncated: tensor 'x' data_offsets [0,16] end beyond the 10 data bytes");
  hdr = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})";
  p = write_raw("o2.safetensors", safetensors(hdr, std::string(16, '\0')));
  expect_error(p, "safetensors", "x", DType::f32, {4}, "cover 12 bytes, expected 16");
  hdr = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,16]}})";
  p = write_raw("o3.safetensors", safetensors(hdr, std::string(16, '\0')));
  expect_error(p, "safetensors", "x", DType::f32, {4}, "negative range");
}

TEST_F(TensorIoTest, SafetensorsAbsurdHeaderLength) {
  std::string p = write_raw("h.safetensors", le64(uint64_t{1} << 60) + "{}");
  expect_error(p, "safetensors", "x", DType::f32, {1},
               "safetensors header length 1152921504606846976 exceeds the file size 10");
  p = write_raw("e.safetensors", "abc");
  expect_error(p, "safetensors", "x", DType::f32, {1}, "truncated: 3 bytes");
}

TEST_F(TensorIoTest, SafetensorsGarbageHeader) {
  std::string p = write_raw("g.safetensors", safetensors("{\"x\": [1, 2", ""));
  expect_error(p, "safetensors", "x", DType::f32, {1}, "header is not valid JSON");
  p = write_raw("a.safetensors", safetensors("[1,2,3]", ""));
  expect_error(p, "safetensors", "x", DType::f32, {1}, "header is not a JSON object");
  p = write_raw("n.safetensors", safetensors(R"({"x": 5})", ""));
  expect_error(p, "safetensors", "x", DType::f32, {1}, "entry must be an object");
  p = write_raw("s.safetensors",
                safetensors(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", ""));
  expect_error(p, "safetensors", "x", DType::f32, {1}, "not a non-negative integer");
}

TEST_F(TensorIoTest, SafetensorsDtypeAndShapeChecks) {
  std::string p = write_raw("d.safetensors",
                            safetensors(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})",
                                        std::string(4, '\0')));
  expect_error(p, "safetensors", "x", DType::bf16, {2}, "unsupported dtype F16");
  p = write_raw("i.safetensors",
                safetensors(R"({"x":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                            std::string(8, '\0')));
  expect_error(p, "safetensors", "x", DType::bf16, {2}, "file holds I32 data, expected bf16");
  expect_error(p, "safetensors", "x", DType::i32, {1, 2},
               "safetensors shape [2] (2 elements) does not match expected [1,2]");
}

// Every prefix and many random corruptions of valid files must fail cleanly, never crash.
TEST_F(TensorIoTest, CorruptFilesNeverCrash) {
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(v.data());
  ASSERT_TRUE(save_npy(path("a.npy"), DType::f32, {2, 3}, raw).ok());
  ASSERT_TRUE(save_safetensors(path("a.st"), {{"x", DType::f32, {2, 3}, raw}}).ok());
  std::mt19937 rng(7);
  for (auto [file, fmt] : {std::pair{"a.npy", "npy"}, std::pair{"a.st", "safetensors"}}) {
    std::string good = read_raw(path(file));
    std::vector<uint8_t> out(24);
    for (size_t n = 0; n < good.size(); ++n) {
      std::string p = write_raw("cut", good.substr(0, n));
      EXPECT_FALSE(load_tensor_file(p, fmt, "x", DType::f32, {2, 3}, out.data()).ok()) << n;
    }
    for (int trial = 0; trial < 2000; ++trial) {
      std::string bad = good;
      for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
      std::string p = write_raw("mut", bad);
      Status st = load_tensor_file(p, fmt, "x", DType::bf16, {2, 3}, out.data());
      if (!st.ok()) {
        EXPECT_EQ(st.error().where, p);
      }
    }
  }
}

}  // namespace
}  // namespace bod
