#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/writer.h"
#include "ir_corruptor.h"
#include "models.h"
#include "support.h"
#include "support/error.h"
#include "support/model_bytes.h"
#include "support/wire.h"

namespace fs = std::filesystem;
using namespace graphrw;

namespace {

size_t filesIn(const fs::path& dir) {
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

onnx::ModelProto rawModel() {
  auto proto = test::parseModel(test::kSmallModel);
  test::toRawData(proto);
  return proto;
}

}  // namespace

TEST_CASE("write is byte-identical to protobuf's own serialization", "[writer]") {
  auto proto = rawModel();
  test::TempDir dir;
  test::writeProto(proto, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());
  auto result = writeModel(*model, (dir / "out.onnx").string());
  CHECK(result.modelBytes == proto.ByteSizeLong());
  CHECK(test::readFile(dir / "out.onnx") == proto.SerializeAsString());
  CHECK(filesIn(dir.path()) == 2);  // no temporary left behind
}

TEST_CASE("write is byte-identical with long fields before the graph and after it", "[writer]") {
  auto proto = rawModel();
  proto.set_producer_name(std::string(300, 'p'));
  proto.set_doc_string(std::string(70000, 'd'));  // its length takes a 3-byte varint
  proto.set_domain("ai.example");
  proto.set_model_version(1ll << 60);
  auto* meta = proto.add_metadata_props();
  meta->set_key("k");
  meta->set_value(std::string(5000, 'v'));
  test::TempDir dir;
  test::writeProto(proto, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());
  writeModel(*model, (dir / "out.onnx").string());
  CHECK(test::readFile(dir / "out.onnx") == proto.SerializeAsString());
}

TEST_CASE("model bytes: streamed nodes framed by the model's other fields, whatever the room in front", "[writer]") {
  auto proto = test::parseModel(test::kSmallModel);
  proto.set_producer_name(std::string(200, 'p'));
  const std::string expected = proto.SerializeAsString();
  onnx::ModelProto rest = proto;
  rest.mutable_graph()->clear_node();
  for (size_t room : {size_t{0}, size_t{10}, size_t{211}, size_t{4096}}) {
    for (size_t reservation : {ModelBytes::kReservation, size_t{0}}) {  // mapped, or a string where it cannot be
      ModelBytes bytes(room, reservation);
      for (const auto& n : proto.graph().node()) {
        std::string field;
        wire::appendLenField(field, 1, n.SerializeAsString());
        bytes.append(field);
      }
      bytes.finish(rest.SerializeAsString());
      CHECK(bytes.view() == expected);
    }
  }
  ModelBytes small(16, 4096);  // a reservation is a hard limit
  small.append(std::string(4000, 'n'));
  CHECK_THROWS_AS(small.append(std::string(100, 'n')), std::length_error);
  ModelBytes none(16);
  CHECK_THROWS(none.finish(std::string("\x08\x07", 2)));  // ir_version only: no graph to hold nodes
}

namespace {

// A chain of Identity nodes with, every 25th node, a Constant whose 4000-byte
// payload the loader keeps out of the node's bytes (a placeholder to splice).
onnx::ModelProto longChain(int nodes) {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y) { Y = Identity(X) }
)");
  auto* g = proto.mutable_graph();
  g->clear_node();
  std::string prev = "X";
  for (int i = 0; i < nodes; ++i) {
    auto* n = g->add_node();
    n->set_name("/chain/step." + std::to_string(i));
    if (i % 25 == 7) {
      n->set_op_type("Constant");
      n->add_output("c" + std::to_string(i));
      auto* a = n->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_dims(1000);
      a->mutable_t()->set_raw_data(std::string(4000, static_cast<char>('a' + i % 26)));
      auto* out = g->add_output();
      out->set_name("c" + std::to_string(i));
      continue;
    }
    n->set_op_type("Identity");
    n->add_input(prev);
    prev = i + 1 == nodes ? "Y" : "v" + std::to_string(i);
    n->add_output(prev);
  }
  return proto;
}

