// model.json top level: format/version, dims, tensors, vars, verify; then kernels and the
// program (loader_kernels.cpp, loader_program.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/input_file.h"
#include "core/json_read.h"
#include "model/loader_internal.h"

namespace bod {

namespace fs = std::filesystem;

std::vector<std::string> LoadCtx::dim_names() const {
  std::vector<std::string> r;
  for (auto& [k, v] : m.dims) r.push_back(k);
  return r;
}

const TensorDecl* Model::tensor(const std::string& n) const {
  for (auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}
const VarDecl* Model::var(const std::string& n) const {
  for (auto& v : vars)
    if (v.name == n) return &v;
  return nullptr;
}
int Model::kernel_index(const std::string& n) const {
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].name == n) return static_cast<int>(i);
  return -1;
}
int KernelDecl::slot_index(const std::string& n) const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == n) return static_cast<int>(i);
  return -1;
}

int KernelDecl::local_index(const std::string& n) const {
  for (size_t i = 0; i < locals.size(); ++i)
    if (locals[i].name == n) return static_cast<int>(i);
  return -1;
}

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.')) return false;
  return true;
}

Result<Shape> eval_shape(const json& j, const std::string& path, const Env& dims) {
  BOD_CHECK(require_array(j, path));
  Shape s;
  int64_t n = 1;
  for (size_t i = 0; i < j.size(); ++i) {
    BOD_TRY(Expr e, get_expr(j[i], at(path, i)));
    auto v = e.eval(dims);
    if (!v) return bad(at(path, i), v.error().what);
    if (v.value() <= 0)
      return bad(at(path, i), "dimension '" + e.text() + "' is " + std::to_string(v.value()) +
                                  "; expected a positive size");
    if (v.value() > kMaxElements / n)
      return bad(path, "shape has more than 2^40 elements; expected a size that fits in memory");
    n *= v.value();
    s.push_back(v.value());
  }
  return s;
}

Result<DType> get_dtype(const json& j, const std::string& path) {
  BOD_TRY(std::string s, get_string(j, path));
  auto d = parse_dtype(s);
  if (!d)
    return bad(path, "unknown dtype '" + excerpt(s) + "'; expected one of bf16, f32, i32, i8");
  return *d;
}

Status parse_dims(LoadCtx& c, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = at(path, it.key());
    if (!valid_name(it.key())) return bad(p, "bad dim name '" + excerpt(it.key()) + "'");
    BOD_TRY(Expr e, get_expr(it.value(), p));
    auto v = e.eval(c.m.dims);
    if (!v) return bad(p, v.error().what);
    if (v.value() <= 0)
      return bad(p, "dim " + it.key() + " = " + std::to_string(v.value()) +
                        "; expected a positive integer");
    c.m.dims[it.key()] = v.value();
  }
  return ok_status();
}

Status parse_file_source(LoadCtx& c, TensorDecl& t, const json& j, const std::string& path) {
  if (j.is_string()) {
    t.file = j.get<std::string>();
  } else {
    BOD_CHECK(require_object(j, path));
    BOD_CHECK(only_keys(j, path, {"path", "format", "key"}));
    if (!j.contains("path")) return bad(path, "missing field 'path'");
    BOD_TRY(t.file, get_string(j["path"], at(path, "path")));
    if (j.contains("format")) {
      BOD_TRY(t.format, get_string(j["format"], at(path, "format")));
    }
    if (j.contains("key")) {
      BOD_TRY(t.key, get_string(j["key"], at(path, "key")));
    }
  }
  if (t.format.empty()) {
    std::string ext = fs::path(t.file).extension().string();
    t.format = ext == ".npy" ? "npy" : ext == ".safetensors" ? "safetensors" : "bin";
  }
  if (t.format != "bin" && t.format != "npy" && t.format != "safetensors")
    return bad(at(path, "format"),
               "unknown file format '" + excerpt(t.format) + "'; expected bin, npy or safetensors");
  if (t.format == "safetensors" && t.key.empty()) t.key = t.name;
  fs::path p(t.file);
  if (p.is_relative()) p = fs::path(c.m.dir) / p;
  t.file = p.lexically_normal().string();
  return ok_status();
}

