#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "support/buffer.h"

#include "io/loader.h"
#include "io/writer.h"
#include "models.h"
#include "support.h"
#include "support/error.h"
#include "support/wire.h"

using namespace graphrw;
using namespace graphrw::ir;

namespace {

std::unique_ptr<Model> loadBytes(const std::string& bytes) {
  return loadModel(Buffer::fromString(bytes), ".", "test.onnx");
}

std::string loadError(const std::string& bytes) {
  try {
    loadBytes(bytes);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadInput);
    return e.what();
  }
  FAIL("the model loaded");
  return "";
}

}  // namespace

TEST_CASE("the loader builds the IR: values, producers, uses, functions", "[loader]") {
  auto proto = test::parseModel(test::kSmallModel);
  test::toRawData(proto);
  auto model = loadBytes(proto.SerializeAsString());
  Graph& g = model->graph();
  REQUIRE(g.nodeCount() == 2);
  Node* matmul = g.nodes().front().get();
  Node* call = g.nodes().back().get();
  CHECK(matmul->opType() == "MatMul");
  CHECK(call->domain() == "local");
  Value* h = g.findLocal("H");
  REQUIRE(h);
  CHECK(h->producer() == matmul);
  REQUIRE(h->uses().size() == 1);
  CHECK(h->uses()[0].node == call);
  Value* w = g.findLocal("W");
  REQUIRE(w);
  CHECK(w->isInitializer());
  REQUIRE(w->initializer()->rawView());
  CHECK(w->initializer()->rawView()->size == 64);
  CHECK(g.findLocal("Y")->graphOutputCount() == 1);
  CHECK(g.findLocal("X")->isGraphInput());
  REQUIRE(model->functions().size() == 1);
  Function* fn = model->findFunction("local", "Layer");
  REQUIRE(fn);
  CHECK(fn->body().inputs().size() == 1);
  CHECK(fn->body().nodeCount() == 1);
  CHECK(fn->attributeNames() == std::vector<std::string>{"alpha"});
  CHECK(model->opsetVersion("local") == 1);
  CHECK(model->opsetVersion("") == 17);
}

TEST_CASE("subgraphs resolve outer-scope values", "[loader]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool C, float[2] X) => (float[2] Y) {
  Y = If (C) <then_branch = g1 () => (float[2] t) { t = Relu(X) }, else_branch = g2 () => (float[2] e) { e = Neg(X) }>
}
)");
  auto model = loadBytes(proto.SerializeAsString());
  Value* x = model->graph().findLocal("X");
  REQUIRE(x);
  // Used by the Relu and the Neg inside the branches, not by the If itself.
  REQUIRE(x->uses().size() == 2);
  for (const Use& u : x->uses()) CHECK(u.node->graph()->parent() == &model->graph());
  Node* ifNode = model->graph().nodes().front().get();
  CHECK(ifNode->subgraphs().size() == 2);
  CHECK(ifNode->subgraphs()[0]->parentNode() == ifNode);
}

