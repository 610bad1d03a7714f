#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "models.h"
#include "support.h"
#include "support/wire.h"

using namespace graphrw;

TEST_CASE("strip then splice gives back the original bytes", "[wire]") {
  auto proto = test::parseModel(test::kSmallModel);
  test::toRawData(proto);
  std::string original = proto.SerializeAsString();
  auto buffer = Buffer::fromString(original);

  auto stripped = wire::stripPayloads(buffer, 16);
  REQUIRE(stripped.payloads.size() == 1);
  CHECK(stripped.payloads[0].size == 64);
  // The view points into the source buffer: nothing was copied.
  CHECK(stripped.payloads[0].data >= buffer->data());
  CHECK(stripped.payloads[0].data < buffer->data() + buffer->size());
  CHECK(stripped.bytes.size() < original.size());

  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(stripped.bytes));
  CHECK_FALSE(parsed.graph().initializer(0).has_raw_data());
  CHECK(parsed.graph().initializer(0).unknown_fields().field_count() == 1);

  auto spliced = wire::splicePayloads(stripped.bytes, stripped.payloads);
  std::string rebuilt;
  for (const auto& p : spliced.pieces) rebuilt.append(p.data, p.size);
  CHECK(spliced.size == original.size());
  CHECK(rebuilt == original);
}

TEST_CASE("small payloads stay inline", "[wire]") {
  auto proto = test::parseModel(test::kSmallModel);
  test::toRawData(proto);
  auto stripped = wire::stripPayloads(Buffer::fromString(proto.SerializeAsString()), 1024);
  CHECK(stripped.payloads.empty());
}

TEST_CASE("raw_data goes back in protobuf's field order", "[wire]") {
  // A tensor with fields on both sides of raw_data (9): name (8) and doc_string (12), plus an unknown field.
  onnx::ModelProto m;
  auto* t = m.mutable_graph()->add_initializer();
  t->add_dims(3);
  t->set_data_type(onnx::TensorProto::UINT8);
  t->set_name("w");
  t->set_raw_data(std::string(300, 'x'));
  t->set_doc_string("after raw_data");
  t->mutable_unknown_fields()->AddVarint(99, 7);
  std::string original = m.SerializeAsString();
  auto stripped = wire::stripPayloads(Buffer::fromString(original), 100);
  REQUIRE(stripped.payloads.size() == 1);
  auto spliced = wire::splicePayloads(stripped.bytes, stripped.payloads);
  std::string rebuilt;
  for (const auto& p : spliced.pieces) rebuilt.append(p.data, p.size);
  CHECK(rebuilt == original);
}

TEST_CASE("malformed bytes are reported, not parsed", "[wire]") {
  auto proto = test::parseModel(test::kSmallModel);
  std::string bytes = proto.SerializeAsString();
  SECTION("truncated") {
    CHECK_THROWS_WITH(wire::stripPayloads(Buffer::fromString(bytes.substr(0, bytes.size() - 5)), 16),
                      Catch::Contains("truncated"));
  }
  SECTION("bad wire type") {
    CHECK_THROWS_WITH(wire::stripPayloads(Buffer::fromString("\x0f\x01"), 16), Catch::Contains("wire type"));
  }
  SECTION("deeply nested groups are refused without recursion") {
    // 1,000,000 start-group tags (field 1, wire type 3): a recursive skipper overflows the stack.
    std::string deep(1000000, '\x0b');
    CHECK_THROWS_WITH(wire::stripPayloads(Buffer::fromString(deep), 16), Catch::Contains("nested too deeply"));
    std::string balanced = std::string(50, '\x0b') + std::string(50, '\x0c');
    CHECK_NOTHROW(wire::stripPayloads(Buffer::fromString(balanced), 16));
  }
}

TEST_CASE("unknown-field helpers", "[wire]") {
  google::protobuf::UnknownFieldSet set;
  set.AddLengthDelimited(13, "b");
  set.AddVarint(5, 1);
  set.AddLengthDelimited(12, "a");
  set.AddVarint(5, 2);
  CHECK(wire::lenFields(set, 12) == std::vector<std::string>{"a"});
  CHECK(wire::lastVarint(set, 5) == 2u);
  CHECK_FALSE(wire::lastVarint(set, 6).has_value());
  wire::sortByNumber(set);
  REQUIRE(set.field_count() == 4);
  CHECK(set.field(0).number() == 5);
  CHECK(set.field(0).varint() == 1);  // stable
  CHECK(set.field(2).number() == 12);
  CHECK(set.field(3).number() == 13);
}

