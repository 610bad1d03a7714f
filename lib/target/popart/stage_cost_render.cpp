// The stage costs as people read them: a table (inspect --stages) and a picture (--svg).
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

#include "target/popart/stage_cost.h"

namespace graphrw::stage_cost {

using json = nlohmann::json;

std::string humanBytes(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {

// FLOPs with an SI prefix: "393.2 K", "21.7 G".
std::string si(uint64_t flops) {
  char buf[32];
  const char* prefixes[] = {"", " K", " M", " G", " T", " P"};
  double v = static_cast<double>(flops);
  int p = 0;
  while (v >= 1000 && p < 5) v /= 1000, ++p;
  std::snprintf(buf, sizeof buf, p ? "%.1f%s" : "%.0f%s", v, prefixes[p]);
  return buf;
}

void row(std::ostringstream& os, const std::string& label, const json& e) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-10s %7zu %12s %12s %12s %12s %10s\n", label.c_str(), e["nodes"].get<size_t>(),
                humanBytes(e["weights"]).c_str(), humanBytes(e["optimizer_state"]).c_str(),
                humanBytes(e["activations"]).c_str(), humanBytes(e["memory"]).c_str(), si(e["flops"]).c_str());
  os << buf;
}

}  // namespace

std::string renderStageCosts(const json& costs) {
  std::ostringstream os;
  os << "Stage costs ("
     << (costs["training"].get<bool>() ? std::string("training, ") + costs["optimizer"].get<std::string>()
                                       : "inference");
  if (costs.contains("batch"))
    os << "; batch " << costs["batch"].get<int64_t>() << " (the model's: "
       << (costs["model_batch"].is_string() ? costs["model_batch"].get<std::string>()
                                            : std::to_string(costs["model_batch"].get<int64_t>()))
       << ")";
  if (costs.contains("ipu_memory")) os << "; " << humanBytes(costs["ipu_memory"]) << " per IPU";
  if (costs.contains("reserve")) os << ", " << humanBytes(costs["reserve"]) << " of it reserved";
  os << "):\n";
  char head[256];
  std::snprintf(head, sizeof head, "  %-10s %7s %12s %12s %12s %12s %10s\n", "", "nodes", "weights", "optimizer",
                "activations", "memory", "FLOPs");
  os << head;
  for (const auto& e : costs["stages"]) row(os, "stage " + std::to_string(e["stage"].get<int64_t>()), e);
  for (const auto& e : costs["ipus"]) row(os, "ipu " + std::to_string(e["ipu"].get<int64_t>()), e);
  if (costs.contains("unplaced")) row(os, "unplaced", costs["unplaced"]);
  row(os, "total", costs["total"]);
  for (const auto& e : costs["ipus"])
    if (e.contains("fits") && !e["fits"].get<bool>())
      os << "ipu " << e["ipu"].get<int64_t>() << " does not fit: " << humanBytes(e["missing"]) << " missing\n";
  if (costs.contains("bottleneck")) {
    const json& b = costs["bottleneck"];
    std::string which = b.contains("stage") ? "stage " + std::to_string(b["stage"].get<int64_t>())
                                            : "ipu " + std::to_string(b["ipu"].get<int64_t>());
    char share[32];
    std::snprintf(share, sizeof share, "%.0f%%", 100 * b["share"].get<double>());
    os << "Bottleneck: " << which << " (" << share << " of the FLOPs)\n";
  }
  if (!costs["stages"].empty() && costs["stages"][0].contains("stash")) {
    os << "Stash (micro-batches of activations each stage holds, PopART's pipeline):";
    for (const auto& e : costs["stages"])
      os << " stage " << e["stage"].get<int64_t>() << " x" << e["stash"].get<uint64_t>();
    os << "\n";
  }
  for (const char* kind : {"stages", "ipus"}) {
    if (std::string(kind) == "ipus" && !costs["stages"].empty()) break;  // the stages' layers say it
    for (const auto& e : costs[kind]) {
      const auto& layers = e["layers"];
      if (layers.empty()) continue;
      os << (std::string(kind) == "stages" ? "stage " + std::to_string(e["stage"].get<int64_t>())
                                           : "ipu " + std::to_string(e["ipu"].get<int64_t>()))
         << ": " << layers.front().get<std::string>();
      if (layers.size() > 1) os << " .. " << layers.back().get<std::string>();
      os << " (" << layers.size() << (layers.size() == 1 ? " layer)\n" : " layers)\n");
    }
  }
  if (costs["function_calls"].get<size_t>())
    os << costs["function_calls"].get<size_t>()
       << " nodes call model-local functions, whose bodies are not costed: expand the model first (graphrw expand)\n";
  if (costs["unknown_shapes"].get<size_t>())
    os << costs["unknown_shapes"].get<size_t>()
       << " values have no static shape: counted as 0 bytes "
          "(give symbolic dimensions a size with graphrw legalize --dim NAME=N; -v names the values)\n";
  if (costs["unknown_flops"].get<size_t>())
    os << costs["unknown_flops"].get<size_t>()
       << " nodes whose FLOPs count (MatMul, Gemm, Conv, ConvTranspose, a calibration's ops) have no "
          "static shapes: counted as 0 FLOPs\n";
  return os.str();
}

