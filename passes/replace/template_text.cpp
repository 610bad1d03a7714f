#include "passes/replace/template_text.h"

#include "support/error.h"

namespace graphrw::passes {
namespace {

bool identStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }

// Whether `out` ends with `identifier <blanks> = <blanks>`: an attribute's value comes next.
bool afterAttributeName(const std::string& out) {
  size_t i = out.size();
  auto skipBlanks = [&] {
    while (i > 0 && (out[i - 1] == ' ' || out[i - 1] == '\t' || out[i - 1] == '\n' || out[i - 1] == '\r')) --i;
  };
  skipBlanks();
  if (i == 0 || out[i - 1] != '=') return false;
  --i;
  skipBlanks();
  return i > 0 && identChar(out[i - 1]);
}

}  // namespace

std::string prepareTemplateText(const std::string& text, const std::string& marker, const std::string& where) {
  std::string out;
  out.reserve(text.size() + 64);
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {  // a string literal, escapes included, copied as it is
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, text.size());
      out.append(text, i, end - i);
      i = end - 1;
    } else if (c == '#') {  // a comment, to the end of the line
      size_t end = text.find('\n', i);
      end = end == std::string::npos ? text.size() : end;
      out.append(text, i, end - i);
      i = end - 1;
    } else if (c == '@' && i + 1 < text.size() && identStart(text[i + 1]) && afterAttributeName(out)) {
      size_t end = i + 1;
      while (end < text.size() && identChar(text[end])) ++end;
      out += '"';
      out += marker;
      out.append(text, i + 1, end - i - 1);
      out += '"';
      i = end - 1;
    } else {
      if (c == '{' || c == '[' || c == '(') {
        if (++depth > kMaxTemplateNesting)
          usageError(where + ": the template nests brackets more than " + std::to_string(kMaxTemplateNesting) +
                     " deep");
      } else if ((c == '}' || c == ']' || c == ')') && depth > 0) {
        --depth;
      }
      out += c;
    }
  }
  return out;
}

}  // namespace graphrw::passes