TEST_CASE("fields newer than ONNX 1.12 are read and kept", "[loader]") {
  auto proto = test::parseModel(test::kSmallModel);
  proto.set_ir_version(10);
  // NodeProto.overload = 8
  proto.mutable_graph()->mutable_node(1)->mutable_unknown_fields()->AddLengthDelimited(8, "v2");
  auto* fn = proto.mutable_functions(0);
  // FunctionProto.attribute_proto = 11 (a default), value_info = 12, overload = 13, metadata_props = 14
  onnx::AttributeProto def;
  def.set_name("beta");
  def.set_type(onnx::AttributeProto::FLOAT);
  def.set_f(0.25f);
  fn->mutable_unknown_fields()->AddLengthDelimited(11, def.SerializeAsString());
  onnx::ValueInfoProto vi;
  vi.set_name("y");
  vi.mutable_type()->mutable_tensor_type()->set_elem_type(1);
  fn->mutable_unknown_fields()->AddLengthDelimited(12, vi.SerializeAsString());
  fn->mutable_unknown_fields()->AddLengthDelimited(13, "v2");
  onnx::StringStringEntryProto meta;
  meta.set_key("k");
  meta.set_value("v");
  fn->mutable_unknown_fields()->AddLengthDelimited(14, meta.SerializeAsString());

  auto model = loadBytes(proto.SerializeAsString());
  CHECK(model->graph().nodes().back()->overload() == "v2");
  Function* f = model->findFunction("local", "Layer", "v2");
  REQUIRE(f);
  auto defaults = f->attributeDefaults();
  REQUIRE(defaults.size() == 1);
  CHECK(defaults[0].f() == 0.25f);
  REQUIRE(f->body().valueInfo().size() == 1);
  CHECK(f->body().valueInfo()[0].value == f->body().findLocal("y"));
  CHECK(f->body().findLocal("y")->type()->tensor_type().elem_type() == 1);

  onnx::ModelProto back;
  REQUIRE(back.ParseFromString(serialize(*model)));
  std::string diff;
  CHECK(test::sameMessage(proto, back, &diff));
  INFO(diff);
  CHECK(serialize(*model) == proto.SerializeAsString());
}

TEST_CASE("bad models get one clear line each", "[loader][errors]") {
  SECTION("empty") { CHECK_THAT(loadError(""), Catch::Contains("test.onnx: empty file")); }
  SECTION("not protobuf") { CHECK_THAT(loadError("hello, world\n"), Catch::Contains("not an ONNX model")); }
  SECTION("truncated") {
    auto bytes = test::parseModel(test::kSmallModel).SerializeAsString();
    CHECK_THAT(loadError(bytes.substr(0, bytes.size() / 2)), Catch::Contains("not an ONNX model"));
  }
  SECTION("no graph") {
    onnx::ModelProto m;
    m.set_ir_version(8);
    CHECK_THAT(loadError(m.SerializeAsString()), Catch::Contains("no graph"));
  }
  SECTION("a value produced twice") {
    auto m = test::parseModel(test::kSmallModel);
    m.mutable_graph()->mutable_node(1)->set_output(0, "H");
    CHECK_THAT(loadError(m.SerializeAsString()), Catch::Contains("value 'H' is produced twice"));
  }
  SECTION("a node reading a value nobody produces") {
    auto m = test::parseModel(test::kSmallModel);
    m.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
    CHECK_THAT(loadError(m.SerializeAsString()), Catch::Contains("reads value 'ghost' that nobody produces"));
  }
  SECTION("a cycle") {
    auto m = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  Y = Neg(A)
}
)");
    // A now reads Y: A -> Y -> A.
    m.mutable_graph()->mutable_node(0)->set_input(0, "Y");
    m.mutable_graph()->mutable_node(0)->set_name("first");
    m.mutable_graph()->mutable_node(1)->set_name("second");
    CHECK_THAT(loadError(m.SerializeAsString()),
               Catch::Contains("cycle") && Catch::Contains("'first'") && Catch::Contains("'second'"));
  }
  SECTION("a graph output nobody produces") {
    auto m = test::parseModel(test::kSmallModel);
    m.mutable_graph()->mutable_output(0)->set_name("nothing");
    CHECK_THAT(loadError(m.SerializeAsString()), Catch::Contains("graph output 'nothing'"));
  }
  SECTION("errors inside functions name the function") {
    auto m = test::parseModel(test::kSmallModel);
    m.mutable_functions(0)->mutable_node(0)->set_input(0, "ghost");
    CHECK_THAT(loadError(m.SerializeAsString()), Catch::Contains("function local::Layer"));
  }
}

TEST_CASE("an unsorted but acyclic graph loads as it is", "[loader]") {
  auto m = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  Y = Neg(A)
}
)");
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);
  auto model = loadBytes(m.SerializeAsString());
  CHECK(model->graph().nodes().front()->opType() == "Neg");
  CHECK(serialize(*model) == m.SerializeAsString());
}

