#include "support/json_text.h"

#include <algorithm>
#include <map>
#include <vector>

namespace graphrw {

namespace {

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1] ? 1 : 0)});
      prev = cur;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string escapePointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string escapeControl(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> didYouMean(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t bestDistance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

namespace {

// A JSON scanner that records the line each value (and each object key) starts on.
class LineScanner {
 public:
  explicit LineScanner(std::string_view text) : t_(text) {}
  std::map<std::string, size_t> lines;

  void run() {
    skip();
    value("");
  }

 private:
  void skip() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) {
      if (t_[p_] == '\n') ++line_;
      ++p_;
    }
  }
  std::string string() {
    std::string s;
    ++p_;  // opening quote
    while (p_ < t_.size() && t_[p_] != '"') {
      if (t_[p_] == '\\' && p_ + 1 < t_.size()) {
        char c = t_[++p_];
        s += c == 'n' ? '\n' : c == 't' ? '\t' : c;  // enough to name keys
      } else {
        s += t_[p_];
      }
      ++p_;
    }
    ++p_;
    return s;
  }
  void value(const std::string& path) {
    skip();
    if (p_ >= t_.size()) return;
    if (!lines.count(path)) lines[path] = line_;
    char c = t_[p_];
    if (c == '{') {
      ++p_;
      for (;;) {
        skip();
        if (p_ >= t_.size() || t_[p_] == '}') break;
        if (t_[p_] == ',') {
          ++p_;
          continue;
        }
        if (t_[p_] != '"') return;
        size_t keyLine = line_;
        std::string key = string();
        std::string child = path + "/" + escapePointerToken(key);
        lines[child] = keyLine;
        skip();
        if (p_ < t_.size() && t_[p_] == ':') ++p_;
        value(child);
      }
      ++p_;
    } else if (c == '[') {
      ++p_;
      size_t index = 0;
      for (;;) {
        skip();
        if (p_ >= t_.size() || t_[p_] == ']') break;
        if (t_[p_] == ',') {
          ++p_;
          continue;
        }
        value(path + "/" + std::to_string(index++));
      }
      ++p_;
    } else if (c == '"') {
      string();
    } else {
      while (p_ < t_.size() && t_[p_] != ',' && t_[p_] != '}' && t_[p_] != ']' && t_[p_] != '\n') ++p_;
    }
  }
  std::string_view t_;
  size_t p_ = 0;
  size_t line_ = 1;
};

}  // namespace

size_t lineOfPointer(std::string_view text, const std::string& pointer) {
  LineScanner scanner(text);
  scanner.run();
  std::string p = pointer;
  for (;;) {
    if (auto it = scanner.lines.find(p); it != scanner.lines.end()) return it->second;
    if (p.empty()) return 0;
    p = p.substr(0, p.rfind('/'));
  }
}

}  // namespace graphrw