TEST_CASE("the main graph's nodes are split off: views, or stripped copies when they hold a payload", "[wire]") {
  onnx::ModelProto m;
  auto* g = m.mutable_graph();
  g->set_name("main");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("X");
  relu->add_output("A");
  auto* constant = g->add_node();  // a Constant whose value is large enough to strip
  constant->set_op_type("Constant");
  constant->add_output("C");
  auto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::UINT8);
  value->mutable_t()->add_dims(300);
  value->mutable_t()->set_raw_data(std::string(300, 'x'));
  // A function's nodes are not split: only the main graph's.
  auto* f = m.add_functions();
  f->set_name("F");
  f->add_node()->set_op_type("Neg");
  std::string original = m.SerializeAsString();
  auto buffer = Buffer::fromString(original);

  auto stripped = wire::stripPayloads(buffer, 100, /*splitMain=*/true);
  REQUIRE(stripped.mainNodes.size() == 2);
  REQUIRE(stripped.payloads.size() == 1);
  // The Relu is its bytes in the source; the Constant a copy with a placeholder.
  std::string_view first = stripped.mainNodes.next();
  CHECK(first == relu->SerializeAsString());
  CHECK(first.data() >= buffer->data());
  CHECK(first.data() < buffer->data() + buffer->size());
  std::string_view second = stripped.mainNodes.next();
  CHECK((second.data() < buffer->data() || second.data() >= buffer->data() + buffer->size()));
  CHECK_THROWS_AS(stripped.mainNodes.next(), std::out_of_range);
  onnx::NodeProto parsed;
  REQUIRE(parsed.ParseFromArray(second.data(), static_cast<int>(second.size())));
  CHECK(parsed.op_type() == "Constant");
  CHECK_FALSE(parsed.attribute(0).t().has_raw_data());
  CHECK(wire::hasField(parsed.attribute(0).t().unknown_fields(), wire::kPayloadField));
  // What is left is the model without the main graph's nodes.
  onnx::ModelProto rest;
  REQUIRE(rest.ParseFromString(stripped.bytes));
  CHECK(rest.graph().node_size() == 0);
  CHECK(rest.graph().name() == "main");
  CHECK(rest.functions(0).node_size() == 1);
  // Without the option nothing is split.
  auto whole = wire::stripPayloads(buffer, 100);
  CHECK(whole.mainNodes.size() == 0);
  REQUIRE(rest.ParseFromString(whole.bytes));
  CHECK(rest.graph().node_size() == 2);
}

TEST_CASE("the main graph's nodes come back in order across fields and repeated graph fields", "[wire]") {
  // protobuf merges a repeated ModelProto.graph; GraphProto.node may be
  // interleaved with other fields. Payload-holding nodes keep their places.
  auto nodeBytes = [](const std::string& op, size_t payload) {
    onnx::NodeProto n;
    n.set_op_type(op);
    if (payload) {
      auto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::UINT8);
      a->mutable_t()->add_dims(static_cast<int64_t>(payload));
      a->mutable_t()->set_raw_data(std::string(payload, 'p'));
    }
    return n.SerializeAsString();
  };
  auto field = [](uint32_t number, const std::string& value) {
    std::string out;
    wire::appendLenField(out, number, value);
    return out;
  };
  std::string graph1 =
      field(1, nodeBytes("A", 0)) + field(2, "g") + field(1, nodeBytes("B", 200)) + field(1, nodeBytes("C", 0));
  std::string graph2 = field(1, nodeBytes("D", 200)) + field(1, nodeBytes("E", 0));
  std::string model = field(7, graph1) + field(7, graph2);
  onnx::ModelProto expected;
  REQUIRE(expected.ParseFromString(model));
  REQUIRE(expected.graph().node_size() == 5);

  auto stripped = wire::stripPayloads(Buffer::fromString(model), 100, /*splitMain=*/true);
  REQUIRE(stripped.mainNodes.size() == 5);
  REQUIRE(stripped.payloads.size() == 2);
  for (int i = 0; i < 5; ++i) {
    onnx::NodeProto n;
    std::string_view bytes = stripped.mainNodes.next();
    REQUIRE(n.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    CHECK(n.op_type() == expected.graph().node(i).op_type());
    CHECK(n.attribute_size() == expected.graph().node(i).attribute_size());
    if (n.attribute_size()) CHECK_FALSE(n.attribute(0).t().has_raw_data());
  }
  onnx::ModelProto rest;
  REQUIRE(rest.ParseFromString(stripped.bytes));
  CHECK(rest.graph().name() == "g");
  CHECK(rest.graph().node_size() == 0);
}