// Writes `model` to dir/out.onnx with the main graph's nodes (and value_info)
// moved to the spill file never, at every field, at `some` and 20,000 bytes, and
// at the default: each write must be `expected`.
void writesAtEverySpillSize(ir::Model& model, const fs::path& dir, const std::string& expected, size_t some) {
  for (size_t at : {size_t{0}, size_t{1}, some, size_t{20000}, WriteOptions{}.spillNodesAt}) {
    INFO("spill at " << at);
    WriteOptions options;
    options.spillNodesAt = at;
    auto result = writeModel(model, (dir / "out.onnx").string(), options);
    CHECK(result.modelBytes == expected.size());
    CHECK(test::readFile(dir / "out.onnx") == expected);
  }
}

}  // namespace

TEST_CASE("model bytes: nodes moved to the spill file go first in the graph", "[writer]") {
  auto proto = longChain(60);
  const std::string expected = proto.SerializeAsString();
  onnx::ModelProto rest = proto;
  rest.mutable_graph()->clear_node();
  for (int every : {1, 7, 1000}) {
    ModelBytes bytes(64);
    int held = 0;
    for (const auto& n : proto.graph().node()) {
      std::string field;
      wire::appendLenField(field, 1, n.SerializeAsString());
      bytes.append(field);
      if (++held % every == 0) {
        bytes.spillNodes({});
        CHECK(bytes.appended() == 0);  // the storage is used again
      }
    }
    bytes.finish(rest.SerializeAsString());
    INFO("spilled every " << every << " nodes");
    CHECK(bytes.lead().empty() == (every > 60));
    for (const auto& piece : bytes.lead().pieces) CHECK(piece.file != nullptr);  // in the spill file, not memory
    auto spliced = wire::splicePayloads(bytes.view(), {}, &bytes.lead());
    std::string written;
    for (const auto& piece : spliced.pieces) written.append(piece.data, piece.size);
    CHECK(spliced.size == expected.size());
    CHECK(written == expected);
  }
}

TEST_CASE("write is byte-identical when the nodes move to the spill file, payloads and all", "[writer]") {
  auto proto = longChain(400);
  test::TempDir dir;
  test::writeProto(proto, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());
  const std::string expected = proto.SerializeAsString();
  writesAtEverySpillSize(*model, dir.path(), expected, 500);
  // Standard output takes the spilled nodes too.
  WriteOptions options;
  options.spillNodesAt = 300;
  int saved = dup(1);
  int fd = open((dir / "stdout").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE((saved >= 0 && fd >= 0));
  dup2(fd, 1);
  close(fd);
  try {
    writeModel(*model, "-", options);
  } catch (...) {
    dup2(saved, 1);
    throw;
  }
  dup2(saved, 1);
  close(saved);
  CHECK(test::readFile(dir / "stdout") == expected);
}

TEST_CASE("value_info is streamed where protobuf puts it, through the spill file too", "[writer]") {
  // value_info (GraphProto field 13) is written entry by entry after the
  // nodes: it must land after the graph's fields 1-12 (initializers with their
  // payloads, inputs, outputs, doc_string) and before 14, 15 and unknown fields.
  auto proto = longChain(300);
  auto* g = proto.mutable_graph();
  g->set_doc_string("the chain");
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2000);
  w->set_raw_data(std::string(8000, 'w'));
  for (int i = 0; i < 299; ++i) {
    if (i % 25 == 7) continue;  // the constants
    auto* vi = g->add_value_info();
    vi->set_name("v" + std::to_string(i));
    if (i % 3 != 1) {
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      tt->mutable_shape()->add_dim()->set_dim_value(4);
    }
    if (i % 5 == 0) vi->set_doc_string("entry " + std::to_string(i));
  }
  auto* qa = g->add_quantization_annotation();
  qa->set_tensor_name("v1");
  g->mutable_unknown_fields()->AddVarint(3, 7);  // unknown: after everything known
  const std::string expected = proto.SerializeAsString();
  test::TempDir dir;
  test::writeProto(proto, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());
  REQUIRE(model->graph().valueInfo().size() == static_cast<size_t>(g->value_info_size()));
  writesAtEverySpillSize(*model, dir.path(), expected, 700);
}

TEST_CASE("toProto materializes every payload", "[writer]") {
  auto proto = rawModel();
  auto model = loadModel(Buffer::fromString(proto.SerializeAsString()), ".", "m");
  auto full = toProto(*model);
  std::string diff;
  CHECK(test::sameMessage(full, proto, &diff));
  INFO(diff);
}