namespace {

std::string xmlEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

// Long: one drawing, column by column (bars, labels, layer lists), in the order SVG paints it.
std::string stageCostsSvg(const json& costs) {
  const bool staged = !costs["stages"].empty();
  const json& columns = staged ? costs["stages"] : costs["ipus"];
  // The line is what the tensors may use: the IPU's memory less the calibration's reserve.
  const uint64_t reserve = costs.value("reserve", uint64_t{0});
  const uint64_t memoryPerIpu = costs.value("ipu_memory", uint64_t{0});
  const uint64_t limit = memoryPerIpu > reserve ? memoryPerIpu - reserve : 0;
  uint64_t top = limit;
  size_t lines = 0;
  for (const auto& e : columns) {
    top = std::max<uint64_t>(top, e["memory"]);
    lines = std::max(lines, std::min<size_t>(e["layers"].size(), 24));
  }
  top = std::max<uint64_t>(top, 1);
  const int colWidth = 170, barTop = 70, barHeight = 260, left = 40;
  const int width = left * 2 + 40 + colWidth * static_cast<int>(std::max<size_t>(columns.size(), 1));
  const int height = barTop + barHeight + 110 + 14 * static_cast<int>(lines + 1) + 20;
  auto y = [&](uint64_t bytes) {
    return barTop + barHeight - static_cast<double>(barHeight) * static_cast<double>(bytes) / static_cast<double>(top);
  };
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
     << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title =
      std::string(staged ? "Pipeline stages" : "IPUs") + " (" +
      (costs["training"].get<bool>() ? "training, " + costs["optimizer"].get<std::string>()
                                     : std::string("inference")) +
      (costs.contains("batch") ? "; batch " + std::to_string(costs["batch"].get<int64_t>()) : std::string()) +
      (memoryPerIpu ? "; " + humanBytes(memoryPerIpu) + " per IPU" : std::string()) +
      (reserve ? ", " + humanBytes(reserve) + " reserved" : std::string()) + ")";
  os << "<text x=\"" << left << "\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" << xmlEscaped(title)
     << "</text>\n";
  os << "<text x=\"" << left << "\" y=\"48\" fill=\"#555\">memory: <tspan fill=\"#4e79a7\">weights</tspan>, "
     << "<tspan fill=\"#f28e2b\">optimizer state</tspan>, <tspan fill=\"#59a14f\">activations</tspan>"
     << (limit ? (reserve ? "; dashed: the IPU's memory less the reserve" : "; dashed: the IPU's memory") : "")
     << "</text>\n";
  const json* bottleneck = costs.contains("bottleneck") ? &costs["bottleneck"] : nullptr;
  for (size_t c = 0; c < columns.size(); ++c) {
    const json& e = columns[c];
    const int x = left + colWidth * static_cast<int>(c) + 30;
    const int64_t id = e[staged ? "stage" : "ipu"].get<int64_t>();
    const bool slowest = bottleneck && (*bottleneck)[staged ? "stage" : "ipu"].get<int64_t>() == id;
    uint64_t base = 0;
    os << "<g>\n<title>"
       << xmlEscaped((staged ? "stage " : "ipu ") + std::to_string(id) + ": " + humanBytes(e["memory"]) + ", " +
                     si(e["flops"]) + " FLOPs")
       << "</title>\n";
    for (auto [field, colour] :
         {std::pair{"weights", "#4e79a7"}, {"optimizer_state", "#f28e2b"}, {"activations", "#59a14f"}}) {
      uint64_t bytes = e[field];
      if (!bytes) continue;
      char rect[256];
      std::snprintf(rect, sizeof rect, "<rect x=\"%d\" y=\"%.1f\" width=\"90\" height=\"%.1f\" fill=\"%s\"/>\n", x,
                    y(base + bytes), y(base) - y(base + bytes), colour);
      os << rect;
      base += bytes;
    }
    os << "<rect x=\"" << x << "\" y=\"" << barTop << "\" width=\"90\" height=\"" << barHeight
       << "\" fill=\"none\" stroke=\"" << (slowest ? "#e15759\" stroke-width=\"3" : "#999") << "\"/>\n</g>\n";
    int ty = barTop + barHeight + 20;
    std::string label = staged ? "stage " + std::to_string(id) : "ipu " + std::to_string(id);
    if (staged && !e["ipus"].empty()) {
      label += " on IPU";
      for (const auto& ipu : e["ipus"]) label += " " + std::to_string(ipu.get<int64_t>());
    }
    os << "<text x=\"" << x << "\" y=\"" << ty << "\" font-weight=\"bold\">" << xmlEscaped(label) << "</text>\n";
    os << "<text x=\"" << x << "\" y=\"" << ty + 16 << "\">" << xmlEscaped(humanBytes(e["memory"])) << "</text>\n";
    os << "<text x=\"" << x << "\" y=\"" << ty + 32 << "\"" << (slowest ? " fill=\"#e15759\"" : "") << ">"
       << xmlEscaped(si(e["flops"]) + " FLOPs" + (slowest ? " (bottleneck)" : "")) << "</text>\n";
    // A stage sharing its IPU with others: the IPU's total, which is what must fit.
    uint64_t memory = e["memory"];
    std::string shared;
    if (staged && e["ipus"].size() == 1)
      for (const auto& ipu : costs["ipus"])
        if (ipu["ipu"] == e["ipus"][0] && ipu["memory"].get<uint64_t>() > memory) {
          memory = ipu["memory"];
          shared = "IPU " + std::to_string(ipu["ipu"].get<int64_t>()) + " in all: " + humanBytes(memory);
        }
    if (!shared.empty())
      os << "<text x=\"" << x << "\" y=\"" << ty + 48 << "\" fill=\"#555\">" << xmlEscaped(shared) << "</text>\n";
    if (limit && memory > limit)
      os << "<text x=\"" << x << "\" y=\"" << ty + 64 << "\" fill=\"#e15759\">"
         << xmlEscaped(humanBytes(memory - limit) + " too much") << "</text>\n";
    const auto& layers = e["layers"];
    for (size_t l = 0; l < layers.size() && l < 24; ++l) {
      std::string name = layers[l];
      if (l == 23 && layers.size() > 24)
        name = "... " + std::to_string(layers.size() - 23) + " more";
      else if (auto slash = name.rfind('/'); slash != std::string::npos && slash + 1 < name.size())
        name = name.substr(slash + 1);
      os << "<text x=\"" << x << "\" y=\"" << ty + 88 + 14 * static_cast<int>(l) << "\" fill=\"#333\">"
         << xmlEscaped(name) << "</text>\n";
    }
  }
  if (limit) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e15759\" stroke-dasharray=\"6 4\"/>\n",
                  left, y(limit), width - left, y(limit));
    os << line;
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace graphrw::stage_cost
