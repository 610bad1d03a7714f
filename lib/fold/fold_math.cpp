// The constant-folding evaluator's arithmetic, reductions and indexing ops:
// Mod, Pow, Sqrt, Exp, Log, Floor, Ceil, Round, Reciprocal, Sign, Sum, Mean,
// ReduceSum/Prod/Min/Max/Mean, CumSum, Tile, Flatten, GatherElements,
// GatherND, ScatterND, ScatterElements, Einsum. Integer and boolean results are exact;
// float ones are the host's IEEE operations (one rounding per element, what
// ONNX Runtime's CPU kernels do for these), checked against ONNX Runtime by
// the tests.
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "fold/fold_internal.h"

namespace graphrw::fold_detail {
namespace {

using namespace ir;
using Result = std::optional<std::vector<HostTensor>>;

const std::vector<std::string>& mathOps() {
  static const std::vector<std::string> ops = {
      "Mod",       "Pow",        "Sqrt",           "Exp",       "Log",        "Floor",
      "Ceil",      "Round",      "Reciprocal",     "Sign",      "Sum",        "Mean",
      "ReduceSum", "ReduceProd", "ReduceMin",      "ReduceMax", "ReduceMean", "CumSum",
      "Tile",      "Flatten",    "GatherElements", "GatherND",  "ScatterND",  "ScatterElements",
      "Einsum"};
  return ops;
}

Result one(HostTensor t) { return oneResult(std::move(t)); }

bool isFloat(int32_t t) { return t == TP::FLOAT || t == TP::DOUBLE; }

int64_t product(const std::vector<int64_t>& dims, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < dims.size() && i < to; ++i) p *= dims[i];
  return p;
}

// Element-wise over one float input. The op is resolved once, not per element.
enum class Unary { Sqrt, Exp, Log, Floor, Ceil, Round, Reciprocal };
Result unaryFloat(const std::string& name, const HostTensor& x) {
  static const std::map<std::string, Unary, std::less<>> ops = {{"Sqrt", Unary::Sqrt}, {"Exp", Unary::Exp},
                                                                {"Log", Unary::Log},   {"Floor", Unary::Floor},
                                                                {"Ceil", Unary::Ceil}, {"Round", Unary::Round}};
  auto found = ops.find(name);
  Unary op = found == ops.end() ? Unary::Reciprocal : found->second;
  HostTensor out = x;
  dispatch(x.type, [&](auto t) {
    using T = decltype(t);
    for (size_t i = 0; i < static_cast<size_t>(x.count()); ++i) {
      T v = load<T>(x.data, i), r{};
      switch (op) {
        case Unary::Sqrt:
          r = std::sqrt(v);
          break;
        case Unary::Exp:
          r = std::exp(v);
          break;
        case Unary::Log:
          r = std::log(v);
          break;
        case Unary::Floor:
          r = std::floor(v);
          break;
        case Unary::Ceil:
          r = std::ceil(v);
          break;
        case Unary::Round:
          r = std::nearbyint(v);
          break;  // halves to even, the default rounding mode
        case Unary::Reciprocal:
          r = T(1) / v;
          break;
      }
      store<T>(out.data, i, r);
    }
    return 0;
  });
  return one(std::move(out));
}

template <typename T>
T modOf(T a, T b, bool fmod) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) badInput("Mod: integer division by zero");
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return 0;  // MIN % -1 would trap; the remainder is 0
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);  // the divisor's sign (Python's %)
    return r;
  } else {
    return std::fmod(a, b);
  }
}

template <typename T>
T powOf(T base, double exponent) {
  if constexpr (std::is_integral_v<T>) {
    if (exponent < 0 || exponent != std::floor(exponent))
      badInput("Pow: a negative or fractional exponent of an integer");
    uint64_t r = 1, b = static_cast<uint64_t>(base);
    for (auto e = static_cast<uint64_t>(exponent); e; e >>= 1, b *= b)  // wraps as the runtime's integers do
      if (e & 1) r *= b;
    return static_cast<T>(r);
  } else {
    return static_cast<T>(std::pow(static_cast<double>(base), exponent));
  }
}

double asDouble(const HostTensor& t, size_t i) {
  return dispatch(t.type, [&](auto v) { return static_cast<double>(load<decltype(v)>(t.data, i)); });
}

