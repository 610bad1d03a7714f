#include <catch2/catch.hpp>

#include "io/loader.h"
#include "models.h"
#include "support.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace graphrw;

namespace {

// A model whose weight W lives at `location` (offset 0, 64 bytes).
onnx::ModelProto externalModel(const std::string& location, int64_t length = 64) {
  auto proto = test::parseModel(test::kSmallModel);
  auto* t = proto.mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value(location);
  e = t->add_external_data();
  e->set_key("length");
  e->set_value(std::to_string(length));
  return proto;
}

std::string loadError(const fs::path& model) {
  try {
    loadModel(model.string());
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadInput);
    return e.what();
  }
  FAIL("loaded");
  return "";
}

}  // namespace

TEST_CASE("external data is found beside the model and read lazily", "[external]") {
  test::TempDir dir;
  fs::create_directories(dir / "sub");
  test::writeFile(dir / "sub/w.bin", std::string(64, '\x01'));
  test::writeProto(externalModel("sub/w.bin"), dir / "m.onnx");
  auto model = loadModel((dir / "m.onnx").string());
  auto* t = model->graph().findLocal("W")->initializer();
  CHECK(t->isExternal());
  CHECK(t->externalBytes().size == 64);
  CHECK(t->externalBytes().view() == std::string(64, '\x01'));
}

TEST_CASE("external data locations that leave the folder are refused", "[external][security]") {
  test::TempDir outside, dir;
  test::writeFile(outside / "secret.bin", std::string(64, 's'));
  SECTION("absolute") {
    test::writeProto(externalModel((outside / "secret.bin").string()), dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("is absolute"));
  }
  SECTION("..") {
    fs::create_directories(dir / "inner");
    test::writeProto(externalModel("../" + outside.path().filename().string() + "/secret.bin"), dir / "inner/m.onnx");
    CHECK_THAT(loadError(dir / "inner/m.onnx"), Catch::Contains("'..'"));
  }
  SECTION("a link to outside") {
    fs::create_symlink(outside / "secret.bin", dir / "link.bin");
    test::writeProto(externalModel("link.bin"), dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("through a link"));
  }
  SECTION("a linked folder to outside") {
    fs::create_directory_symlink(outside.path(), dir / "d");
    test::writeProto(externalModel("d/secret.bin"), dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("through a link"));
  }
  SECTION("a link that stays inside is fine") {
    test::writeFile(dir / "real.bin", std::string(64, 'r'));
    fs::create_symlink(dir / "real.bin", dir / "alias.bin");
    test::writeProto(externalModel("alias.bin"), dir / "m.onnx");
    CHECK_NOTHROW(loadModel((dir / "m.onnx").string()));
  }
}

TEST_CASE("missing or short external data is bad input", "[external]") {
  test::TempDir dir;
  SECTION("missing") {
    test::writeProto(externalModel("nope.bin"), dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("tensor 'W'") && Catch::Contains("nope.bin"));
  }
  SECTION("short") {
    test::writeFile(dir / "w.bin", std::string(10, 'x'));
    test::writeProto(externalModel("w.bin"), dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("too short"));
  }
  SECTION("not a number") {
    auto m = externalModel("w.bin");
    m.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("12x");
    test::writeProto(m, dir / "m.onnx");
    CHECK_THAT(loadError(dir / "m.onnx"), Catch::Contains("not a number"));
  }
}
