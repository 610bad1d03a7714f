#include "fold/fold.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include <unistd.h>

#include "fold/fold_internal.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;
using TP = onnx::TensorProto;
using namespace fold_detail;

std::vector<HostTensor> oneResult(HostTensor t) {
  std::vector<HostTensor> v;
  v.push_back(std::move(t));
  return v;
}

namespace {

const std::vector<std::string>& foldable() {
  static const std::vector<std::string> ops = {"Identity", "Transpose", "Reshape", "Squeeze", "Unsqueeze",
                                               "Concat",   "Split",     "Slice",   "Cast",    "Add",
                                               "Sub",      "Mul",       "Div",     "Neg"};
  return ops;
}

// Copies the elements of `in` at the multi-index `offset + i * step` (per axis) into out.
HostTensor strided(const HostTensor& in, const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                   const std::vector<int64_t>& outDims) {
  size_t es = elementSize(in.type);
  HostTensor out{in.type, outDims, {}};
  out.data.resize(static_cast<size_t>(out.count()) * es);
  auto inStrides = stridesOf(in.dims);
  std::vector<int64_t> idx(outDims.size(), 0);
  for (int64_t o = 0; o < out.count(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (start[d] + idx[d] * step[d]) * inStrides[d];
    std::memcpy(out.data.data() + static_cast<size_t>(o) * es, in.data.data() + static_cast<size_t>(src) * es, es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < outDims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

HostTensor transpose(const HostTensor& in, std::vector<int64_t> perm) {
  size_t rank = in.dims.size();
  if (perm.empty())
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != rank)
    badInput("Transpose: perm has " + std::to_string(perm.size()) + " axes, the tensor " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
      badInput("Transpose: perm is not a permutation of 0.." + std::to_string(rank - 1) + " (" + std::to_string(p) +
               (p >= 0 && p < static_cast<int64_t>(rank) ? " repeated)" : " out of range)"));
    seen[static_cast<size_t>(p)] = true;
  }
  size_t es = elementSize(in.type);
  std::vector<int64_t> outDims(rank);
  for (size_t i = 0; i < rank; ++i) outDims[i] = in.dims[static_cast<size_t>(perm[i])];
  HostTensor out{in.type, outDims, {}};
  out.data.resize(in.data.size());
  auto inStrides = stridesOf(in.dims);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < out.count(); ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += idx[d] * inStrides[static_cast<size_t>(perm[d])];
    std::memcpy(out.data.data() + static_cast<size_t>(o) * es, in.data.data() + static_cast<size_t>(src) * es, es);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < outDims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename T>
HostTensor binary(const std::string& op, const HostTensor& a, const HostTensor& b) {
  size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> da(rank, 1), db(rank, 1), dout(rank);
  std::copy(a.dims.begin(), a.dims.end(), da.begin() + static_cast<long>(rank - a.dims.size()));
  std::copy(b.dims.begin(), b.dims.end(), db.begin() + static_cast<long>(rank - b.dims.size()));
  for (size_t i = 0; i < rank; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) badInput(op + ": shapes do not broadcast");
    dout[i] = da[i] == 1 ? db[i] : da[i];
  }
  HostTensor out{a.type, dout, {}};
  out.data.resize(static_cast<size_t>(out.count()) * sizeof(T));
  auto sa = stridesOf(da), sb = stridesOf(db);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < out.count(); ++o) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (da[d] != 1) ia += idx[d] * sa[d];
      if (db[d] != 1) ib += idx[d] * sb[d];
    }
    T x = load<T>(a.data, static_cast<size_t>(ia)), y = load<T>(b.data, static_cast<size_t>(ib)), r{};
    if constexpr (std::is_integral_v<T>) {
      // Integers wrap as a runtime's two's complement arithmetic does (in
      // 64-bit unsigned arithmetic, where overflow is defined); a division
      // by zero or the one signed quotient that does not fit (MIN / -1)
      // is refused, as the runtime would trap on it.
      const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      if (op == "Add")
        r = static_cast<T>(ux + uy);
      else if (op == "Sub")
        r = static_cast<T>(ux - uy);
      else if (op == "Mul")
        r = static_cast<T>(ux * uy);
      else {
        if (y == 0) badInput("Div: integer division by zero");
        if constexpr (std::is_signed_v<T>)
          if (y == T(-1) && x == std::numeric_limits<T>::min())
            badInput("Div: integer overflow (" + std::to_string(x) + " / -1 does not fit " + dataTypeName(a.type) +
                     ")");
        r = static_cast<T>(x / y);
      }
    } else {
      if (op == "Add")
        r = x + y;
      else if (op == "Sub")
        r = x - y;
      else if (op == "Mul")
        r = x * y;
      else
        r = x / y;
    }
    store<T>(out.data, static_cast<size_t>(o), r);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < dout[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

HostTensor cast(const HostTensor& in, int32_t to) {
  HostTensor out{to, in.dims, {}};
  size_t n = static_cast<size_t>(in.count());
  out.data.resize(n * elementSize(to));
  dispatch(in.type, [&](auto from) {
    using F = decltype(from);
    dispatch(to, [&](auto target) {
      using T = decltype(target);
      for (size_t i = 0; i < n; ++i) store<T>(out.data, i, static_cast<T>(load<F>(in.data, i)));
      return 0;
    });
    return 0;
  });
  return out;
}

// Casts from or to bool: bool is 0 or 1; a number is true when it is not 0 (NaN too).
HostTensor castBool(const HostTensor& in, int32_t to) {
  size_t n = static_cast<size_t>(in.count());
  std::vector<bool> truth(n);
  if (in.type == TP::BOOL) {
    for (size_t i = 0; i < n; ++i) truth[i] = in.data[i] != 0;
  } else {
    dispatch(in.type, [&](auto from) {
      using F = decltype(from);
      for (size_t i = 0; i < n; ++i) truth[i] = load<F>(in.data, i) != F{};
      return 0;
    });
  }
  HostTensor out{to, in.dims, std::string(n * elementSize(to), '\0')};
  if (to == TP::BOOL) {
    for (size_t i = 0; i < n; ++i) out.data[i] = truth[i] ? 1 : 0;
    return out;
  }
  dispatch(to, [&](auto target) {
    using T = decltype(target);
    for (size_t i = 0; i < n; ++i) store<T>(out.data, i, static_cast<T>(truth[i] ? 1 : 0));
    return 0;
  });
  return out;
}

std::vector<int64_t> axesFrom(const Node& n, const std::vector<const HostTensor*>& in, size_t index) {
  if (index < in.size() && in[index]) return in[index]->asInts();
  return ints(n, "axes");
}

}  // namespace

bool isFoldable(const Node& node) {
  return isDefaultDomain(node.domain()) &&
         (std::find(foldable().begin(), foldable().end(), node.opType()) != foldable().end() ||
          isShapeOp(node.opType()) || isMathOp(node.opType()));
}

namespace {

std::optional<std::vector<HostTensor>> evaluateNode(const Node& n, const std::vector<const HostTensor*>& in,
                                                    std::string& why, uint64_t maxBytes);

}  // namespace

std::optional<std::vector<HostTensor>> evaluate(const Node& n, const std::vector<const HostTensor*>& in,
                                                std::string& why, uint64_t maxBytes) {
  try {
    return evaluateNode(n, in, why, std::min(maxBytes, machineMemory()));
  } catch (const std::bad_alloc&) {
    // --max-bytes above what the machine has: the node stays, as one too large would.
    why = n.opType() + ": its result needs more memory than could be allocated";
    return std::nullopt;
  }
}

namespace {

// Long: one short case per foldable op (element-wise ops share a loop), as foldable() lists them.
std::optional<std::vector<HostTensor>> evaluateNode(const Node& n, const std::vector<const HostTensor*>& in,
                                                    std::string& why, uint64_t maxBytes) {
  const std::string& op = n.opType();
  auto need = [&](size_t i) -> const HostTensor& {
    if (i >= in.size() || !in[i]) badInput(op + ": input " + std::to_string(i) + " is missing");
    return *in[i];
  };
  const HostTensor& x = need(0);
  if (op == "Identity") return oneResult(x);
  if (op == "Transpose") return oneResult(transpose(x, ints(n, "perm")));
  if (op == "Reshape") {
    auto shape = need(1).asInts();
    bool allowZero = intAttr(n, "allowzero").value_or(0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allowZero) shape[i] = i < x.dims.size() ? x.dims[i] : 0;
      if (shape[i] == -1)
        infer = static_cast<int64_t>(i);
      else
        known *= shape[i];
    }
    if (infer >= 0) shape[static_cast<size_t>(infer)] = known ? x.count() / known : 0;
    HostTensor out = x;
    out.dims = shape;
    if (out.count() != x.count()) badInput("Reshape: shape does not fit the tensor's element count");
    return oneResult(std::move(out));
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    auto axes = axesFrom(n, in, 1);
    HostTensor out = x;
    size_t axesRank = op == "Squeeze" ? x.dims.size() : x.dims.size() + axes.size();
    std::vector<int64_t> normalised;
    for (int64_t a : axes) {
      int64_t k = normAxis(a, axesRank, op.c_str());
      if (std::find(normalised.begin(), normalised.end(), k) != normalised.end())
        badInput(op + ": axis " + std::to_string(a) + " is given twice");
      normalised.push_back(k);
    }
    if (op == "Squeeze") {
      std::vector<int64_t> dims;
      for (auto& a : axes) a = normAxis(a, x.dims.size(), "Squeeze");
      for (size_t i = 0; i < x.dims.size(); ++i) {
        bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
        if ((axes.empty() && x.dims[i] == 1) || (listed && x.dims[i] == 1)) continue;
        if (listed) badInput("Squeeze: axis " + std::to_string(i) + " is not 1");
        dims.push_back(x.dims[i]);
      }
      out.dims = dims;
    } else {
      size_t rank = x.dims.size() + axes.size();
      for (auto& a : axes) a = normAxis(a, rank, "Unsqueeze");
      std::vector<int64_t> dims;
      size_t k = 0;
      for (size_t i = 0; i < rank; ++i)
        dims.push_back(std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end() ? 1 : x.dims[k++]);
      out.dims = dims;
    }
    return oneResult(std::move(out));
  }
  if (op == "Concat") {
    int64_t axis = normAxis(intAttr(n, "axis").value_or(0), x.dims.size(), "Concat");
    std::vector<int64_t> dims = x.dims;
    dims[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const HostTensor& t = need(i);
      if (t.type != x.type || t.dims.size() != x.dims.size()) badInput("Concat: inputs differ in type or rank");
      dims[static_cast<size_t>(axis)] += t.dims[static_cast<size_t>(axis)];
    }
    size_t es = elementSize(x.type);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims[static_cast<size_t>(d)];
    HostTensor out{x.type, dims, {}};
    out.data.reserve(static_cast<size_t>(out.count()) * es);
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < in.size(); ++i) {
        size_t chunk = static_cast<size_t>(in[i]->count() / std::max<int64_t>(outer, 1)) * es;
        out.data.append(in[i]->data, static_cast<size_t>(o) * chunk, chunk);
      }
    return oneResult(std::move(out));
  }
  if (op == "Split") {
    int64_t axis = normAxis(intAttr(n, "axis").value_or(0), x.dims.size(), "Split");
    int64_t len = x.dims[static_cast<size_t>(axis)];
    std::vector<int64_t> split = in.size() > 1 && in[1] ? in[1]->asInts() : ints(n, "split");
    size_t parts = n.outputs().size();
    if (split.empty()) {
      int64_t k = static_cast<int64_t>(parts), each = (len + k - 1) / k;
      for (size_t i = 0; i < parts; ++i) split.push_back(std::min(each, len - each * static_cast<int64_t>(i)));
    }
    if (split.size() != parts || std::accumulate(split.begin(), split.end(), int64_t{0}) != len)
      badInput("Split: the parts do not add up to the axis length");
    std::vector<HostTensor> outs;
    int64_t at = 0;
    for (int64_t s : split) {
      std::vector<int64_t> start(x.dims.size(), 0), step(x.dims.size(), 1), dims = x.dims;
      start[static_cast<size_t>(axis)] = at;
      dims[static_cast<size_t>(axis)] = s;
      outs.push_back(strided(x, start, step, dims));
      at += s;
    }
    return outs;
  }
  if (op == "Slice") {
    std::vector<int64_t> starts, ends, axes, steps;
    if (in.size() > 1) {
      starts = need(1).asInts();
      ends = need(2).asInts();
      if (in.size() > 3 && in[3]) axes = in[3]->asInts();
      if (in.size() > 4 && in[4]) steps = in[4]->asInts();
    } else {
      starts = ints(n, "starts");
      ends = ints(n, "ends");
      axes = ints(n, "axes");
    }
    size_t rank = x.dims.size();
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> start(rank, 0), step(rank, 1), dims = x.dims;
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(normAxis(axes[i], rank, "Slice"));
      int64_t d = x.dims[a], st = steps[i];
      if (st == 0) badInput("Slice: step 0");
      auto adjust = [&](int64_t v) { return v < 0 ? v + d : v; };
      int64_t s = adjust(starts[i]), e = adjust(ends[i]);
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
      } else {
        s = std::clamp<int64_t>(s, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
      }
      int64_t count =
          st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st) : std::max<int64_t>(0, (s - e + (-st) - 1) / (-st));
      start[a] = s;
      step[a] = st;
      dims[a] = count;
    }
    return oneResult(strided(x, start, step, dims));
  }
  if (op == "Cast") {
    auto to = intAttr(n, "to");
    if (!to) badInput("Cast: no 'to' attribute");
    auto target = static_cast<int32_t>(*to);
    if ((x.type == TP::BOOL || target == TP::BOOL) && (arithmetic(x.type) || x.type == TP::BOOL) &&
        (arithmetic(target) || target == TP::BOOL))
      return oneResult(castBool(x, target));
    if (!arithmetic(x.type) || !arithmetic(target)) {
      why = std::string("Cast from ") + dataTypeName(x.type) + " to " + dataTypeName(static_cast<int32_t>(*to)) +
            " is not folded";
      return std::nullopt;
    }
    return oneResult(cast(x, static_cast<int32_t>(*to)));
  }
  if (op == "Neg") {
    if (!arithmetic(x.type)) {
      why = std::string("Neg on ") + dataTypeName(x.type) + " is not folded";
      return std::nullopt;
    }
    HostTensor out = x;
    dispatch(x.type, [&](auto t) {
      using T = decltype(t);
      for (size_t i = 0; i < static_cast<size_t>(x.count()); ++i) {
        T v = load<T>(x.data, i);
        if constexpr (std::is_integral_v<T>)
          store<T>(out.data, i,
                   static_cast<T>(uint64_t{0} - static_cast<uint64_t>(v)));  // MIN wraps to MIN, no overflow
        else
          store<T>(out.data, i, static_cast<T>(-v));
      }
      return 0;
    });
    return oneResult(std::move(out));
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    const HostTensor& y = need(1);
    if (x.type != y.type || !arithmetic(x.type)) {
      why = op + " on " + dataTypeName(x.type) + " and " + dataTypeName(y.type) + " is not folded";
      return std::nullopt;
    }
    return dispatch(x.type, [&](auto t) { return oneResult(binary<decltype(t)>(op, x, y)); });
  }
  if (isShapeOp(op)) return evaluateShapeOp(n, in, why, maxBytes);
  if (isMathOp(op)) return evaluateMathOp(n, in, why, maxBytes);
  why = op + " is not folded";
  return std::nullopt;
}

}  // namespace

}  // namespace graphrw
