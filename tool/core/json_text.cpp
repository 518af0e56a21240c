#include "core/json_text.h"

#include <cstdio>
#include <cstring>

#include "core/printable.h"

namespace bod {

std::string excerpt(std::string_view s, size_t max) {
  std::string out;
  size_t room = max < 3 ? 0 : max - 3;  // what is kept when the text is cut, then "..."
  size_t keep = 0, i = 0;
  while (i < s.size()) {
    std::string piece;
    size_t n = append_printable(s, i, piece);
    if (out.size() + piece.size() > max) break;
    out += piece;
    i += n;
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