Status parse_tensors(LoadCtx& c, const json& j, const std::string& path, bool is_var) {
  BOD_CHECK(require_object(j, path));
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = at(path, it.key());
    const json& t = it.value();
    if (!valid_name(it.key())) return bad(p, "bad name '" + excerpt(it.key()) + "'");
    if (c.m.tensor(it.key()) || c.m.var(it.key()))
      return bad(p, "'" + excerpt(it.key()) +
                        "' is declared twice (tensors and vars share one namespace)");
    BOD_CHECK(require_object(t, p));
    if (is_var) {
      BOD_CHECK(only_keys(t, p, {"dtype", "shape", "init", "doc"}));
    } else {
      BOD_CHECK(only_keys(t, p, {"dtype", "shape", "init", "file", "doc"}));
    }
    if (!t.contains("shape")) return bad(p, "missing field 'shape'");
    TensorDecl d;
    d.name = it.key();
    d.path = p;
    if (t.contains("dtype")) {
      BOD_TRY(d.dtype, get_dtype(t["dtype"], at(p, "dtype")));
    }
    BOD_TRY(d.shape, eval_shape(t["shape"], at(p, "shape"), c.m.dims));
    if (t.contains("init") && t.contains("file"))
      return bad(p, "give either 'init' or 'file', not both");
    if (t.contains("init")) {
      BOD_TRY(d.init, parse_init(t["init"], at(p, "init")));
    } else if (t.contains("file")) {
      BOD_CHECK(parse_file_source(c, d, t["file"], at(p, "file")));
    } else if (!is_var) {
      return bad(p, "missing 'init' or 'file'; a tensor needs data");
    }
    if (is_var)
      c.m.vars.push_back(VarDecl{d.name, d.path, d.dtype, d.shape, d.init});
    else
      c.m.tensors.push_back(std::move(d));
  }
  return ok_status();
}

Status parse_verify(LoadCtx& c, const json& j, const std::string& path) {
  BOD_CHECK(require_object(j, path));
  BOD_CHECK(only_keys(j, path, {"outputs", "top_k"}));
  if (j.contains("top_k")) {
    BOD_TRY(double k, get_number(j["top_k"], at(path, "top_k")));
    if (k < 1 || k > 1000 || k != std::floor(k))
      return bad(at(path, "top_k"), "expected an integer in 1..1000");
    c.m.verify.top_k = static_cast<int>(k);
  }
  if (!j.contains("outputs")) return ok_status();
  const json& o = j["outputs"];
  std::string op = at(path, "outputs");
  BOD_CHECK(require_object(o, op));
  for (auto it = o.begin(); it != o.end(); ++it) {
    std::string p = at(op, it.key());
    if (!c.m.var(it.key()))
      return bad(p, "unknown var '" + excerpt(it.key()) + "'; verify outputs must name vars");
    BOD_CHECK(require_object(it.value(), p));
    BOD_CHECK(only_keys(it.value(), p, {"cosine", "atol", "rtol"}));
    OutputTolerance t;
    if (it.value().contains("cosine")) {
      BOD_TRY(t.cosine, get_number(it.value()["cosine"], at(p, "cosine")));
    }
    if (it.value().contains("atol")) {
      BOD_TRY(t.atol, get_number(it.value()["atol"], at(p, "atol")));
    }
    if (it.value().contains("rtol")) {
      BOD_TRY(t.rtol, get_number(it.value()["rtol"], at(p, "rtol")));
    }
    c.m.verify.outputs[it.key()] = t;
  }
  return ok_status();
}

std::string line_col(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

}  // namespace

