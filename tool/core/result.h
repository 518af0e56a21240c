// Result<T>: a value or an Error, for recoverable failures (bad input, missing files).
// Exists so loaders can report "what, where, expected" without exceptions; fatal errors
// (bugs, device loss) still throw and are caught in main.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace bod {

// Exit codes are part of the CLI contract (README.md, "Exit codes").
// 0 clean, 1 findings that fail the gate, 2 bad input or usage, 3 backend unavailable or
// internal error, 4 the run exceeded --timeout.
enum class Exit : int { ok = 0, findings = 1, bad_input = 2, backend = 3, timeout = 4 };

// A recoverable error. `where` is a JSON pointer ("/kernels/attn/body/2/b") or a file path;
// `what` says what was found and what was expected. Rendered as one line: "where: what".
struct Error {
  std::string where;
  std::string what;
  Exit code = Exit::bad_input;
  std::string line() const { return where.empty() ? what : where + ": " + what; }
};

template <typename T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}      // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> stand-in.
struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() {
  return Unit{};
}

// Thrown for fatal conditions that must end the program with a given exit code (caught in
// main): e.g. a backend that cannot open its device.
struct FatalError {
  Error error;
};

}  // namespace bod

// Propagation helpers for Result/Status inside functions that return Result<U> or Status.
#define BOD_CAT2_(a, b) a##b
#define BOD_CAT_(a, b) BOD_CAT2_(a, b)
#define BOD_TRY(lhs, expr)                                                    \
  auto BOD_CAT_(bod_r_, __LINE__) = (expr);                                   \
  if (!BOD_CAT_(bod_r_, __LINE__)) return BOD_CAT_(bod_r_, __LINE__).error(); \
  lhs = std::move(BOD_CAT_(bod_r_, __LINE__).value())
#define BOD_CHECK(expr)                 \
  do {                                  \
    auto bod_s_ = (expr);               \
    if (!bod_s_) return bod_s_.error(); \
  } while (0)