// The axes a Reduce* reduces: attribute (older opsets) or input 1; empty: all, unless noop_with_empty_axes.
std::optional<std::vector<bool>> reducedAxes(const Node& n, const std::vector<const HostTensor*>& in, size_t rank) {
  std::vector<int64_t> axes = in.size() > 1 && in[1] ? in[1]->asInts() : ints(n, "axes");
  std::vector<bool> reduced(rank, axes.empty());
  if (axes.empty() && intAttr(n, "noop_with_empty_axes").value_or(0)) return std::nullopt;
  for (int64_t a : axes) {
    int64_t k = normAxis(a, rank, n.opType().c_str());
    if (reduced[static_cast<size_t>(k)]) badInput(n.opType() + ": axis " + std::to_string(a) + " repeated");
    reduced[static_cast<size_t>(k)] = true;
  }
  return reduced;
}

// Long: the five reductions share the walk over the input; each is a line of the accumulator.
Result reduce(const Node& n, const std::vector<const HostTensor*>& in, const HostTensor& x) {
  const std::string& op = n.opType();
  enum class Kind { Sum, Mean, Prod, Min, Max };  // resolved once, not per element
  const Kind kind = op == "ReduceSum"    ? Kind::Sum
                    : op == "ReduceMean" ? Kind::Mean
                    : op == "ReduceProd" ? Kind::Prod
                    : op == "ReduceMin"  ? Kind::Min
                                         : Kind::Max;
  auto reduced = reducedAxes(n, in, x.dims.size());
  if (!reduced) return one(x);
  bool keep = intAttr(n, "keepdims").value_or(1) != 0;
  std::vector<int64_t> outDims, kept(x.dims.size());
  for (size_t d = 0; d < x.dims.size(); ++d) {
    kept[d] = (*reduced)[d] ? 1 : x.dims[d];
    if (!(*reduced)[d] || keep) outDims.push_back(kept[d]);
  }
  if ((op == "ReduceMin" || op == "ReduceMax") && x.count() == 0) badInput(op + ": an empty input has no extreme");
  HostTensor out{x.type, outDims, {}};
  int64_t total = product(kept);
  out.data.assign(static_cast<size_t>(total) * elementSize(x.type), '\0');
  auto outStrides = stridesOf(kept);
  dispatch(x.type, [&](auto tag) {
    using T = decltype(tag);
    using Acc =
        std::conditional_t<std::is_integral_v<T>, uint64_t, double>;  // integers wrap, floats accumulate in double
    std::vector<Acc> acc(static_cast<size_t>(total), kind == Kind::Prod ? Acc(1) : Acc(0));
    std::vector<bool> seen(static_cast<size_t>(total), false);
    std::vector<int64_t> idx(x.dims.size(), 0);
    for (int64_t i = 0; i < x.count(); ++i) {
      int64_t o = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        if (!(*reduced)[d]) o += idx[d] * outStrides[d];
      T v = load<T>(x.data, static_cast<size_t>(i));
      Acc& a = acc[static_cast<size_t>(o)];
      auto value = static_cast<Acc>(v);
      if (kind == Kind::Sum || kind == Kind::Mean)
        a = a + value;
      else if (kind == Kind::Prod)
        a = a * value;
      else if (!seen[static_cast<size_t>(o)])
        a = value;
      else if (kind == Kind::Min)
        a = static_cast<T>(a) < v ? a : value;
      else
        a = static_cast<T>(a) > v ? a : value;
      seen[static_cast<size_t>(o)] = true;
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < x.dims[d]) break;
        idx[d] = 0;
      }
    }
    int64_t per = total ? x.count() / total : 0;
    for (size_t o = 0; o < acc.size(); ++o) {
      T r = static_cast<T>(acc[o]);
      if (kind == Kind::Mean) {
        if constexpr (std::is_integral_v<T>)
          r = per ? static_cast<T>(static_cast<int64_t>(static_cast<T>(acc[o])) / per) : T{};
        else
          r = static_cast<T>(acc[o] / static_cast<double>(per));
      }
      store<T>(out.data, o, r);
    }
    return 0;
  });
  return one(std::move(out));
}