TEST_CASE("the main graph's value_info entries are split off as views, in order, and a subgraph's stay", "[wire]") {
  auto field = [](uint32_t number, const std::string& value) {
    std::string out;
    wire::appendLenField(out, number, value);
    return out;
  };
  auto entry = [](const std::string& name) {
    onnx::ValueInfoProto vi;
    vi.set_name(name);
    vi.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return vi.SerializeAsString();
  };
  // An If whose branch declares its own value: that entry is the node's, not the main graph's.
  onnx::NodeProto withBranch;
  withBranch.set_op_type("If");
  auto* branch = withBranch.add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  branch->mutable_g()->add_value_info()->set_name("inner");
  std::string graph1 =
      field(13, entry("a")) + field(1, withBranch.SerializeAsString()) + field(13, entry("b")) + field(2, "g");
  std::string graph2 = field(13, entry("c"));
  std::string model = field(7, graph1) + field(7, graph2);
  auto source = Buffer::fromString(model);

  auto stripped = wire::stripPayloads(source, 100, /*splitMain=*/true);
  REQUIRE(stripped.mainValueInfo.size() == 3);
  for (const char* name : {"a", "b", "c"}) {
    std::string_view bytes = stripped.mainValueInfo.next();
    CHECK(bytes == entry(name));
    CHECK(bytes.data() >= source->data());  // read where it lies: no copy
    CHECK(bytes.data() < source->data() + source->size());
  }
  CHECK_THROWS_AS(stripped.mainValueInfo.next(), std::out_of_range);
  onnx::ModelProto rest;
  REQUIRE(rest.ParseFromString(stripped.bytes));
  CHECK(rest.graph().value_info_size() == 0);
  CHECK(rest.graph().name() == "g");
  REQUIRE(stripped.mainNodes.size() == 1);
  onnx::NodeProto node;
  std::string_view bytes = stripped.mainNodes.next();
  REQUIRE(node.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  CHECK(node.attribute(0).g().value_info(0).name() == "inner");
  // Without the option the entries stay in the model.
  auto whole = wire::stripPayloads(source, 100);
  CHECK(whole.mainValueInfo.size() == 0);
  REQUIRE(rest.ParseFromString(whole.bytes));
  CHECK(rest.graph().value_info_size() == 3);
}

TEST_CASE("the value_info stream starts at the first entry: the nodes before it are not read again", "[wire]") {
  onnx::ModelProto m;
  auto* g = m.mutable_graph();
  for (int i = 0; i < 100; ++i) {
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->add_output("t" + std::to_string(i));
  }
  g->add_value_info()->set_name("t7");
  std::string bytes = m.SerializeAsString();
  auto source = Buffer::fromString(bytes);
  auto stripped = wire::stripPayloads(source, 100, /*splitMain=*/true);
  REQUIRE(stripped.mainValueInfo.size() == 1);
  // Wreck the nodes' bytes after the split: a walk over them would throw or
  // read garbage; the stream must not go there.
  std::string entry = g->value_info(0).SerializeAsString();
  const char* at = std::search(source->data(), source->data() + source->size(), entry.begin(), entry.end());
  const std::string_view relu = "Relu";
  const char* firstNode = std::search(source->data(), source->data() + source->size(), relu.begin(), relu.end());
  REQUIRE(firstNode < at);
  std::memset(const_cast<char*>(firstNode), 0xff, static_cast<size_t>(at - 2 - firstNode));  // up to the entry's tag
  CHECK(stripped.mainValueInfo.next() == entry);
}

namespace {

// A buffer that records where it is told it may let pages go.
class RecordingBuffer : public Buffer {
 public:
  explicit RecordingBuffer(std::string bytes) : bytes_(std::move(bytes)) {
    data_ = bytes_.data();
    size_ = bytes_.size();
  }
  void releaseBefore(const char* p) const override { calls.push_back(static_cast<size_t>(p - data_)); }
  mutable std::vector<size_t> calls;

 private:
  std::string bytes_;
};

}  // namespace

TEST_CASE("the split nodes' source pages are let go behind the stripper and again behind the loader", "[wire]") {
  onnx::ModelProto m;
  for (const char* op : {"A", "B", "C"}) m.mutable_graph()->add_node()->set_op_type(op);
  std::string bytes = m.SerializeAsString();
  auto source = std::make_shared<RecordingBuffer>(bytes);
  auto stripped = wire::stripPayloads(source, 100, /*splitMain=*/true);
  // The stripper: after each node, up to its end.
  std::vector<size_t> ends;
  for (int i = 0; i < 3; ++i) {
    std::string node = m.graph().node(i).SerializeAsString();
    ends.push_back(bytes.find(node) + node.size());
  }
  CHECK(source->calls == ends);
  source->calls.clear();
  // The loader's pass: before each node (its tag), then past the last.
  std::vector<const char*> starts;
  for (int i = 0; i < 3; ++i) starts.push_back(stripped.mainNodes.next().data());
  stripped.mainNodes.release();
  REQUIRE(source->calls.size() == 4);
  for (int i = 0; i < 3; ++i) {
    CHECK(source->calls[static_cast<size_t>(i)] < static_cast<size_t>(starts[static_cast<size_t>(i)] - source->data()));
    if (i > 0) CHECK(source->calls[static_cast<size_t>(i)] >= ends[static_cast<size_t>(i) - 1]);
  }
  CHECK(source->calls[3] == ends[2]);
}
