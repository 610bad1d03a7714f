// Generates BERT-style ONNX models for benchmarks and examples. Encoder layers
// and their attention are model-local functions, nested as PyTorch's exporter
// writes them with export_modules_as_functions: BertLayer calls BertAttention,
// which calls BertSelfAttention. Weights are graph initializers passed to the
// calls as inputs, embedded or in one external data file.
#include <onnx/defs/parser.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

namespace {

struct Config {
  int layers = 2, hidden = 64, heads = 4, intermediate = 256, vocab = 1000, types = 2, seq = 16, batch = 2;
  std::string output, external;
  uint64_t seed = 1;
  bool calls = true;  // false: the same model with functions already inlined by hand is not needed; kept for clarity
};

const char* kDomain = "transformers.models.bert";

std::string functions(const Config& c) {
  int headDim = c.hidden / c.heads;
  std::ostringstream os;
  os << "<domain: \"" << kDomain << "\", opset_import: [\"\" : 17]>\n"
     << "BertSelfAttention (x, mask, wq, bq, wk, bk, wv, bv) => (ctx) {\n"
     << "  shape = Constant <value = int64[4] {0, 0, " << c.heads << ", " << headDim << "}> ()\n"
     << "  merged = Constant <value = int64[3] {0, 0, " << c.hidden << "}> ()\n"
     << "  scale = Constant <value = float {" << 1.0 / std::sqrt(static_cast<double>(headDim)) << "}> ()\n"
     << "  q0 = MatMul (x, wq)\n  q1 = Add (q0, bq)\n  q2 = Reshape (q1, shape)\n  q = Transpose <perm = [0, 2, 1, 3]> "
        "(q2)\n"
     << "  k0 = MatMul (x, wk)\n  k1 = Add (k0, bk)\n  k2 = Reshape (k1, shape)\n  k = Transpose <perm = [0, 2, 3, 1]> "
        "(k2)\n"
     << "  v0 = MatMul (x, wv)\n  v1 = Add (v0, bv)\n  v2 = Reshape (v1, shape)\n  v = Transpose <perm = [0, 2, 1, 3]> "
        "(v2)\n"
     << "  s0 = MatMul (q, k)\n  s1 = Mul (s0, scale)\n  s2 = Add (s1, mask)\n  p = Softmax <axis = -1> (s2)\n"
     << "  c0 = MatMul (p, v)\n  c1 = Transpose <perm = [0, 2, 1, 3]> (c0)\n  ctx = Reshape (c1, merged)\n"
     << "}\n"
     << "<domain: \"" << kDomain << "\", opset_import: [\"\" : 17, \"" << kDomain << "\" : 1]>\n"
     << "BertAttention (x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g, b) => (y) {\n"
     << "  self = " << kDomain << ".BertSelfAttention (x, mask, wq, bq, wk, bk, wv, bv)\n"
     << "  o0 = MatMul (self, wo)\n  o1 = Add (o0, bo)\n  r = Add (o1, x)\n"
     << "  y = LayerNormalization <axis = -1, epsilon = 0.000001> (r, g, b)\n"
     << "}\n"
     << "<domain: \"" << kDomain << "\", opset_import: [\"\" : 17, \"" << kDomain << "\" : 1]>\n"
     << "BertLayer (x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, w2, b2, g2, b2n) => (y) {\n"
     << "  a = " << kDomain << ".BertAttention (x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1)\n"
     << "  i0 = MatMul (a, wi)\n  i1 = Add (i0, bi)\n"
     << "  sqrt2 = Constant <value = float {1.4142135}> ()\n  half = Constant <value = float {0.5}> ()\n"
     << "  one = Constant <value = float {1.0}> ()\n"
     << "  e0 = Div (i1, sqrt2)\n  e1 = Erf (e0)\n  e2 = Add (e1, one)\n  e3 = Mul (i1, e2)\n  gelu = Mul (e3, half)\n"
     << "  d0 = MatMul (gelu, w2)\n  d1 = Add (d0, b2)\n  r = Add (d1, a)\n"
     << "  y = LayerNormalization <axis = -1, epsilon = 0.000001> (r, g2, b2n)\n"
     << "}\n";
  return os.str();
}

struct Weight {
  std::string name;
  std::vector<int64_t> dims;
  float scale;  // uniform in [-scale, scale], or a constant when negative (LayerNorm gain 1)
};

std::vector<Weight> weights(const Config& c) {
  std::vector<Weight> w;
  int h = c.hidden, i = c.intermediate;
  w.push_back({"embeddings.word_embeddings.weight", {c.vocab, h}, 0.05f});
  w.push_back({"embeddings.token_type_embeddings.weight", {c.types, h}, 0.05f});
  w.push_back({"embeddings.LayerNorm.weight", {h}, -1.0f});
  w.push_back({"embeddings.LayerNorm.bias", {h}, 0.0f});
  for (int l = 0; l < c.layers; ++l) {
    std::string p = "encoder.layer." + std::to_string(l) + ".";
    float s = 1.0f / std::sqrt(static_cast<float>(h));
    for (const char* n : {"query", "key", "value"}) {
      w.push_back({p + "attention.self." + n + ".weight", {h, h}, s});
      w.push_back({p + "attention.self." + n + ".bias", {h}, 0.02f});
    }
    w.push_back({p + "attention.output.dense.weight", {h, h}, s});
    w.push_back({p + "attention.output.dense.bias", {h}, 0.02f});
    w.push_back({p + "attention.output.LayerNorm.weight", {h}, -1.0f});
    w.push_back({p + "attention.output.LayerNorm.bias", {h}, 0.0f});
    w.push_back({p + "intermediate.dense.weight", {h, i}, s});
    w.push_back({p + "intermediate.dense.bias", {i}, 0.02f});
    w.push_back({p + "output.dense.weight", {i, h}, 1.0f / std::sqrt(static_cast<float>(i))});
    w.push_back({p + "output.dense.bias", {h}, 0.02f});
    w.push_back({p + "output.LayerNorm.weight", {h}, -1.0f});
    w.push_back({p + "output.LayerNorm.bias", {h}, 0.0f});
  }
  return w;
}

std::string mainGraph(const Config& c, const std::vector<Weight>& ws) {
  std::ostringstream os;
  os << "<ir_version: 8, opset_import: [\"\" : 17, \"" << kDomain << "\" : 1], producer_name: \"graphrw-gen-bert\">\n"
     << "bert (int64[" << c.batch << "," << c.seq << "] input_ids, int64[" << c.batch << "," << c.seq
     << "] token_type_ids, float[" << c.batch << ",1,1," << c.seq << "] attention_mask) => (float[" << c.batch << ","
     << c.seq << "," << c.hidden << "] last_hidden_state) {\n";
  // Weights are declared as initializers after parsing (the parser's typed
  // literals would be slow and huge); here they are plain value names.
  (void)ws;
  os << "  we = Gather (word, input_ids)\n  te = Gather (ttype, token_type_ids)\n  es = Add (we, te)\n"
     << "  h0 = LayerNormalization <axis = -1, epsilon = 0.000001> (es, eln_g, eln_b)\n";
  for (int l = 0; l < c.layers; ++l) {
    std::string p = "L" + std::to_string(l) + "_";
    os << "  h" << l + 1 << " = " << kDomain << ".BertLayer (h" << l << ", attention_mask";
    for (const char* n :
         {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "g1", "b1", "wi", "bi", "w2", "b2", "g2", "b2n"})
      os << ", " << p << n;
    os << ")\n";
  }
  os << "  last_hidden_state = Identity (h" << c.layers << ")\n}\n";
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"Generate a BERT-style ONNX model whose layers are model-local functions"};
  app.add_option("-o,--output", c.output, "Output model")->required();
  app.add_option("--layers", c.layers)->capture_default_str();
  app.add_option("--hidden", c.hidden)->capture_default_str();
  app.add_option("--heads", c.heads)->capture_default_str();
  app.add_option("--intermediate", c.intermediate)->capture_default_str();
  app.add_option("--vocab", c.vocab)->capture_default_str();
  app.add_option("--seq", c.seq)->capture_default_str();
  app.add_option("--batch", c.batch)->capture_default_str();
  app.add_option("--seed", c.seed)->capture_default_str();
  app.add_option("--external-data", c.external, "Write the weights to this file beside the model");
  CLI11_PARSE(app, argc, argv);
  if (c.hidden % c.heads != 0) {
    std::cerr << "graphrw-gen-bert: --hidden must be a multiple of --heads\n";
    return 2;
  }

