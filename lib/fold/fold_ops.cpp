// The constant-folding evaluator's ops for shape computations: Shape, Size,
// Gather, Range, Trilu, ConstantOfShape, Expand, comparisons, Where, Not,
// And/Or/Xor, Min/Max, Abs. Exact on the host: integer and boolean results are
// bit-identical to any runtime's; float ones are single IEEE operations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fold/fold_internal.h"

namespace graphrw::fold_detail {
namespace {

using namespace ir;

const std::vector<std::string>& shapeOps() {
  static const std::vector<std::string> ops = {"Shape",  "Size",  "Gather", "Range",   "Trilu",       "ConstantOfShape",
                                               "Expand", "Equal", "Less",   "Greater", "LessOrEqual", "GreaterOrEqual",
                                               "Where",  "Not",   "And",    "Or",      "Xor",         "Min",
                                               "Max",    "Abs",   "NonZero"};
  return ops;
}

HostTensor ints64(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  HostTensor t{TP::INT64, std::move(dims), std::string(values.size() * 8, '\0')};
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), values.size() * 8);
  return t;
}

bool numeric(int32_t type) { return arithmetic(type); }

std::optional<std::vector<HostTensor>> one(HostTensor t) { return oneResult(std::move(t)); }

}  // namespace

bool isShapeOp(const std::string& op) {
  return std::find(shapeOps().begin(), shapeOps().end(), op) != shapeOps().end();
}

