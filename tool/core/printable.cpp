#include "core/printable.h"

#include <cstdint>
#include <cstdio>

namespace bod {

namespace {

// Length of the valid UTF-8 sequence at s[i] and its code point, or 0 when it is not one.
size_t utf8_at(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c0 = b(i);
  size_t n = c0 < 0x80           ? 1
             : (c0 >> 5) == 0x6  ? 2
             : (c0 >> 4) == 0xE  ? 3
             : (c0 >> 3) == 0x1E ? 4
                                 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c0 : n == 2 ? c0 & 0x1Fu : n == 3 ? c0 & 0x0Fu : c0 & 0x07u;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

bool control(uint32_t cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

size_t append_printable(std::string_view s, size_t i, std::string& out) {
  char buf[16];
  uint32_t cp = 0;
  size_t n = utf8_at(s, i, cp);
  if (n > 0 && !control(cp)) {
    out.append(s.substr(i, n));
    return n;
  }
  if (n == 0 || n == 1) {  // a stray byte, or an ASCII control
    auto c = static_cast<unsigned char>(s[i]);
    if (n == 1 && c == '\n')
      out += "\\n";
    else if (n == 1 && c == '\t')
      out += "\\t";
    else if (n == 1 && c == '\r')
      out += "\\r";
    else {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
    return 1;
  }
  std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
  out += buf;
  return n;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) i += append_printable(s, i, out);
  return out;
}

std::string printable_lines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t start = 0;
  for (;;) {
    size_t nl = s.find('\n', start);
    out += printable(s.substr(start, nl == std::string_view::npos ? nl : nl - start));
    if (nl == std::string_view::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

}  // namespace bod
