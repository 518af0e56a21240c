#include "core/json_text.h"

#include <cstdio>
#include <cstring>

namespace bod {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c0 = b(i);
  size_t n = c0 < 0x80           ? 1
             : (c0 >> 5) == 0x6  ? 2
             : (c0 >> 4) == 0xE  ? 3
             : (c0 >> 3) == 0x1E ? 4
                                 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

// The printable spelling of one control character or stray byte.
std::string escaped(unsigned char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      return buf;
    }
  }
}

}  // namespace

std::string excerpt(std::string_view s, size_t max) {
  std::string out;
  size_t room = max < 3 ? 0 : max - 3;  // what is kept when the text is cut, then "..."
  size_t keep = 0, i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_len(s, i);
    bool plain = n > 0 && c >= 0x20 && c != 0x7f;
    std::string_view piece = plain ? s.substr(i, n) : std::string_view();
    std::string esc = plain ? std::string() : escaped(c);
    size_t len = plain ? n : esc.size();
    if (out.size() + len > max) break;
    if (plain)
      out.append(piece);
    else
      out += esc;
    i += plain ? n : 1;
    if (out.size() <= room) keep = out.size();
  }
  if (i == s.size()) return out;
  out.resize(keep);  // whole pieces only: never inside a character or an escape
  return out + "...";
}

std::string ptr_key(std::string_view k) {
  std::string r;
  for (char c : k) {
    if (c == '~')
      r += "~0";
    else if (c == '/')
      r += "~1";
    else
      r += c;
  }
  return r;
}

}  // namespace bod
