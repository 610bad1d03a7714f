// Process-wide interned symbols: the op types, domains and overloads nodes point at.
#pragma once

#include <string>
#include <string_view>

namespace graphrw::ir {

// The one copy of `s` for the process's lifetime (thread-safe): node op types,
// domains and overloads point at these. References stay valid; the table only
// grows (one string per distinct op type, once per process).
const std::string& internSymbol(std::string_view s);

// A node's op type, domain and overload as one interned triple: one pointer
// per node instead of three (a million-node graph has a handful of these).
struct OpSymbol {
  const std::string* opType;
  const std::string* domain;
  const std::string* overload;
};
const OpSymbol& internOp(std::string_view opType, std::string_view domain, std::string_view overload);

}  // namespace graphrw::ir