TEST_CASE("a graph in order up to a subgraph reading a later value: wired eagerly, then as before", "[loader]") {
  // The loader wires (and frees the protos of) nodes while the graph is in
  // order, then wires the rest after creating them all: a branch may read B,
  // which only a later node defines; the uses keep node order.
  auto m = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool C, float[2] X) => (float[2] Y) {
  A = Relu(X)
  Z = If (C) <then_branch = g1 () => (float[2] t) { t = Abs(B) }, else_branch = g2 () => (float[2] e) { e = Neg(A) }>
  B = Neg(X)
  Y = Add(B, Z)
}
)");
  auto model = loadBytes(m.SerializeAsString());
  Graph& g = model->graph();
  Value* b = g.findLocal("B");
  REQUIRE(b);
  REQUIRE(b->uses().size() == 2);
  CHECK(b->uses()[0].node->opType() == "Abs");
  CHECK(b->uses()[1].node->opType() == "Add");
  Value* x = g.findLocal("X");
  REQUIRE(x->uses().size() == 2);
  CHECK(x->uses()[0].node->opType() == "Relu");
  CHECK(x->uses()[1].node->opType() == "Neg");
  CHECK(serialize(*model) == m.SerializeAsString());
  // Nodes that read what nobody defines still fail, naming the node.
  auto bad = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  Y = Neg(Q)
}
)");
  CHECK_THAT(loadError(bad.SerializeAsString()), Catch::Contains("reads value 'Q' that nobody produces"));
}

TEST_CASE("the main graph's nodes are parsed one at a time: payloads, order, unknown fields, errors", "[loader]") {
  // The loader parses the main graph's nodes from their own bytes, after the
  // graph's other fields: a node between initializers in the file, a Constant
  // whose value is a payload view and a node with an unknown field all come
  // back as they were.
  auto m = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  C = Constant <value = float[2] {1.0, 2.0}> ()
  B = Add(A, C)
  Y = Neg(B)
}
)");
  m.mutable_graph()->mutable_node(2)->mutable_unknown_fields()->AddVarint(99, 7);
  auto* value = m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_t();
  const float data[2] = {1.0f, 2.0f};
  value->clear_float_data();
  value->set_raw_data(std::string(reinterpret_cast<const char*>(data), sizeof data));
  std::string bytes = m.SerializeAsString();
  LoadOptions viewAll;
  viewAll.viewThreshold = 1;  // the Constant's 8 bytes become a payload view
  {
    auto source = Buffer::fromString(bytes);
    auto stripped = wire::stripPayloads(source, 1, true);
    REQUIRE(stripped.payloads.size() == 1);
    stripped.mainNodes.next();
    const char* constant = stripped.mainNodes.next().data();  // a stripped copy, not the source's bytes
    CHECK((constant < source->data() || constant >= source->data() + source->size()));
  }
  auto model = loadModel(Buffer::fromString(bytes), ".", "test.onnx", viewAll);
  const auto& nodes = model->graph().nodes();
  REQUIRE(nodes.size() == 4);
  CHECK(model->graph().findLocal("C")->uses().front().node->opType() == "Add");
  CHECK(serialize(*model) == bytes);
  // A node protobuf cannot parse is named by its place in the graph: node 3
  // gets an attribute whose sparse_tensor (field 22) is one byte that is no
  // message. The wire stripper passes it (it does not look inside), protobuf
  // does not.
  onnx::AttributeProto junk;
  junk.set_name("junk");
  junk.set_type(onnx::AttributeProto::SPARSE_TENSOR);
  std::string attrBytes = junk.SerializeAsString();
  wire::appendTag(attrBytes, 22, wire::WireType::Len);
  attrBytes += std::string("\x01\xff", 2);
  std::string node3 = m.graph().node(3).SerializeAsString();
  wire::appendLenField(node3, 5, attrBytes);
  onnx::ModelProto shell = m;
  shell.mutable_graph()->mutable_node()->RemoveLast();
  std::string graphBytes = shell.graph().SerializeAsString();
  wire::appendLenField(graphBytes, 1, node3);
  shell.clear_graph();
  std::string modelBytes = shell.SerializeAsString();
  wire::appendLenField(modelBytes, 7, graphBytes);
  CHECK_THAT(loadError(modelBytes), Catch::Contains("protobuf parse failed in the graph's node 3"));
}

