// The constant-folding evaluator's Einsum: any equation ONNX accepts
// (explicit or implicit output, one ellipsis per term, repeated labels for
// diagonals and traces) on float, double, int32 and int64 constants. Every
// combination of label values is visited once, so the work is capped.
#include <algorithm>

#include "fold/fold_internal.h"

namespace graphrw::fold_detail {
namespace {

using namespace ir;

constexpr int kLetters = 52;  // a-z, A-Z; the axes an ellipsis stands for are labels 52, 53, ...
constexpr int kEllipsis = -2;
constexpr double kMaxProducts = 64.0 * 1024 * 1024;

// Labels per axis of each input and of the output, and each label's size.
struct EinsumPlan {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> size;
};

int letterLabel(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + (c - 'A') : -1; }

// A term's letters, kEllipsis for "..."; false when it holds anything else or two ellipses.
bool parseTerm(const std::string& term, std::vector<int>& out) {
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (std::count(out.begin(), out.end(), kEllipsis)) return false;
      out.push_back(kEllipsis);
      i += 2;
    } else if (int l = letterLabel(term[i]); l >= 0) {
      out.push_back(l);
    } else {
      return false;
    }
  }
  return true;
}

std::vector<std::string> splitTerms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return terms;
    start = comma + 1;
  }
}

// The inputs' axes as labels, each label's size checked (ellipsis axes broadcast from 1).
bool labelInputs(const std::vector<std::vector<int>>& parsed, const std::vector<const HostTensor*>& in,
                 EinsumPlan& plan, size_t& ellipsisRank, std::string& why) {
  bool seen = false;
  for (size_t k = 0; k < parsed.size(); ++k) {
    bool ellipsis = std::count(parsed[k].begin(), parsed[k].end(), kEllipsis) > 0;
    size_t letters = parsed[k].size() - (ellipsis ? 1 : 0);
    size_t rank = in[k]->dims.size();
    if (rank < letters || (!ellipsis && rank != letters)) {
      why = "Einsum: term " + std::to_string(k) + " does not match its input's rank";
      return false;
    }
    if (!ellipsis) continue;
    // As ONNX's inference (and so ONNX Runtime): every ellipsis stands for as many axes.
    if (seen && ellipsisRank != rank - letters) {
      why = "Einsum: the ellipses stand for different numbers of axes";
      return false;
    }
    seen = true;
    ellipsisRank = rank - letters;
  }
  plan.size.assign(kLetters + ellipsisRank, -1);
  for (size_t k = 0; k < parsed.size(); ++k) {
    std::vector<int> labels;
    for (int l : parsed[k]) {
      if (l != kEllipsis)
        labels.push_back(l);
      else
        for (size_t e = 0; e < ellipsisRank; ++e) labels.push_back(static_cast<int>(kLetters + e));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t& size = plan.size[static_cast<size_t>(labels[d])];
      int64_t dim = in[k]->dims[d];
      bool broadcasts = labels[d] >= kLetters;
      if (size < 0 || (broadcasts && size == 1))
        size = dim;
      else if (dim != size && !(broadcasts && dim == 1)) {
        why = "Einsum: label sizes disagree";
        return false;
      }
    }
    plan.inputs.push_back(std::move(labels));
  }
  return true;
}

// The output's labels: as written after "->", or the ellipsis axes then the
// letters used once, in alphabetical order.
bool labelOutput(const std::string& eq, size_t arrow, const std::vector<std::vector<int>>& parsed, size_t ellipsisRank,
                 EinsumPlan& plan, std::string& why) {
  std::vector<int> ellipsisLabels;
  for (size_t e = 0; e < ellipsisRank; ++e) ellipsisLabels.push_back(static_cast<int>(kLetters + e));
  if (arrow == std::string::npos) {
    plan.output = ellipsisLabels;
    std::vector<int> uses(kLetters, 0);
    for (const auto& p : parsed)
      for (int l : p)
        if (l >= 0) uses[static_cast<size_t>(l)]++;
    for (int l = 0; l < kLetters; ++l)
      if (uses[static_cast<size_t>(l)] == 1) plan.output.push_back(l);
    return true;
  }
  std::vector<int> out;
  if (!parseTerm(eq.substr(arrow + 2), out)) {
    why = "Einsum: cannot read the output term";
    return false;
  }
  for (int l : out) {
    if (l == kEllipsis) {
      plan.output.insert(plan.output.end(), ellipsisLabels.begin(), ellipsisLabels.end());
      continue;
    }
    if (plan.size[static_cast<size_t>(l)] < 0 || std::count(plan.output.begin(), plan.output.end(), l)) {
      why = "Einsum: an output label is not an input label, or repeats";
      return false;
    }
    plan.output.push_back(l);
  }
  return true;
}

