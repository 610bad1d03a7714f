// The text of templates and patterns (ONNX's function syntax) made ready for
// ONNX 1.12's parser in one linear pass: `attr = @formal` (which that parser
// cannot read) becomes a marked string, and nesting deeper than graphrw reads
// back is refused before the parser, which recurses on it, sees the text.
#pragma once

#include <string>

namespace graphrw::passes {

// How deep brackets ('{', '[', '(') may nest in a template: about 12 levels
// of If/Loop bodies, well inside what the writer accepts (30 subgraph levels,
// what protobuf reads back) and far from where ONNX's parser, which recurses
// on them, runs out of stack.
constexpr int kMaxTemplateNesting = 16;

// The text with each `name = @formal` outside strings and comments rewritten
// to `name = "<marker>formal"`. Throws Error(Usage) naming `where` when
// brackets nest deeper than kMaxTemplateNesting.
std::string prepareTemplateText(const std::string& text, const std::string& marker, const std::string& where);

}  // namespace graphrw::passes