Result<InitSpec> parse_init(const json& j, const std::string& path) {
  InitSpec s;
  if (j.is_number()) {
    s.kind = InitSpec::Kind::constant;
    BOD_TRY(s.a, get_number(j, path));
    return s;
  }
  if (j.is_string() && j.get<std::string>() == "zeros") {
    s.kind = InitSpec::Kind::constant;
    s.a = 0;
    return s;
  }
  if (!j.is_object() || j.size() != 1)
    return expected(path,
                    "one of {\"normal\":{...}}, {\"uniform\":{...}}, {\"constant\":x}, "
                    "{\"range\":{...}} or \"zeros\"",
                    j);
  auto it = j.begin();
  std::string p = at(path, it.key());
  const json& v = it.value();
  auto field = [&](const char* k, double def, double& out) -> Status {
    if (!v.contains(k)) {
      out = def;
      return ok_status();
    }
    BOD_TRY(out, get_number(v[k], at(p, k)));
    return ok_status();
  };
  if (it.key() == "constant") {
    s.kind = InitSpec::Kind::constant;
    BOD_TRY(s.a, get_number(v, p));
    return s;
  }
  BOD_CHECK(require_object(v, p));
  if (it.key() == "normal") {
    s.kind = InitSpec::Kind::normal;
    BOD_CHECK(only_keys(v, p, {"mean", "std"}));
    BOD_CHECK(field("mean", 0, s.a));
    BOD_CHECK(field("std", 1, s.b));
    if (s.b < 0) return bad(at(p, "std"), "expected std >= 0");
  } else if (it.key() == "uniform") {
    s.kind = InitSpec::Kind::uniform;
    BOD_CHECK(only_keys(v, p, {"low", "high"}));
    BOD_CHECK(field("low", 0, s.a));
    BOD_CHECK(field("high", 1, s.b));
    if (s.b < s.a) return bad(p, "expected low <= high");
  } else if (it.key() == "range") {
    s.kind = InitSpec::Kind::range;
    BOD_CHECK(only_keys(v, p, {"start", "step"}));
    BOD_CHECK(field("start", 0, s.a));
    BOD_CHECK(field("step", 1, s.b));
  } else {
    return bad(
        p, "unknown init '" + excerpt(it.key()) + "'; expected normal, uniform, constant or range");
  }
  return s;
}

// The byte where [ and { (outside strings) first nest deeper than `limit`, or npos. Checked
// before parsing: nlohmann's parser and every recursive walk of the value would otherwise
// follow a hostile nesting until the stack runs out.
static size_t too_deep_at(const std::string& text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > limit) return i;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

// "suppressions": [{"check", "kernel"?, "bo_key"?, "slot"?, "reason"}]. The check id is
// validated where checks are known (the report's gate), with this entry's pointer.
static Status parse_suppressions(const json& j, const std::string& path,
                                 std::vector<SuppressionDecl>& out) {
  BOD_CHECK(require_array(j, path));
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = at(path, i);
    BOD_CHECK(require_object(j[i], p));
    BOD_CHECK(only_keys(j[i], p, {"check", "kernel", "bo_key", "slot", "reason"}));
    SuppressionDecl d;
    d.path = p;
    if (!j[i].contains("check")) return bad(at(p, "check"), "missing; expected a check id");
    BOD_TRY(d.check, get_string(j[i]["check"], at(p, "check")));
    for (auto [key, field] : {std::pair<const char*, std::string*>{"kernel", &d.kernel},
                              {"bo_key", &d.bo_key},
                              {"slot", &d.slot}})
      if (j[i].contains(key)) {
        BOD_TRY(*field, get_string(j[i][key], at(p, key)));
      }
    if (!j[i].contains("reason"))
      return bad(at(p, "reason"),
                 "missing; a suppression needs a reason (why the finding is "
                 "accepted), e.g. \"reason\": \"scratch, rewritten before read\"");
    BOD_TRY(d.reason, get_string(j[i]["reason"], at(p, "reason")));
    if (d.reason.find_first_not_of(" \t") == std::string::npos)
      return bad(at(p, "reason"), "empty; a suppression needs a reason");
    out.push_back(std::move(d));
  }
  return ok_status();
}