// The element offset of `index` (per axis) in a tensor of `dims`; indices may be negative.
int64_t offsetOf(const std::vector<int64_t>& index, const std::vector<int64_t>& dims, const char* op) {
  int64_t off = 0;
  auto strides = stridesOf(dims);
  for (size_t d = 0; d < index.size(); ++d) {
    int64_t i = index[d] < 0 ? index[d] + dims[d] : index[d];
    if (i < 0 || i >= dims[d]) badInput(std::string(op) + ": index " + std::to_string(index[d]) + " is out of range");
    off += i * strides[d];
  }
  return off;
}

std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? i % dims[d] : 0;
    i = dims[d] ? i / dims[d] : 0;
  }
  return idx;
}

void copyElement(HostTensor& to, int64_t at, const HostTensor& from, int64_t src) {
  size_t es = elementSize(from.type);
  std::memcpy(to.data.data() + static_cast<size_t>(at) * es, from.data.data() + static_cast<size_t>(src) * es, es);
}

// Long: the indexing ops (GatherElements, GatherND, ScatterND, ScatterElements, Tile, CumSum,
// Flatten) are each a short loop over output positions; kept together as mathOps() lists them.
Result indexing(const Node& n, const std::vector<const HostTensor*>& in, const HostTensor& x, uint64_t maxBytes,
                std::string& why) {
  const std::string& op = n.opType();
  auto need = [&](size_t i) -> const HostTensor& {
    if (i >= in.size() || !in[i]) badInput(op + ": input " + std::to_string(i) + " is missing");
    return *in[i];
  };
  size_t rank = x.dims.size();
  if (op == "Flatten") {
    int64_t axis = intAttr(n, "axis").value_or(1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis > static_cast<int64_t>(rank)) badInput("Flatten: axis out of range");
    HostTensor out = x;
    out.dims = {product(x.dims, 0, static_cast<size_t>(axis)), product(x.dims, static_cast<size_t>(axis))};
    return one(std::move(out));
  }
  if (op == "Tile") {
    auto repeats = need(1).asInts();
    if (repeats.size() != rank)
      badInput("Tile: repeats has " + std::to_string(repeats.size()) + " values for rank " + std::to_string(rank));
    std::vector<int64_t> dims(rank);
    uint64_t bytes = elementSize(x.type);
    for (size_t d = 0; d < rank; ++d) {
      if (repeats[d] < 0) badInput("Tile: a negative repeat");
      if (__builtin_mul_overflow(x.dims[d], repeats[d], &dims[d]) ||
          __builtin_mul_overflow(bytes, static_cast<uint64_t>(dims[d]), &bytes))
        badInput("Tile: the result is too large");
    }
    if (bytes > maxBytes) {
      why = "Tile: the result is over the size limit";
      return std::nullopt;
    }
    HostTensor out{x.type, dims, std::string(bytes, '\0')};
    for (int64_t o = 0; o < out.count(); ++o) {
      auto idx = unravel(o, dims);
      for (size_t d = 0; d < rank; ++d) idx[d] %= x.dims[d];
      copyElement(out, o, x, offsetOf(idx, x.dims, "Tile"));
    }
    return one(std::move(out));
  }
  if (op == "CumSum") {
    int64_t axis = normAxis(need(1).asInts().at(0), rank, "CumSum");
    bool exclusive = intAttr(n, "exclusive").value_or(0), reverse = intAttr(n, "reverse").value_or(0);
    if (!arithmetic(x.type)) return std::nullopt;
    HostTensor out = x;
    int64_t len = x.dims[static_cast<size_t>(axis)], stride = stridesOf(x.dims)[static_cast<size_t>(axis)];
    dispatch(x.type, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t o = 0; o < x.count(); ++o) {
        if (unravel(o, x.dims)[static_cast<size_t>(axis)] != 0) continue;  // each line once, from its start
        T sum{};
        for (int64_t k = 0; k < len; ++k) {
          int64_t pos = o + (reverse ? len - 1 - k : k) * stride;
          T v = load<T>(x.data, static_cast<size_t>(pos));
          if (exclusive) store<T>(out.data, static_cast<size_t>(pos), sum);
          if constexpr (std::is_integral_v<T>)
            sum = static_cast<T>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(v));
          else
            sum = static_cast<T>(sum + v);
          if (!exclusive) store<T>(out.data, static_cast<size_t>(pos), sum);
        }
      }
      return 0;
    });
    return one(std::move(out));
  }
  if (op == "GatherElements") {
    const HostTensor& indices = need(1);
    int64_t axis = normAxis(intAttr(n, "axis").value_or(0), rank, "GatherElements");
    if (indices.dims.size() != rank) badInput("GatherElements: indices of another rank");
    auto idxs = indices.asInts();
    HostTensor out{x.type, indices.dims, std::string(static_cast<size_t>(indices.count()) * elementSize(x.type), '\0')};
    for (int64_t o = 0; o < indices.count(); ++o) {
      auto at = unravel(o, indices.dims);
      at[static_cast<size_t>(axis)] = idxs[static_cast<size_t>(o)];
      copyElement(out, o, x, offsetOf(at, x.dims, "GatherElements"));
    }
    return one(std::move(out));
  }
  if (op == "ScatterElements") {
    const HostTensor &indices = need(1), &updates = need(2);
    if (n.attribute("reduction") && n.attribute("reduction")->proto().s() != "none") return std::nullopt;
    int64_t axis = normAxis(intAttr(n, "axis").value_or(0), rank, "ScatterElements");
    if (indices.dims != updates.dims || indices.dims.size() != rank)
      badInput("ScatterElements: indices and updates differ");
    auto idxs = indices.asInts();
    HostTensor out = x;
    for (int64_t o = 0; o < indices.count(); ++o) {
      auto at = unravel(o, indices.dims);
      at[static_cast<size_t>(axis)] = idxs[static_cast<size_t>(o)];
      copyElement(out, offsetOf(at, x.dims, "ScatterElements"), updates, o);
    }
    return one(std::move(out));
  }
  // GatherND and ScatterND: the last dimension of indices addresses a slice of x.
  const HostTensor& indices = need(1);
  if (indices.dims.empty()) badInput(op + ": indices is a scalar");
  int64_t batch = op == "GatherND" ? intAttr(n, "batch_dims").value_or(0) : 0;
  if (batch != 0) return std::nullopt;
  auto k = static_cast<size_t>(indices.dims.back());
  if (k > rank)
    badInput(op + ": indices address " + std::to_string(k) + " axes of a rank " + std::to_string(rank) + " tensor");
  std::vector<int64_t> slice(x.dims.begin() + static_cast<long>(k), x.dims.end());
  int64_t sliceSize = product(slice), tuples = indices.count() / static_cast<int64_t>(std::max<size_t>(k, 1));
  if (k == 0) tuples = product(indices.dims, 0, indices.dims.size() - 1);
  auto idxs = indices.asInts();
  std::vector<int64_t> prefix(x.dims.begin(), x.dims.begin() + static_cast<long>(k));
  auto base = [&](int64_t t) {
    std::vector<int64_t> at(idxs.begin() + t * static_cast<int64_t>(k),
                            idxs.begin() + (t + 1) * static_cast<int64_t>(k));
    return offsetOf(at, prefix, op.c_str()) * sliceSize;
  };
  if (op == "GatherND") {
    std::vector<int64_t> dims(indices.dims.begin(), indices.dims.end() - 1);
    dims.insert(dims.end(), slice.begin(), slice.end());
    HostTensor out{x.type, dims, std::string(static_cast<size_t>(tuples * sliceSize) * elementSize(x.type), '\0')};
    for (int64_t t = 0; t < tuples; ++t)
      for (int64_t e = 0; e < sliceSize; ++e) copyElement(out, t * sliceSize + e, x, base(t) + e);
    return one(std::move(out));
  }
  if (n.attribute("reduction") && n.attribute("reduction")->proto().s() != "none") return std::nullopt;
  const HostTensor& updates = need(2);
  if (updates.count() != tuples * sliceSize)
    badInput("ScatterND: updates has " + std::to_string(updates.count()) + " elements, not " +
             std::to_string(tuples * sliceSize));
  HostTensor out = x;
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t e = 0; e < sliceSize; ++e) copyElement(out, base(t) + e, updates, t * sliceSize + e);
  return one(std::move(out));
}

}  // namespace

