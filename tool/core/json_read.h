// Reading JSON text into a value in linear time, for both JSON readers (model.json and trace
// lines). nlohmann's callback parser, the usual way to see duplicate keys, rescans the open
// container at the end of every object it keeps (O(n^2) in the objects of one array: 500k `{}`
// took 70 s); this reader builds the value from nlohmann's SAX events itself, refuses a
// duplicate key as it inserts it (one hash or map lookup), and stops at a cap on the number of
// values before it stores more.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

namespace bod {

class JsonReader {
 public:
  enum class Stop {
    none,             // parsed
    duplicate_key,    // a key appeared twice in one object (JSON would keep the last)
    too_many_values,  // more values than max_values
  };
  // max_values counts every value (object, array, string, number, literal) and every key.
  explicit JsonReader(size_t max_values = SIZE_MAX) : max_values_(max_values) {}

  // Parses the whole text into `out` (key order kept in an ordered_json). Syntax errors and
  // numbers out of a double's range throw nlohmann's parse_error / out_of_range exactly as
  // nlohmann's parse does (the same messages and byte positions); a duplicate key or the
  // value cap stops the parse instead.
  Stop parse(const std::string& text, nlohmann::json& out);
  Stop parse(const std::string& text, nlohmann::ordered_json& out);

  // Where the parse is or stopped, as a JSON pointer: the duplicate key, the value past the
  // cap, or (after an exception) the value being read; "" at the top level.
  std::string pointer() const;
  const std::string& key() const { return key_; }  // Stop::duplicate_key: the key
  size_t values() const { return values_; }        // values and keys read so far

 private:
  template <class J>
  friend class JsonSax;
  template <class J>
  Stop run(const std::string& text, J& out);
  struct Frame {
    bool array = false;
    size_t index = 0;  // arrays: the index of the element being read
    std::string key;   // objects: the key whose value is being read (unless key_at is set)
    const std::string* key_at = nullptr;   // that key, as the map being built holds it
    std::unordered_set<std::string> keys;  // objects of an ordered_json: the keys so far
  };
  size_t max_values_;
  size_t values_ = 0;
  std::vector<Frame> open_;
  std::string key_;
};

}  // namespace bod
