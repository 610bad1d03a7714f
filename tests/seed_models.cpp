#include "seed_models.h"

#include "support.h"

namespace graphrw::test {

void addWeight(onnx::ModelProto& model, const std::string& name, std::vector<int64_t> dims, uint32_t seed,
               float scale) {
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  std::vector<float> values(static_cast<size_t>(n));
  uint32_t state = seed * 2654435761u + 1;
  for (auto& v : values) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    v = (static_cast<float>(state) / 4294967296.0f * 2.0f - 1.0f) * scale;
  }
  t->set_raw_data(values.data(), values.size() * sizeof(float));
}

int64_t weightElements(const onnx::ModelProto& model) {
  auto count = [](const onnx::TensorProto& t) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    return n;
  };
  int64_t total = 0;
  for (const auto& t : model.graph().initializer()) total += count(t);
  auto constants = [&](const auto& nodes) {
    for (const auto& n : nodes)
      if (n.op_type() == "Constant")
        for (const auto& a : n.attribute())
          if (a.has_t()) total += count(a.t());
  };
  constants(model.graph().node());
  for (const auto& f : model.functions()) constants(f.node());
  return total;
}

namespace {

std::string dense(const std::string& layer, const std::string& in, const std::string& out, const std::string& act) {
  std::string s = "  " + layer + "_mm = MatMul (" + in + ", " + layer + "_weight)\n";
  // Node names are set after parsing (the text syntax has none).
  if (act.empty()) return s + "  " + out + " = Add (" + layer + "_mm, " + layer + "_bias)\n";
  return s + "  " + layer + "_add = Add (" + layer + "_mm, " + layer + "_bias)\n  " + out + " = " + act + " (" + layer +
         "_add)\n";
}

// Names each node "<layer>/<Op>" from the layer prefix of its first output
// ("dense_1_mm" -> "dense_1/MatMul"), or from a map of output -> name.
template <typename Nodes>
void nameNodes(Nodes& nodes, const std::map<std::string, std::string>& exact) {
  for (auto& n : nodes) {
    const std::string& out = n.output(0);
    if (auto it = exact.find(out); it != exact.end()) {
      n.set_name(it->second);
      continue;
    }
    auto us = out.rfind('_');
    std::string layer = us == std::string::npos ? out : out.substr(0, us);
    n.set_name(layer + "/" + n.op_type());
  }
}

}  // namespace

onnx::ModelProto seedM1() {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "seed-m1">
m1 (float[32,4,32] input_1) => (float[32,4,6] output) {
)" + dense("dense_1", "input_1", "dense_1_out", "Relu") +
                      dense("dense_2", "dense_1_out", "output", "Softmax") + "}\n");
  nameNodes(*m.mutable_graph()->mutable_node(), {{"dense_1_out", "dense_1/Relu"}, {"output", "dense_2/Softmax"}});
  addWeight(m, "dense_1_weight", {32, 32}, 1);
  addWeight(m, "dense_1_bias", {32}, 2);
  addWeight(m, "dense_2_weight", {32, 6}, 3);
  addWeight(m, "dense_2_bias", {6}, 4);
  return m;
}

onnx::ModelProto seedM2() {
  auto m = parseModel(
      R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "seed-m2">
m2 (float[32,4,32] input_1) => (float[32,4,32] output) {
)" + dense("dense_1", "input_1", "dense_1_out", "Relu") +
      "  dropout_out = Dropout (dense_1_out, dropout_ratio)\n"
      "  output = LayerNormalization <axis = -1, epsilon = 0.001> (dropout_out, norm_scale, norm_bias)\n}\n");
  nameNodes(*m.mutable_graph()->mutable_node(),
            {{"dense_1_out", "dense_1/Relu"}, {"dropout_out", "dropout"}, {"output", "norm"}});
  addWeight(m, "dense_1_weight", {32, 32}, 5);
  addWeight(m, "dense_1_bias", {32}, 6);
  addWeight(m, "norm_scale", {32}, 7, 1.0f);
  addWeight(m, "norm_bias", {32}, 8);
  auto* ratio = m.mutable_graph()->add_initializer();
  ratio->set_name("dropout_ratio");
  ratio->set_data_type(onnx::TensorProto::FLOAT);
  ratio->add_float_data(0.5f);
  return m;
}

onnx::ModelProto seedM3() {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "seed-m3">
m3 (float[32,10,120] input_1) => (float[32,8,32] output) {
  conv_in = Transpose <perm = [0, 2, 1]> (input_1)
  conv_out = Conv <kernel_shape = [3]> (conv_in, conv_weight, conv_bias)
  output = Transpose <perm = [0, 2, 1]> (conv_out)
}
)");
  nameNodes(*m.mutable_graph()->mutable_node(), {{"conv_in", "conv/in"}, {"conv_out", "conv"}, {"output", "conv/out"}});
  addWeight(m, "conv_weight", {32, 120, 3}, 9, 0.1f);
  addWeight(m, "conv_bias", {32}, 10);
  return m;
}

