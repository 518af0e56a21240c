// Text from input (a bo_key, a binding or slot name, a path, an engine's error message) made
// safe to print on a terminal: the one helper every text output uses (text and markdown
// reports, messages on stderr). Control characters would otherwise reach the terminal raw (ESC
// sequences set its title or clear the screen, BEL rings) and a newline would forge a line.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace bod {

// `s` with every character that is not printable text escaped, nothing cut: C0 controls and
// DEL as \n, \t, \r or \xNN, C1 controls (U+0080..U+009F) and the bidirectional overrides
// and isolates (U+202A..U+202E, U+2066..U+2069) as \u{NNNN}, bytes that are not UTF-8 as
// \xNN. Printable text, backslashes included, is kept as it is.
std::string printable(std::string_view s);

// The rule above for one character: appends the printable spelling of the character (or stray
// byte) at s[i] to `out` and returns how many bytes of `s` it took (at least 1; i < s.size()).
// The JSON readers' excerpts (json_text) escape with it too.
size_t append_printable(std::string_view s, size_t i, std::string& out);

// The same for a multi-line text: each line made printable, the '\n' between lines kept.
std::string printable_lines(std::string_view s);

}  // namespace bod
