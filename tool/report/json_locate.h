// Line and column of JSON pointers in a JSON text, so findings that point into model.json
// ("/program/phases/1/steps/0") can be shown where editors and code scanning want them
// ("model.json:12:9"). Exists because the model loader keeps pointers, not positions: the
// positions are looked up once per report, in one pass over the file.
#pragma once
#include <map>
#include <set>
#include <string>

namespace bod {

// 1-based line and column (in Unicode code points) of the first character of a value.
struct TextPos {
  int line = 0, col = 0;
  bool found() const { return line > 0; }
};

// The position of each pointer's value in `text` (valid JSON, as the loader accepted it);
// pointers not present are left out. One pass, iterative (no recursion on nesting).
// Nesting deeper than max_depth (the model loader's limit) ends the lookup: the pointers not
// found by then are left out, and memory stays bounded whatever the text.
std::map<std::string, TextPos> locate_pointers(const std::string& text,
                                               const std::set<std::string>& pointers,
                                               size_t max_depth = 256);

}  // namespace bod