// Long: one short case per op of shapeOps(), kept together as the list they mirror.
std::optional<std::vector<HostTensor>> evaluateShapeOp(const Node& n, const std::vector<const HostTensor*>& in,
                                                       std::string& why, uint64_t maxBytes) {
  const std::string& op = n.opType();
  auto need = [&](size_t i) -> const HostTensor& {
    if (i >= in.size() || !in[i]) badInput(op + ": input " + std::to_string(i) + " is missing");
    return *in[i];
  };
  auto refuse = [&](const std::string& w) -> std::optional<std::vector<HostTensor>> {
    why = w;
    return std::nullopt;
  };
  const HostTensor& x = need(0);
  const size_t es = elementSize(x.type);
  // Results that grow beyond their inputs are sized before they are made.
  auto tooLarge = [&](const std::vector<int64_t>& dims, size_t elem) {
    uint64_t total = elem;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(total, static_cast<uint64_t>(d), &total)) return true;
    return total > maxBytes;
  };

  if (op == "Shape") {
    int64_t rank = static_cast<int64_t>(x.dims.size());
    int64_t start = intAttr(n, "start").value_or(0), end = intAttr(n, "end").value_or(rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    std::vector<int64_t> dims(x.dims.begin() + start, x.dims.begin() + std::max(start, end));
    return one(ints64(dims, {static_cast<int64_t>(dims.size())}));
  }
  if (op == "Size") return one(ints64({x.count()}, {}));
  if (op == "Gather") {
    const HostTensor& idx = need(1);
    if (x.dims.empty()) badInput("Gather: the data is a scalar");
    int64_t axis = normAxis(intAttr(n, "axis").value_or(0), x.dims.size(), "Gather");
    auto indices = idx.asInts();
    int64_t len = x.dims[static_cast<size_t>(axis)];
    std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + axis);
    dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
    dims.insert(dims.end(), x.dims.begin() + axis + 1, x.dims.end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.dims.size(); ++d) inner *= x.dims[d];
    HostTensor out{x.type, dims, {}};
    out.data.reserve(static_cast<size_t>(out.count()) * es);
    size_t chunk = static_cast<size_t>(inner) * es;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : indices) {
        if (i < -len || i >= len) badInput("Gather: index " + std::to_string(i) + " is out of range");
        if (i < 0) i += len;
        out.data.append(x.data, static_cast<size_t>(o * len + i) * chunk, chunk);
      }
    return one(std::move(out));
  }
  if (op == "Range") {
    const HostTensor &limit = need(1), &delta = need(2);
    if (!numeric(x.type) || limit.type != x.type || delta.type != x.type)
      return refuse("Range on " + std::string(dataTypeName(x.type)));
    return dispatch(x.type, [&](auto t) -> std::optional<std::vector<HostTensor>> {
      using T = decltype(t);
      T s = load<T>(x.data, 0), l = load<T>(limit.data, 0), d = load<T>(delta.data, 0);
      if (d == T{}) badInput("Range: delta is 0");
      double count = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
      if (!std::isfinite(count)) badInput("Range: start, limit and delta must be finite numbers");
      if (count > 4e18) return refuse("Range: the result is over the size limit");
      int64_t k = std::max<int64_t>(0, static_cast<int64_t>(count));
      if (tooLarge({k}, sizeof(T))) return refuse("Range: the result is over the size limit");
      HostTensor out{x.type, {k}, std::string(static_cast<size_t>(k) * sizeof(T), '\0')};
      for (int64_t i = 0; i < k; ++i)
        store<T>(out.data, static_cast<size_t>(i), static_cast<T>(s + static_cast<T>(i) * d));
      return one(std::move(out));
    });
  }
  if (op == "Trilu") {
    if (x.dims.size() < 2) badInput("Trilu: rank below 2");
    int64_t k = in.size() > 1 && in[1] ? in[1]->asInts().at(0) : 0;
    bool upper = intAttr(n, "upper").value_or(1) != 0;
    int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
    HostTensor out = x;
    for (int64_t o = 0; o < x.count(); ++o) {
      int64_t j = o % cols, i = (o / cols) % rows;
      bool keep = upper ? j - i >= k : j - i <= k;
      if (!keep) std::memset(out.data.data() + static_cast<size_t>(o) * es, 0, es);
    }
    return one(std::move(out));
  }
  if (op == "ConstantOfShape") {
    auto dims = x.asInts();
    HostTensor value{TP::FLOAT, {}, std::string(4, '\0')};
    if (const Attribute* a = n.attribute("value"); a && a->t()) value = readTensor(*a->t());
    if (value.count() != 1) badInput("ConstantOfShape: value is not one element");
    if (tooLarge(dims, elementSize(value.type))) return refuse("ConstantOfShape: the result is over the size limit");
    HostTensor out{value.type, dims, {}};
    size_t vs = elementSize(value.type);
    out.data.reserve(static_cast<size_t>(out.count()) * vs);
    for (int64_t i = 0; i < out.count(); ++i) out.data.append(value.data, 0, vs);
    return one(std::move(out));
  }
  if (op == "Expand") {
    auto shape = need(1).asInts();
    {
      size_t rank = std::max(shape.size(), x.dims.size());
      std::vector<int64_t> dims(rank, 1);
      for (size_t i = 0; i < shape.size(); ++i) dims[rank - shape.size() + i] = shape[i];
      for (size_t i = 0; i < x.dims.size(); ++i)
        dims[rank - x.dims.size() + i] = std::max(dims[rank - x.dims.size() + i], x.dims[i]);
      if (tooLarge(dims, es)) return refuse("Expand: the result is over the size limit");
    }
    HostTensor out{x.type, {}, {}};
    std::string& data = out.data;
    out.dims = broadcast({x.dims, shape}, "Expand",
                         [&](size_t, const std::vector<size_t>& at) { data.append(x.data, at[0] * es, es); });
    return one(std::move(out));
  }
  if (op == "NonZero") {
    // [rank, count] int64: the indices of the non-zero elements, row-major.
    std::vector<int64_t> hits;
    for (int64_t o = 0; o < x.count(); ++o) {
      bool nonzero = false;
      for (size_t b = 0; b < es; ++b) nonzero |= x.data[static_cast<size_t>(o) * es + b] != 0;
      if (x.type == TP::FLOAT || x.type == TP::DOUBLE || x.type == TP::FLOAT16 || x.type == TP::BFLOAT16) {
        // -0.0 is zero: only the sign bit set.
        bool onlySign = true;
        for (size_t b = 0; b < es; ++b) {
          auto byte = static_cast<unsigned char>(x.data[static_cast<size_t>(o) * es + b]);
          onlySign &= byte == 0 || (b == es - 1 && byte == 0x80);
        }
        nonzero &= !onlySign;
      }
      if (nonzero) hits.push_back(o);
    }
    size_t rank = x.dims.size();
    std::vector<int64_t> dims = {static_cast<int64_t>(rank), static_cast<int64_t>(hits.size())};
    if (tooLarge(dims, 8)) return refuse("NonZero: the result is over the size limit");
    std::vector<int64_t> values(rank * hits.size());
    for (size_t h = 0; h < hits.size(); ++h) {
      int64_t rest = hits[h];
      for (size_t d = rank; d-- > 0;) {
        values[d * hits.size() + h] = rest % x.dims[d];
        rest /= x.dims[d];
      }
    }
    return one(ints64(values, dims));
  }
  if (op == "Where") {
    const HostTensor &a = need(1), &b = need(2);
    if (x.type != TP::BOOL || a.type != b.type) badInput("Where: a non-bool condition or branches of two types");
    HostTensor out{a.type, {}, {}};
    size_t vs = elementSize(a.type);
    out.dims = broadcast({x.dims, a.dims, b.dims}, "Where", [&](size_t, const std::vector<size_t>& at) {
      out.data.append(x.data[at[0]] ? a.data : b.data, (x.data[at[0]] ? at[1] : at[2]) * vs, vs);
    });
    return one(std::move(out));
  }
  if (op == "Not") {
    if (x.type != TP::BOOL) badInput("Not: input is not bool");
    HostTensor out = x;
    for (char& c : out.data) c = c ? 0 : 1;
    return one(std::move(out));
  }
  if (op == "And" || op == "Or" || op == "Xor") {
    const HostTensor& y = need(1);
    if (x.type != TP::BOOL || y.type != TP::BOOL) badInput(op + ": inputs are not bool");
    HostTensor out{TP::BOOL, {}, {}};
    const char kind = op[0];  // 'A'nd, 'O'r, 'X'or: resolved once, not per element
    out.dims = broadcast({x.dims, y.dims}, op.c_str(), [&](size_t, const std::vector<size_t>& at) {
      bool p = x.data[at[0]] != 0, q = y.data[at[1]] != 0;
      out.data.push_back((kind == 'A' ? p && q : kind == 'O' ? p || q : p != q) ? 1 : 0);
    });
    return one(std::move(out));
  }
  if (!numeric(x.type)) return refuse(op + " on " + dataTypeName(x.type) + " is not folded");
  if (op == "Abs") {
    HostTensor out = x;
    dispatch(x.type, [&](auto t) {
      using T = decltype(t);
      for (size_t i = 0; i < static_cast<size_t>(x.count()); ++i) {
        T v = load<T>(x.data, i);
        store<T>(out.data, i, v < T{} ? static_cast<T>(-v) : v);
      }
      return 0;
    });
    return one(std::move(out));
  }
  // Comparisons and Min / Max: two inputs of one numeric type (Min / Max take more).
  for (size_t i = 1; i < in.size(); ++i)
    if (need(i).type != x.type) return refuse(op + " on inputs of different types");
  // The op resolved once, not per element.
  enum class Kind { Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Min, Max };
  const Kind kind = op == "Equal"            ? Kind::Equal
                    : op == "Less"           ? Kind::Less
                    : op == "Greater"        ? Kind::Greater
                    : op == "LessOrEqual"    ? Kind::LessOrEqual
                    : op == "GreaterOrEqual" ? Kind::GreaterOrEqual
                    : op == "Min"            ? Kind::Min
                                             : Kind::Max;
  bool compare = kind != Kind::Min && kind != Kind::Max;
  if (compare && in.size() != 2) badInput(op + ": needs 2 inputs");
  return dispatch(x.type, [&](auto t) -> std::optional<std::vector<HostTensor>> {
    using T = decltype(t);
    std::vector<std::vector<int64_t>> shapes;
    for (const auto* h : in) shapes.push_back(h->dims);
    HostTensor out{compare ? static_cast<int32_t>(TP::BOOL) : x.type, {}, {}};
    out.dims = broadcast(shapes, op.c_str(), [&](size_t, const std::vector<size_t>& at) {
      if (compare) {
        T a = load<T>(x.data, at[0]), b = load<T>(in[1]->data, at[1]);
        bool r = kind == Kind::Equal         ? a == b
                 : kind == Kind::Less        ? a < b
                 : kind == Kind::Greater     ? a > b
                 : kind == Kind::LessOrEqual ? a <= b
                                             : a >= b;
        out.data.push_back(r ? 1 : 0);
        return;
      }
      T r = load<T>(x.data, at[0]);
      bool nan = false;
      for (size_t k = 0; k < in.size(); ++k) {
        T v = load<T>(in[k]->data, at[k]);
        if constexpr (std::is_floating_point_v<T>) nan |= std::isnan(v);
        r = kind == Kind::Min ? std::min(r, v) : std::max(r, v);
      }
      if constexpr (std::is_floating_point_v<T>)
        if (nan) r = std::numeric_limits<T>::quiet_NaN();
      size_t at0 = out.data.size();
      out.data.resize(at0 + sizeof(T));
      std::memcpy(out.data.data() + at0, &r, sizeof(T));
    });
    return one(std::move(out));
  });
}

}  // namespace graphrw::fold_detail
