#include "core/json_read.h"

#include <type_traits>
#include <utility>

#include "core/json_text.h"

namespace bod {

// The SAX events nlohmann's parser sends, turned into the value the way its DOM parser does.
// Returning false stops the parse; syntax errors are thrown as the DOM parser throws them.
template <class J>
class JsonSax {
  // ordered_json's object is a vector searched linearly: its keys are checked in a hash set
  // and appended; a std::map object checks its own keys.
  static constexpr bool kOrdered = std::is_same_v<J, nlohmann::ordered_json>;

 public:
  JsonSax(JsonReader& r, J& root) : r_(r), root_(root) {}
  JsonReader::Stop stop = JsonReader::Stop::none;

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(typename J::number_integer_t v) { return put(v); }
  bool number_unsigned(typename J::number_unsigned_t v) { return put(v); }
  bool number_float(typename J::number_float_t v, const typename J::string_t&) { return put(v); }
  bool string(typename J::string_t& v) { return put(std::move(v)); }
  bool binary(typename J::binary_t& v) { return put(std::move(v)); }
  bool start_object(size_t) { return open(J::value_t::object); }
  bool start_array(size_t) { return open(J::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(typename J::string_t& k) {
    auto& f = r_.open_.back();
    bool inserted;
    if constexpr (kOrdered) {
      f.key = k;
      if (!count()) return false;
      auto& obj = stack_.back()->template get_ref<typename J::object_t&>();
      inserted = f.keys.insert(k).second;
      if (inserted) {
        auto& items = static_cast<typename J::object_t::Container&>(obj);
        items.emplace_back(std::move(k), nullptr);
        slot_ = &items.back().second;
      }
    } else {
      // The key is not copied: the frame points at the map's own (stable) copy.
      f.key_at = nullptr;
      if (!count()) {
        f.key = std::move(k);
        return false;
      }
      auto& obj = stack_.back()->template get_ref<typename J::object_t&>();
      auto [it, ins] = obj.try_emplace(std::move(k), nullptr);  // k kept when not inserted
      inserted = ins;
      if (ins)
        f.key_at = &it->first;
      else
        f.key = k;
      slot_ = &it->second;
    }
    if (!inserted) {
      r_.key_ = f.key;
      stop = JsonReader::Stop::duplicate_key;
    }
    return inserted;
  }
  template <class Exception>
  bool parse_error(size_t, const std::string&, const Exception& ex) {
    throw ex;
  }

 private:
  bool count() {
    if (++r_.values_ <= r_.max_values_) return true;
    stop = JsonReader::Stop::too_many_values;
    return false;
  }
  // Stores a value where the open container takes its next one; null when over the cap.
  template <class V>
  J* store(V&& v) {
    if (!count()) return nullptr;
    if (stack_.empty()) {
      root_ = J(std::forward<V>(v));
      return &root_;
    }
    if (r_.open_.back().array) {
      auto& a = stack_.back()->template get_ref<typename J::array_t&>();
      a.emplace_back(std::forward<V>(v));
      return &a.back();
    }
    *slot_ = J(std::forward<V>(v));
    return slot_;
  }
  template <class V>
  bool put(V&& v) {
    if (!store(std::forward<V>(v))) return false;
    next();
    return true;
  }
  bool open(typename J::value_t t) {
    J* v = store(t);
    if (!v) return false;
    stack_.push_back(v);
    r_.open_.emplace_back();
    r_.open_.back().array = t == J::value_t::array;
    return true;
  }
  bool close() {
    stack_.pop_back();
    r_.open_.pop_back();
    next();
    return true;
  }
  // A value of the open container is complete: an array moves to its next index.
  void next() {
    if (!r_.open_.empty() && r_.open_.back().array) r_.open_.back().index++;
  }

  JsonReader& r_;
  J& root_;
  std::vector<J*> stack_;  // the open containers in the result (parallel to r_.open_)
  J* slot_ = nullptr;      // where an object's next value goes (set by its key)
};

template <class J>
JsonReader::Stop JsonReader::run(const std::string& text, J& out) {
  values_ = 0;
  open_.clear();
  key_.clear();
  out = J();
  JsonSax<J> sax(*this, out);
  J::sax_parse(text, &sax);
  return sax.stop;
}

JsonReader::Stop JsonReader::parse(const std::string& text, nlohmann::json& out) {
  return run(text, out);
}
JsonReader::Stop JsonReader::parse(const std::string& text, nlohmann::ordered_json& out) {
  return run(text, out);
}

std::string JsonReader::pointer() const {
  std::string p;
  for (auto& f : open_)
    p += "/" + (f.array ? std::to_string(f.index) : ptr_key(f.key_at ? *f.key_at : f.key));
  return p;
}

}  // namespace bod