TEST_CASE("the main graph's value_info entries are parsed one at a time: order, fields, errors", "[loader]") {
  // Entries before and after the nodes, one with a doc_string, one for a
  // value nothing defines, and a second occurrence of the graph field that
  // protobuf merges: the model built from the split entries writes what the
  // model built from protobuf's own parse writes.
  auto m = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  B = Neg(A)
  Y = Abs(B)
}
)");
  auto declare = [](onnx::GraphProto& g, const std::string& name, int type) {
    auto* vi = g.add_value_info();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    return vi;
  };
  declare(*m.mutable_graph(), "B", onnx::TensorProto::FLOAT)->set_doc_string("second");
  declare(*m.mutable_graph(), "nowhere", onnx::TensorProto::INT64);
  onnx::GraphProto more;
  declare(more, "A", onnx::TensorProto::FLOAT);
  std::string bytes = m.SerializeAsString();
  wire::appendLenField(bytes, 7, more.SerializeAsString());
  onnx::ModelProto merged;
  REQUIRE(merged.ParseFromString(bytes));
  REQUIRE(merged.graph().value_info_size() == 3);
  auto split = loadBytes(bytes);
  auto whole = loadModel(merged, ".");
  const auto& entries = split->graph().valueInfo();
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].value->name() == "B");
  CHECK(entries[0].proto().doc_string() == "second");
  CHECK(entries[1].value->name() == "nowhere");
  CHECK(entries[2].value->name() == "A");
  CHECK(entries[2].value->type() == split->graph().findLocal("B")->type());  // one interned type
  CHECK(serialize(*split) == serialize(*whole));
  // An entry protobuf cannot parse is named by its place among the entries.
  std::string broken = m.SerializeAsString();
  std::string badEntry;
  wire::appendLenField(badEntry, 2, std::string("\x01\xff", 2));  // a type that is no message
  std::string graphBytes;
  wire::appendLenField(graphBytes, 13, badEntry);
  wire::appendLenField(broken, 7, graphBytes);
  CHECK_THAT(loadError(broken), Catch::Contains("protobuf parse failed in the graph's value_info 2"));
}

TEST_CASE("IR versions and opsets newer than ONNX 1.12 knows load and write unchanged", "[loader]") {
  auto proto = test::parseModel(test::kSmallModel);
  proto.set_ir_version(11);
  proto.mutable_opset_import(0)->set_version(23);
  auto* extra = proto.add_opset_import();
  extra->set_domain("ai.onnx.preview.training");
  extra->set_version(1);
  // A node op that does not exist in 1.12's registry.
  proto.mutable_graph()->mutable_node(0)->set_op_type("RMSNormalization");
  auto model = loadBytes(proto.SerializeAsString());
  CHECK(model->irVersion() == 11);
  CHECK(model->opsetVersion("") == 23);
  CHECK(serialize(*model) == proto.SerializeAsString());
}

TEST_CASE("stdin is spooled to an unlinked temporary file and mapped, not held in memory", "[loader]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  std::string bytes(40000, 'x');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  REQUIRE(write(p[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(p[1]);
  auto spooled = Buffer::spoolFd(p[0], "<pipe>");
  close(p[0]);
  CHECK(spooled->fd() >= 0);  // a mapped file, not owned memory
  CHECK(spooled->view() == bytes);
  // stdin redirected from a file is mapped as it is.
  test::TempDir dir;
  test::writeFile(dir / "f.bin", bytes);
  int f = open((dir / "f.bin").c_str(), O_RDONLY);
  REQUIRE(f >= 0);
  auto mapped = Buffer::spoolFd(f, "<file>");
  close(f);
  CHECK(mapped->fd() >= 0);
  CHECK(mapped->view() == bytes);
  // Nothing on the pipe: an empty buffer.
  REQUIRE(pipe(p) == 0);
  close(p[1]);
  CHECK(Buffer::spoolFd(p[0], "<pipe>")->size() == 0);
  close(p[0]);
}