TEST_CASE("a model over 2 GB is refused naming the option, and nothing is touched", "[writer]") {
  test::TempDir dir;
  // A sparse 2.1 GB file stands in for a huge weight: mapping it costs nothing.
  fs::path big = dir / "big.bin";
  {
    int fd = open(big.c_str(), O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (2100ll << 20)) == 0);
    close(fd);
  }
  auto model = loadModel(Buffer::fromString(rawModel().SerializeAsString()), dir.path(), "m");
  auto* w = ir::testing::Corruptor::initializer(*model->graph().findLocal("W"));
  auto bytes = Bytes::of(Buffer::mapFile(big));
  ir::testing::Corruptor::proto(*w).clear_dims();
  ir::testing::Corruptor::proto(*w).add_dims(static_cast<int64_t>(bytes.size / 4));
  ir::testing::Corruptor::setRawView(*w, bytes);

  test::writeFile(dir / "out.onnx", "previous contents");
  try {
    writeModel(*model, (dir / "out.onnx").string());
    FAIL("written");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("2 GB") && Catch::Contains("--external-data"));
  }
  CHECK(test::readFile(dir / "out.onnx") == "previous contents");
  CHECK(filesIn(dir.path()) == 2);
}

TEST_CASE("external data: move, reload, embed again", "[writer][external]") {
  auto proto = rawModel();
  test::TempDir dir;
  test::writeProto(proto, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());

  WriteOptions move;
  move.external = ExternalMode::Move;
  move.externalFile = "weights.bin";
  move.threshold = 16;
  auto result = writeModel(*model, (dir / "ext.onnx").string(), move);
  CHECK(result.externalBytes == 64);
  REQUIRE(fs::exists(dir / "weights.bin"));

  auto written = test::readProto(dir / "ext.onnx");
  const auto& w = written.graph().initializer(0);
  CHECK(w.data_location() == onnx::TensorProto::EXTERNAL);
  CHECK_FALSE(w.has_raw_data());
  CHECK(w.external_data(0).key() == "location");
  CHECK(w.external_data(0).value() == "weights.bin");

  auto reloaded = loadModel((dir / "ext.onnx").string());
  auto* t = reloaded->graph().findLocal("W")->initializer();
  REQUIRE(t->isExternal());
  CHECK(t->externalBytes().view() == proto.graph().initializer(0).raw_data());

  WriteOptions embed;
  embed.external = ExternalMode::Embed;
  writeModel(*reloaded, (dir / "embedded.onnx").string(), embed);
  auto back = test::readProto(dir / "embedded.onnx");
  std::string diff;
  CHECK(test::sameMessage(back, proto, &diff));
  INFO(diff);
}

TEST_CASE("external data follows a model written to another folder", "[writer][external]") {
  auto proto = rawModel();
  test::TempDir a, b;
  test::writeProto(proto, a / "in.onnx");
  WriteOptions move;
  move.external = ExternalMode::Move;
  move.externalFile = "w.bin";
  move.threshold = 16;
  writeModel(*loadModel((a / "in.onnx").string()), (a / "ext.onnx").string(), move);

  auto model = loadModel((a / "ext.onnx").string());
  SECTION("same folder: the data file is shared, not rewritten") {
    auto r = writeModel(*model, (a / "copy.onnx").string());
    CHECK(r.dataFiles.empty());
    CHECK(test::readFile(a / "copy.onnx") == test::readFile(a / "ext.onnx"));
  }
  SECTION("another folder: the data is written beside the output") {
    auto r = writeModel(*model, (b / "out.onnx").string());
    REQUIRE(r.dataFiles.size() == 1);
    CHECK(fs::exists(b / "out.onnx.data"));
    fs::remove_all(a.path());
    auto moved = loadModel((b / "out.onnx").string());
    auto* t = moved->graph().findLocal("W")->initializer();
    CHECK(t->externalBytes().view() == proto.graph().initializer(0).raw_data());
  }
  SECTION("standard output cannot carry external data from another folder") {
    // Run from b's folder so the working directory differs from a.
    auto cwd = fs::current_path();
    fs::current_path(b.path());
    CHECK_THROWS_WITH(writeModel(*model, "-"), Catch::Contains("--embed-external-data"));
    fs::current_path(cwd);
  }
  SECTION("the data file the input reads is never overwritten") {
    WriteOptions again = move;
    CHECK_THROWS_WITH(writeModel(*model, (a / "again.onnx").string(), again), Catch::Contains("read by the input"));
    CHECK_FALSE(fs::exists(a / "again.onnx"));
  }
}
