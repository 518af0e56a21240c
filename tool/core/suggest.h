// Did-you-mean for names the user typed: commands, flags, check ids, and the slot, kernel and
// tensor names of a model. Exists so every "unknown X" message can name the closest valid one
// and the valid ones in scope, the next step a user needs.
#pragma once
#include <string>
#include <vector>

namespace bod {

// The candidate closest to `word` by edit distance (case-insensitive), when it is close
// enough to be a likely typo (distance at most a third of the longer name, at least 1 edit);
// "" otherwise.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" (for appending to a message).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// `s` with ASCII letters lower-cased: case-insensitive names (formats, --fail-on levels).
std::string lower_ascii(std::string s);

// "a, b, c" (at most `max` names, then ", ... (N in all)"), for "expected one of ..." lists.
std::string name_list(const std::vector<std::string>& names, size_t max = 12);

}  // namespace bod