  auto ws = weights(c);
  onnx::ModelProto model;
  std::string text = mainGraph(c, ws) + functions(c);
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) {
    std::cerr << "graphrw-gen-bert: internal parse error: " << status.ErrorMessage() << "\n";
    return 70;
  }
  // Readable PyTorch-style node names: /embeddings/..., /encoder/layer.N
  auto* g = model.mutable_graph();
  for (int i = 0; i < g->node_size(); ++i) {
    auto* n = g->mutable_node(i);
    if (n->op_type() == "BertLayer")
      n->set_name("/encoder/layer." + std::to_string(i - 4));
    else if (i < 4)
      n->set_name("/embeddings/" + n->op_type() + "_" + std::to_string(i));
    else
      n->set_name("/output/" + n->op_type());
  }
  for (auto& f : *model.mutable_functions())
    for (int i = 0; i < f.node_size(); ++i) {
      auto* n = f.mutable_node(i);
      if (n->op_type() == "BertAttention")
        n->set_name("/attention");
      else if (n->op_type() == "BertSelfAttention")
        n->set_name("/self");
      else
        n->set_name("/" + n->op_type() + "_" + std::to_string(i));
    }
  // Rename the short weight names of the text to their full names.
  std::map<std::string, std::string> rename = {
      {"word", ws[0].name}, {"ttype", ws[1].name}, {"eln_g", ws[2].name}, {"eln_b", ws[3].name}};
  const char* shortNames[] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
                              "g1", "b1", "wi", "bi", "w2", "b2", "g2", "b2n"};
  for (int l = 0; l < c.layers; ++l)
    for (int k = 0; k < 16; ++k)
      rename["L" + std::to_string(l) + "_" + shortNames[k]] =
          ws[4 + static_cast<size_t>(l) * 16 + static_cast<size_t>(k)].name;
  for (auto& n : *g->mutable_node())
    for (auto& in : *n.mutable_input())
      if (auto it = rename.find(in); it != rename.end()) in = it->second;

  std::mt19937_64 rng(c.seed);
  std::ofstream data;
  uint64_t offset = 0;
  if (!c.external.empty()) {
    std::filesystem::path dir = std::filesystem::path(c.output).parent_path();
    data.open(dir / c.external, std::ios::binary | std::ios::trunc);
  }
  std::vector<float> buf;
  for (const auto& w : ws) {
    auto* t = g->add_initializer();
    t->set_name(w.name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : w.dims) {
      t->add_dims(d);
      n *= d;
    }
    buf.resize(static_cast<size_t>(n));
    std::uniform_real_distribution<float> dist(-std::abs(w.scale), std::abs(w.scale));
    for (auto& x : buf) x = w.scale < 0 ? 1.0f : w.scale == 0 ? 0.0f : dist(rng);
    const char* bytes = reinterpret_cast<const char*>(buf.data());
    size_t size = buf.size() * sizeof(float);
    if (data.is_open()) {
      data.write(bytes, static_cast<std::streamsize>(size));
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", c.external);
      add("offset", std::to_string(offset));
      add("length", std::to_string(size));
      offset += size;
    } else {
      t->set_raw_data(bytes, size);
    }
  }
  std::ofstream out(c.output, std::ios::binary | std::ios::trunc);
  if (!model.SerializeToOstream(&out) || !out.good() || (data.is_open() && !data.good())) {
    std::cerr << "graphrw-gen-bert: cannot write " << c.output << "\n";
    return 4;
  }
  return 0;
}