bool isMathOp(const std::string& op) { return std::find(mathOps().begin(), mathOps().end(), op) != mathOps().end(); }

// Long: one short case per op family of mathOps(), kept together as the list they mirror.
Result evaluateMathOp(const Node& n, const std::vector<const HostTensor*>& in, std::string& why, uint64_t maxBytes) {
  const std::string& op = n.opType();
  auto refuse = [&](const std::string& w) -> Result {
    why = w;
    return std::nullopt;
  };
  if (in.empty() || !in[0]) badInput(op + ": input 0 is missing");
  if (op == "Einsum") return evaluateEinsum(n, in, why, maxBytes);
  const HostTensor& x = *in[0];
  bool indexOp =
      op == "Flatten" || op == "Tile" || op == "CumSum" || op.starts_with("Gather") || op.starts_with("Scatter");
  if (indexOp) {
    auto r = indexing(n, in, x, maxBytes, why);
    if (!r && why.empty()) why = op + " with these attributes or types is not folded";
    return r;
  }
  if (!arithmetic(x.type)) return refuse(op + " on " + dataTypeName(x.type) + " is not folded");
  if (op.starts_with("Reduce")) return reduce(n, in, x);
  if (op == "Sign") {
    HostTensor out = x;
    dispatch(x.type, [&](auto t) {
      using T = decltype(t);
      for (size_t i = 0; i < static_cast<size_t>(x.count()); ++i) {
        T v = load<T>(x.data, i);
        store<T>(out.data, i, static_cast<T>(v > T{} ? 1 : v < T{} ? -1 : 0));
      }
      return 0;
    });
    return one(std::move(out));
  }
  if (op == "Sqrt" || op == "Exp" || op == "Log" || op == "Floor" || op == "Ceil" || op == "Round" ||
      op == "Reciprocal") {
    if (!isFloat(x.type)) return refuse(op + " on " + dataTypeName(x.type) + " is not folded");
    return unaryFloat(op, x);
  }
  if (op == "Pow") {
    if (in.size() < 2 || !in[1]) badInput("Pow: input 1 is missing");
    const HostTensor& y = *in[1];
    if (!arithmetic(y.type))
      return refuse("Pow with a " + std::string(dataTypeName(y.type)) + " exponent is not folded");
    HostTensor out{x.type, {}, {}};
    out.dims = broadcast({x.dims, y.dims}, "Pow", [&](size_t, const std::vector<size_t>& at) {
      dispatch(x.type, [&](auto t) {
        using T = decltype(t);
        T r = powOf<T>(load<T>(x.data, at[0]), asDouble(y, at[1]));
        out.data.append(reinterpret_cast<const char*>(&r), sizeof(T));
        return 0;
      });
    });
    return one(std::move(out));
  }
  // Mod, Sum, Mean: inputs of one type, broadcast.
  for (const HostTensor* t : in)
    if (!t || t->type != x.type) return refuse(op + " on inputs of different types");
  bool fmod = intAttr(n, "fmod").value_or(0) != 0;
  if (op == "Mod" && isFloat(x.type) && !fmod) badInput("Mod: fmod must be 1 for floating-point inputs");
  if (op == "Mean" && !isFloat(x.type))
    return refuse("Mean on " + std::string(dataTypeName(x.type)) + " is not folded");
  std::vector<std::vector<int64_t>> shapes;
  for (const HostTensor* t : in) shapes.push_back(t->dims);
  HostTensor out{x.type, {}, {}};
  const bool mod = op == "Mod", mean = op == "Mean";  // resolved once, not per element
  dispatch(x.type, [&](auto tag) {
    using T = decltype(tag);
    out.dims = broadcast(shapes, op.c_str(), [&](size_t, const std::vector<size_t>& at) {
      T r = load<T>(in[0]->data, at[0]);
      if (mod) {
        r = modOf<T>(r, load<T>(in[1]->data, at[1]), fmod);
      } else {
        for (size_t k = 1; k < in.size(); ++k) {
          T v = load<T>(in[k]->data, at[k]);
          if constexpr (std::is_integral_v<T>)
            r = static_cast<T>(static_cast<uint64_t>(r) + static_cast<uint64_t>(v));
          else
            r = static_cast<T>(r + v);
        }
        if constexpr (!std::is_integral_v<T>)
          if (mean) r = static_cast<T>(r / static_cast<T>(in.size()));
      }
      out.data.append(reinterpret_cast<const char*>(&r), sizeof(T));
    });
    return 0;
  });
  return one(std::move(out));
}

}  // namespace graphrw::fold_detail