std::optional<EinsumPlan> planEinsum(const std::string& equation, const std::vector<const HostTensor*>& in,
                                     std::string& why) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  auto arrow = eq.find("->");
  auto terms = splitTerms(eq.substr(0, arrow));
  if (terms.size() != in.size()) {
    why = "Einsum: the equation has " + std::to_string(terms.size()) + " inputs, the node " + std::to_string(in.size());
    return std::nullopt;
  }
  std::vector<std::vector<int>> parsed(terms.size());
  for (size_t k = 0; k < terms.size(); ++k)
    if (!parseTerm(terms[k], parsed[k])) {
      why = "Einsum: cannot read term " + std::to_string(k);
      return std::nullopt;
    }
  EinsumPlan plan;
  size_t ellipsisRank = 0;
  if (!labelInputs(parsed, in, plan, ellipsisRank, why) || !labelOutput(eq, arrow, parsed, ellipsisRank, plan, why))
    return std::nullopt;
  return plan;
}

// Per label: its stride in a tensor with these labels (0 where absent or
// broadcast; a repeated label's strides add up: the diagonal).
std::vector<int64_t> labelStrides(const EinsumPlan& plan, const std::vector<int>& labels,
                                  const std::vector<int64_t>& dims) {
  std::vector<int64_t> per(plan.size.size(), 0);
  auto strides = stridesOf(dims);
  for (size_t d = 0; d < labels.size(); ++d)
    if (dims[d] != 1 || plan.size[static_cast<size_t>(labels[d])] == 1)
      per[static_cast<size_t>(labels[d])] += strides[d];
  return per;
}

// Products summed per output element (floats in double, integers wrapping as ONNX Runtime's do).
template <typename T>
void contract(const EinsumPlan& plan, const std::vector<const HostTensor*>& in, const std::vector<int>& used,
              HostTensor& out) {
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  std::vector<std::vector<int64_t>> strides;
  for (size_t k = 0; k < in.size(); ++k) strides.push_back(labelStrides(plan, plan.inputs[k], in[k]->dims));
  auto outStrides = labelStrides(plan, plan.output, out.dims);
  std::vector<Acc> acc(static_cast<size_t>(out.count()), Acc(0));
  bool empty = false;
  for (int l : used) empty |= plan.size[static_cast<size_t>(l)] == 0;
  std::vector<int64_t> idx(used.size(), 0);
  for (bool more = !empty; more;) {
    Acc product = Acc(1);
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t at = 0;
      for (size_t u = 0; u < used.size(); ++u) at += idx[u] * strides[k][static_cast<size_t>(used[u])];
      product = product * static_cast<Acc>(load<T>(in[k]->data, static_cast<size_t>(at)));
    }
    int64_t o = 0;
    for (size_t u = 0; u < used.size(); ++u) o += idx[u] * outStrides[static_cast<size_t>(used[u])];
    acc[static_cast<size_t>(o)] = acc[static_cast<size_t>(o)] + product;
    more = false;
    for (size_t u = used.size(); u-- > 0;) {
      if (++idx[u] < plan.size[static_cast<size_t>(used[u])]) {
        more = true;
        break;
      }
      idx[u] = 0;
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) store<T>(out.data, i, static_cast<T>(acc[i]));
}

}  // namespace

std::optional<std::vector<HostTensor>> evaluateEinsum(const Node& n, const std::vector<const HostTensor*>& in,
                                                      std::string& why, uint64_t maxBytes) {
  const Attribute* equation = n.attribute("equation");
  if (!equation || in.empty()) {
    why = "Einsum without an equation or inputs";
    return std::nullopt;
  }
  for (const HostTensor* t : in)
    if (!t || t->type != in[0]->type || !arithmetic(t->type)) {
      why = "Einsum on these input types is not folded";
      return std::nullopt;
    }
  auto plan = planEinsum(equation->proto().s(), in, why);
  if (!plan) return std::nullopt;
  std::vector<int> used;  // labels some input has (output labels are input labels)
  double products = 1;
  for (size_t l = 0; l < plan->size.size(); ++l) {
    bool any = false;
    for (const auto& labels : plan->inputs) any |= std::count(labels.begin(), labels.end(), static_cast<int>(l)) > 0;
    if (!any) continue;
    used.push_back(static_cast<int>(l));
    products *= static_cast<double>(plan->size[l]);
  }
  HostTensor out{in[0]->type, {}, {}};
  double count = 1;
  for (int l : plan->output) {
    out.dims.push_back(plan->size[static_cast<size_t>(l)]);
    count *= static_cast<double>(out.dims.back());
  }
  if (count * static_cast<double>(elementSize(out.type)) > static_cast<double>(maxBytes) || products > kMaxProducts) {
    why = "Einsum: the result or the work is over the limit";
    return std::nullopt;
  }
  out.data.assign(static_cast<size_t>(out.count()) * elementSize(out.type), '\0');
  dispatch(out.type, [&](auto tag) {
    contract<decltype(tag)>(*plan, in, used, out);
    return 0;
  });
  return oneResult(std::move(out));
}

}  // namespace graphrw::fold_detail