onnx::ModelProto seedM4() {
  std::string body = dense("dense_1", "x", "dense_1_out", "Relu") +
                     "  dropout_1_out = Dropout (dense_1_out, r1)\n"
                     "  norm_1_out = LayerNormalization <axis = -1> (dropout_1_out, n1s, n1b)\n" +
                     dense("dense_2", "norm_1_out", "dense_2_out", "Relu") +
                     "  dropout_2_out = Dropout (dense_2_out, r2)\n"
                     "  norm_2_out = LayerNormalization <axis = -1> (dropout_2_out, n2s, n2b)\n" +
                     dense("dense_3", "norm_2_out", "dense_3_out", "Softmax") +
                     "  y = LayerNormalization <axis = -1> (dense_3_out, n3s, n3b)\n";
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1], producer_name: "seed-m4">
m4 (float[32,3,13] input_1) => (float[32,3,4] output) {
  output = custom.CustomLayer (input_1, dense_1_weight, dense_1_bias, r1, n1s, n1b, dense_2_weight, dense_2_bias, r2,
      n2s, n2b, dense_3_weight, dense_3_bias, n3s, n3b)
}
<domain: "custom", opset_import: ["" : 17]>
CustomLayer (x, dense_1_weight, dense_1_bias, r1, n1s, n1b, dense_2_weight, dense_2_bias, r2, n2s, n2b,
    dense_3_weight, dense_3_bias, n3s, n3b) => (y) {
)" + body + "}\n");
  m.mutable_graph()->mutable_node(0)->set_name("custom_layer");
  nameNodes(*m.mutable_functions(0)->mutable_node(), {{"dense_1_out", "dense_1/Relu"},
                                                      {"dense_2_out", "dense_2/Relu"},
                                                      {"dense_3_out", "dense_3/Softmax"},
                                                      {"dropout_1_out", "dropout_1"},
                                                      {"dropout_2_out", "dropout_2"},
                                                      {"norm_1_out", "norm_1"},
                                                      {"norm_2_out", "norm_2"},
                                                      {"y", "norm_3"}});
  addWeight(m, "dense_1_weight", {13, 8}, 11);
  addWeight(m, "dense_1_bias", {8}, 12);
  addWeight(m, "dense_2_weight", {8, 24}, 13);
  addWeight(m, "dense_2_bias", {24}, 14);
  addWeight(m, "dense_3_weight", {24, 4}, 15);
  addWeight(m, "dense_3_bias", {4}, 16);
  for (auto [name, size, seed] : {std::tuple{"n1", 8, 17}, {"n2", 24, 18}, {"n3", 4, 19}}) {
    addWeight(m, std::string(name) + "s", {size}, static_cast<uint32_t>(seed), 1.0f);
    addWeight(m, std::string(name) + "b", {size}, static_cast<uint32_t>(seed) + 100);
  }
  for (auto [name, ratio] : {std::pair{"r1", 0.3f}, {"r2", 0.2f}}) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(ratio);
  }
  return m;
}

onnx::ModelProto seedM5() {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1], producer_name: "seed-m5">
m5 (float[32,16] input_1) => (float[32,4] out_1, float[32,5] out_2) {
  c1 = custom.SimpleCustomLayer (input_1, c1_weight, c1_bias)
  c2 = custom.SimpleCustomLayer (input_1, c2_weight, c2_bias)
  sum = Add (c1, c2)
  out_1 = Gemm (sum, out_1_weight, out_1_bias)
  out_2 = Gemm (sum, out_2_weight, out_2_bias)
}
<domain: "custom", opset_import: ["" : 17]>
SimpleCustomLayer (x, w, b) => (y) {
  d = Gemm (x, w, b)
  y = Softmax (d)
}
)");
  const char* names[] = {"custom_1", "custom_2", "add", "out_1", "out_2"};
  for (int i = 0; i < 5; ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  m.mutable_functions(0)->mutable_node(0)->set_name("dense");
  m.mutable_functions(0)->mutable_node(1)->set_name("softmax");
  addWeight(m, "c1_weight", {16, 8}, 21);
  addWeight(m, "c1_bias", {8}, 22);
  addWeight(m, "c2_weight", {16, 8}, 23);
  addWeight(m, "c2_bias", {8}, 24);
  addWeight(m, "out_1_weight", {8, 4}, 25);
  addWeight(m, "out_1_bias", {4}, 26);
  addWeight(m, "out_2_weight", {8, 5}, 27);
  addWeight(m, "out_2_bias", {5}, 28);
  return m;
}

}  // namespace graphrw::test