static Result<Model> parse_model_text(const std::string& text, const std::string& path) {
  size_t deep = too_deep_at(text, kMaxJsonDepth);
  if (deep != std::string::npos)
    return Error{path, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " +
                           line_col(text, deep) + "; expected at most " +
                           std::to_string(kMaxJsonDepth) + " levels of [ and {"};
  // Parsed in linear time (core/json_read.h); duplicate keys are refused (JSON would silently
  // keep the last), named by the JSON pointer of the second occurrence.
  json j;
  JsonReader reader(kMaxJsonValues);
  JsonReader::Stop stop;
  try {
    stop = reader.parse(text, j);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("syntax error");
    std::string msg = pos == std::string::npos ? what : what.substr(pos);
    return Error{path, "malformed JSON at " + line_col(text, e.byte ? e.byte - 1 : 0) + ": " + msg};
  } catch (const json::exception& e) {
    // A number out of double's range (1e99999): nlohmann throws out_of_range.406. Name the
    // value by the pointer of the containers open when it was read.
    std::string where = reader.pointer();
    std::string what = e.what();
    auto pos = what.find("] ");
    what = pos == std::string::npos ? what : what.substr(pos + 2);
    return Error{where.empty() ? path : where,
                 what + "; expected a number within the range of a double (about +-1.8e308)"};
  }
  if (stop == JsonReader::Stop::duplicate_key)
    return Error{reader.pointer(),
                 "this key appears twice in one object; JSON keeps only the last one, so "
                 "say it once"};
  if (stop == JsonReader::Stop::too_many_values)
    return Error{reader.pointer(),
                 "more than " + std::to_string(kMaxJsonValues) +
                     " JSON values and keys; expected at most " + std::to_string(kMaxJsonValues) +
                     " (a model.json describes its tensors, it does not hold their data)"};
  Model m;
  m.path = path;
  m.dir = fs::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";
  LoadCtx c{m};
  BOD_CHECK(require_object(j, ""));
  BOD_CHECK(only_keys(j, "",
                      {"format", "version", "name", "description", "seed", "dims", "tensors",
                       "vars", "kernels", "program", "verify", "suppressions", "doc"}));
  if (!j.contains("format"))
    return bad("/format", "missing; expected \"format\": \"bo-doctor-model\"");
  if (j["format"] != "bo-doctor-model")
    return bad("/format", "expected \"bo-doctor-model\"; is this a bo-doctor model.json?");
  if (!j.contains("version")) return bad("/version", "missing format version; expected 1");
  if (!j["version"].is_number_integer() || j["version"].get<int64_t>() != kModelFormatVersion)
    return bad("/version", "unsupported format version " + json_short(j["version"]) +
                               "; this bo-doctor reads version " +
                               std::to_string(kModelFormatVersion));
  if (j.contains("name")) {
    BOD_TRY(m.name, get_string(j["name"], "/name"));
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_integer() || j["seed"].get<int64_t>() < 0)
      return expected("/seed", "a non-negative integer", j["seed"]);
    m.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("dims")) BOD_CHECK(parse_dims(c, j["dims"], "/dims"));
  if (j.contains("tensors")) BOD_CHECK(parse_tensors(c, j["tensors"], "/tensors", false));
  if (j.contains("vars")) BOD_CHECK(parse_tensors(c, j["vars"], "/vars", true));
  if (!j.contains("kernels")) return bad("/kernels", "missing; a model needs at least one kernel");
  BOD_CHECK(parse_kernels(c, j["kernels"], "/kernels"));
  if (!j.contains("program")) return bad("/program", "missing; expected {\"phases\": [...]}");
  BOD_CHECK(parse_program(c, j["program"], "/program"));
  if (j.contains("verify")) BOD_CHECK(parse_verify(c, j["verify"], "/verify"));
  if (j.contains("suppressions"))
    BOD_CHECK(parse_suppressions(j["suppressions"], "/suppressions", m.suppressions));
  return m;
}

Result<Model> parse_model(const std::string& text, const std::string& path) {
  auto m = parse_model_text(text, path);
  if (!m) return safe_error(m.error());  // error lines quote the input: keep them printable
  return m;
}

Result<Model> load_model(const std::string& path) {
  // A regular file only (/dev/zero would be read without end, a FIFO would block), its size
  // capped before it is read (docs/model-format.md §13).
  BOD_TRY(std::string text,
          read_regular_file(path, "model file", "a model.json file", kMaxModelFileBytes, "64 MiB"));
  return parse_model(text, path);
}

}  // namespace bod
