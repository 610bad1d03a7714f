// Reading and ordering the fields protobuf keeps as unknown (a message's
// residual): the helpers lib/support/wire.h declares for them.
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "support/wire.h"

namespace graphrw::wire {

std::vector<std::string> lenFields(const google::protobuf::UnknownFieldSet& fields, int number) {
  std::vector<std::string> result;
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      result.push_back(f.length_delimited());
  }
  return result;
}

std::optional<uint64_t> lastVarint(const google::protobuf::UnknownFieldSet& fields, int number) {
  std::optional<uint64_t> result;
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_VARINT) result = f.varint();
  }
  return result;
}

bool hasField(const google::protobuf::UnknownFieldSet& fields, int number) {
  for (int i = 0; i < fields.field_count(); ++i)
    if (fields.field(i).number() == number) return true;
  return false;
}

void sortByNumber(google::protobuf::UnknownFieldSet& fields) {
  std::vector<int> order(static_cast<size_t>(fields.field_count()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return fields.field(a).number() < fields.field(b).number(); });
  google::protobuf::UnknownFieldSet sorted;
  for (int i : order) sorted.AddField(fields.field(i));
  fields.Swap(&sorted);
}

}  // namespace graphrw::wire
