// Small helpers for messages about JSON text (rule files) and names: where a
// JSON pointer is in the text, and which known word a typo was meant to be.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphrw {

// The line (1-based) where the value at `pointer` starts in JSON `text`, or
// where its parent object does when it is absent; 0 when unknown.
size_t lineOfPointer(std::string_view text, const std::string& pointer);
// `text` with control characters (newline, ESC, ...) written as \xNN: names
// from a model can neither split a one-line message nor forge another line.
std::string escapeControl(std::string_view text);
// A JSON pointer token for an object key ('~' -> "~0", '/' -> "~1").
std::string escapePointerToken(const std::string& key);
// Closest candidate by edit distance, when close enough to be a likely typo.
std::optional<std::string> didYouMean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace graphrw
