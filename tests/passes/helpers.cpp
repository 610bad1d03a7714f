#include "helpers.h"

#include <catch2/catch.hpp>

#include "loader.h"
#include "ort.h"
#include "expand.h"
#include "pass_manager.h"
#include "support.h"
#include "validate.h"
#include "writer.h"

namespace graphrw::test {

using namespace ir;

std::unique_ptr<Model> runPass(const onnx::ModelProto& proto, std::unique_ptr<Pass> pass, nlohmann::json* report) {
  auto model = loadModel(proto);
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
  pm.add(std::move(pass));
  auto r = pm.run(*model);
  if (report) *report = r[0];
  return model;
}

SelectorSet sel(const std::string& text) { return SelectorSet{{Selector::parse(text)}}; }

std::vector<std::string> nodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes()) names.push_back(n->name());
  return names;
}

Node* byName(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name() == name) return n.get();
  return nullptr;
}

size_t countOp(const onnx::ModelProto& m, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

namespace {
void countNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, std::map<std::string, size_t>& out) {
  for (const auto& n : nodes) {
    out[(n.domain().empty() ? "ai.onnx" : n.domain()) + "::" + n.op_type()]++;
    for (const auto& a : n.attribute()) {
      if (a.has_g()) countNodes(a.g().node(), out);
      for (const auto& g : a.graphs()) countNodes(g.node(), out);
    }
  }
}
}  // namespace

std::map<std::string, size_t> opCounts(const onnx::ModelProto& m) {
  std::map<std::string, size_t> out;
  countNodes(m.graph().node(), out);
  for (const auto& f : m.functions()) countNodes(f.node(), out);
  return out;
}

void checkSameMaths(const onnx::ModelProto& before, const onnx::ModelProto& after, double tol, int intMax) {
  TempDir dir;
  writeProto(before, dir / "before.onnx");
  writeProto(after, dir / "after.onnx");
  auto report = ortCompare(dir / "before.onnx", dir / "after.onnx", tol, intMax);
  INFO(report.dump());
  CHECK(report["ok"] == true);
}

void checkSameMaths(const onnx::ModelProto& before, Model& after, double tol, int intMax) {
  TempDir dir;
  writeProto(before, dir / "before.onnx");
  writeModel(after, (dir / "after.onnx").string());
  auto report = ortCompare(dir / "before.onnx", dir / "after.onnx", tol, intMax);
  INFO(report.dump());
  CHECK(report["ok"] == true);
}

void checkValid(Model& m) {
  // graphrw's own validate: ONNX's checker, strict shape inference, the IR verifier, PopART attribute types.
  for (const auto& f : validateModel(m)) FAIL_CHECK(f.check << ": " << f.where << ": " << f.message);
}

namespace {
onnx::AttributeProto* attr(onnx::NodeProto& n, const std::string& name) {
  for (auto& a : *n.mutable_attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

}  // namespace

// Standard ONNX for ONNX Runtime: Calls inlined (graphrw's expand), each
// ai.graphcore::GroupNormalization with num_groups 1 on a 2-D input by its
// definition (normalize each row), checked to have unused Mean and Var.
onnx::ModelProto mapBack(Model& original) {
  TempDir dir;
  writeModel(original, (dir / "original.onnx").string());
  auto model = loadModel((dir / "original.onnx").string());  // a copy: the caller's model stays as it is
  PassManager pm;
  pm.add(passes::createExpandPass({}));
  pm.run(*model);
  writeModel(*model, (dir / "m.onnx").string());
  onnx::ModelProto m = readProto(dir / "m.onnx");
  auto* g = m.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  int k = 0;
  for (auto& n : *g->mutable_node()) {
    if (n.domain() != "ai.graphcore") {
      *nodes.Add() = n;
      continue;
    }
    if (n.op_type() == "GeluErf" || n.op_type() == "Gelu") {
      // GeluErf: x * 0.5 * (1 + erf(x / sqrt(2))); Gelu: x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
      std::string p = "gelu" + std::to_string(k++) + "/";
      auto scalar = [&](const std::string& name, float v) {
        auto* t = g->add_initializer();
        t->set_name(p + name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        t->add_float_data(v);
        return p + name;
      };
      auto op = [&](const std::string& type, std::vector<std::string> in, const std::string& out) {
        auto* x = nodes.Add();
        x->set_op_type(type);
        for (auto& i : in) x->add_input(i);
        x->add_output(out);
      };
      std::string x = n.input(0);
      if (n.op_type() == "GeluErf") {
        op("Div", {x, scalar("sqrt2", 1.41421356f)}, p + "d");
        op("Erf", {p + "d"}, p + "e");
      } else {
        op("Mul", {x, x}, p + "x2");
        op("Mul", {p + "x2", x}, p + "x3");
        op("Mul", {p + "x3", scalar("c", 0.044715f)}, p + "cx3");
        op("Add", {x, p + "cx3"}, p + "inner");
        op("Mul", {p + "inner", scalar("k", 0.7978845608f)}, p + "d");
        op("Tanh", {p + "d"}, p + "e");
      }
      op("Add", {p + "e", scalar("one", 1.0f)}, p + "a");
      op("Mul", {x, p + "a"}, p + "m");
      op("Mul", {p + "m", scalar("half", 0.5f)}, n.output(0));
      continue;
    }
    REQUIRE(n.op_type() == "GroupNormalization");
    REQUIRE(attr(n, "num_groups")->i() == 1);
    for (int o = 1; o < n.output_size(); ++o)
      for (const auto& other : g->node())
        for (const auto& in : other.input()) REQUIRE(in != n.output(o));
    std::string p = "gn" + std::to_string(k++) + "/";
    auto* eps = g->add_initializer();
    eps->set_name(p + "eps");
    eps->set_data_type(onnx::TensorProto::FLOAT);
    eps->add_float_data(attr(n, "epsilon") ? attr(n, "epsilon")->f() : 1e-5f);
    auto add = [&](const std::string& op, std::vector<std::string> in, const std::string& out, bool mean = false) {
      auto* x = nodes.Add();
      x->set_op_type(op);
      for (auto& i : in) x->add_input(i);
      x->add_output(out);
      if (mean) {
        auto* a = x->add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(1);
      }
    };
    add("ReduceMean", {n.input(0)}, p + "m", true);
    add("Sub", {n.input(0), p + "m"}, p + "d");
    add("Mul", {p + "d", p + "d"}, p + "sq");
    add("ReduceMean", {p + "sq"}, p + "v", true);
    add("Add", {p + "v", p + "eps"}, p + "ve");
    add("Sqrt", {p + "ve"}, p + "sd");
    add("Div", {p + "d", p + "sd"}, p + "n");
    add("Mul", {p + "n", n.input(1)}, p + "ns");
    add("Add", {p + "ns", n.input(2)}, n.output(0));
  }
  g->mutable_node()->Swap(&nodes);
  for (int i = 0; i < m.opset_import_size(); ++i)
    if (m.opset_import(i).domain() == "ai.graphcore") m.mutable_opset_import()->DeleteSubrange(i--, 1);
  return m;
}


}  // namespace graphrw::test
