// Generates a synthetic model with N call sites of one local function of K
// nodes, chained, for measuring how graph work scales.
#include <onnx/onnx_pb.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  int64_t calls = 1000, bodyNodes = 20;
  std::string output;
  CLI::App app{"Generate a chain of N calls of a K-node local function"};
  app.add_option("-o,--output", output)->required();
  app.add_option("--calls", calls)->capture_default_str();
  app.add_option("--body-nodes", bodyNodes)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("graphrw-gen-calls");
  auto addOpset = [&](const char* domain, int64_t v) {
    auto* o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(v);
  };
  addOpset("", 17);
  addOpset("bench", 1);
  auto* f = m.add_functions();
  f->set_name("Block");
  f->set_domain("bench");
  f->add_input("x");
  f->add_output("y");
  auto* fo = f->add_opset_import();
  fo->set_domain("");
  fo->set_version(17);
  std::string prev = "x";
  for (int64_t i = 0; i < bodyNodes; ++i) {
    auto* n = f->add_node();
    n->set_op_type(i % 2 ? "Neg" : "Abs");
    n->set_name("op" + std::to_string(i));
    n->add_input(prev);
    prev = i + 1 == bodyNodes ? "y" : "t" + std::to_string(i);
    n->add_output(prev);
  }
  auto* g = m.mutable_graph();
  g->set_name("chain");
  auto* in = g->add_input();
  in->set_name("X");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(1);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  prev = "X";
  for (int64_t i = 0; i < calls; ++i) {
    auto* n = g->add_node();
    n->set_op_type("Block");
    n->set_domain("bench");
    n->set_name("/blocks." + std::to_string(i));
    n->add_input(prev);
    prev = i + 1 == calls ? "Y" : "h" + std::to_string(i);
    n->add_output(prev);
  }
  auto* out = g->add_output();
  out->set_name("Y");
  *out->mutable_type() = in->type();
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  if (!m.SerializeToOstream(&file)) {
    std::cerr << "graphrw-gen-calls: cannot write " << output << "\n";
    return 4;
  }
  return 0;
}
