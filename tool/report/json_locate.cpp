#include "report/json_locate.h"

#include <vector>

namespace bod {

namespace {

// A forward scanner over the text that tracks line and column.
struct Scanner {
  const std::string& s;
  size_t i = 0;
  int line = 1, col = 1;

  bool end() const { return i >= s.size(); }
  char peek() const { return s[i]; }
  void advance() {
    unsigned char c = static_cast<unsigned char>(s[i++]);
    if (c == '\n') {
      ++line;
      col = 1;
    } else if ((c & 0xC0) != 0x80) {  // count code points, not UTF-8 continuation bytes
      ++col;
    }
  }
  void ws() {
    while (!end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }
  // A JSON string at i (the opening quote), decoded enough for pointer keys.
  std::string string() {
    std::string out;
    advance();  // "
    while (!end() && peek() != '"') {
      if (peek() == '\\') {
        advance();
        if (end()) break;
        char e = peek();
        advance();
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u': {
            unsigned cp = 0;
            for (int k = 0; k < 4 && !end(); ++k) {
              char h = peek();
              cp = cp * 16 + static_cast<unsigned>(h >= 'a'   ? h - 'a' + 10
                                                   : h >= 'A' ? h - 'A' + 10
                                                              : h - '0');
              advance();
            }
            // Keys in model.json are ASCII in practice; other code points are kept as UTF-8.
            if (cp < 0x80) {
              out += static_cast<char>(cp);
            } else if (cp < 0x800) {
              out += static_cast<char>(0xC0 | (cp >> 6));
              out += static_cast<char>(0x80 | (cp & 0x3F));
            } else {
              out += static_cast<char>(0xE0 | (cp >> 12));
              out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (cp & 0x3F));
            }
            break;
          }
          default:
            out += e;
        }
      } else {
        out += peek();
        advance();
      }
    }
    if (!end()) advance();  // "
    return out;
  }
  void scalar() {
    while (!end() && peek() != ',' && peek() != '}' && peek() != ']' && peek() != ' ' &&
           peek() != '\n' && peek() != '\t' && peek() != '\r')
      advance();
  }
};

std::string escape_segment(const std::string& k) {
  std::string o;
  for (char c : k) {
    if (c == '~')
      o += "~0";
    else if (c == '/')
      o += "~1";
    else
      o += c;
  }
  return o;
}

struct Frame {
  bool array;
  size_t index;     // arrays: the next element's index
  size_t path_len;  // length of the pointer of the container
};

}  // namespace

std::map<std::string, TextPos> locate_pointers(const std::string& text,
                                               const std::set<std::string>& pointers,
                                               size_t max_depth) {
  std::map<std::string, TextPos> out;
  if (pointers.empty()) return out;
  Scanner sc{text};
  std::string path;  // pointer of the value about to be read
  std::vector<Frame> stack;
  auto record = [&] {
    if (pointers.count(path)) out.emplace(path, TextPos{sc.line, sc.col});
  };
  sc.ws();
  while (!sc.end()) {
    // At a value: record it, then read it (containers push a frame).
    record();
    char c = sc.peek();
    if (c == '{' || c == '[') {
      if (stack.size() >= max_depth) return out;
      stack.push_back({c == '[', 0, path.size()});
      sc.advance();
    } else if (c == '"') {
      sc.string();
    } else {
      sc.scalar();
    }
    // After a value (or an opening bracket): find the next value's pointer.
    bool next = false;
    while (!next && !sc.end()) {
      sc.ws();
      if (sc.end() || stack.empty()) break;
      Frame& f = stack.back();
      char d = sc.peek();
      if (d == ',') {
        sc.advance();
        continue;
      }
      if (d == '}' || d == ']') {
        sc.advance();
        path.resize(f.path_len);
        stack.pop_back();
        if (!stack.empty()) path.resize(stack.back().path_len);
        continue;
      }
      path.resize(f.path_len);
      if (f.array) {
        path += "/" + std::to_string(f.index++);
      } else {
        if (d != '"') return out;  // not valid JSON: stop with what was found
        std::string key = sc.string();
        sc.ws();
        if (sc.end() || sc.peek() != ':') return out;
        sc.advance();
        path += "/" + escape_segment(key);
      }
      sc.ws();
      next = true;
    }
    if (stack.empty()) break;
  }
  return out;
}

}  // namespace bod
