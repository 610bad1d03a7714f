// PyTorch 1.13 exports (tests/models/pytorch, written once by export.py) made
// static and converted down to opset 11: set-shapes, fold, opset --to 11.
// (and fold again, for what LayerNormalization-17's body brings). ONNX's checker (full check, strict shape inference)
// passes at opset 11 and ONNX Runtime gives the original's outputs within 1e-5.
#include <catch2/catch.hpp>

#include "driver/pass_manager.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/fold/fold.h"
#include "passes/opset/opset.h"
#include "passes/set_shapes/set_shapes.h"
#include "support.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::test;

TEST_CASE("opset: PyTorch exports at opsets 13, 14, 15 and 17 go to 11 with the same outputs", "[opset][pytorch]") {
  fs::path dir = fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch";
  size_t models = 0;
  for (const char* name : {"bert", "gpt", "resnet"})
    for (int opset : {13, 14, 15, 17}) {
      fs::path path = dir / (std::string(name) + "-opset" + std::to_string(opset) + ".onnx");
      if (std::string(name) == "gpt" && opset == 13) {
        CHECK_FALSE(fs::exists(path));  // PyTorch exports triu from opset 14 on
        continue;
      }
      INFO(path.filename().string());
      REQUIRE(fs::exists(path));
      auto original = readProto(path);
      auto model = loadModel(path.string());
      passes::SetShapesOptions shapes;
      if (std::string(name) == "resnet")
        shapes.inputs["pixels"] = {2, 3, 16, 16};
      else
        shapes.dims = {{"batch", 2}, {"sequence", 8}};
      PassManager pm({true, std::nullopt, ""});
      pm.add(passes::createSetShapesPass(shapes));
      pm.add(passes::createFoldPass({}));
      pm.add(passes::createOpsetPass({11, std::nullopt}));
      pm.add(passes::createFoldPass({}));  // LayerNormalization-17's body brings a Shape of a static tensor
      auto report = pm.run(*model);
      INFO(report.dump());
      CHECK(model->opsetVersion("") == 11);
      checkValid(*model);
      TempDir tmp;
      writeModel(*model, (tmp / "out.onnx").string());
      auto converted = readProto(tmp / "out.onnx");
      auto ops = opCounts(converted);
      for (const char* gone : {"Trilu", "Range", "LayerNormalization", "Shape"})
        CHECK(ops.count(std::string("ai.onnx::") + gone) == 0);
      checkSameMaths(original, converted, 1e-5, 40);
      ++models;
    }
  CHECK(models == 11);
}

TEST_CASE("opset: a GPT export made static but not folded is refused with the advice that works", "[opset][pytorch]") {
  fs::path path = fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "gpt-opset15.onnx";
  passes::SetShapesOptions shapes;
  shapes.dims = {{"batch", 2}, {"sequence", 8}};
  // set-shapes alone: Trilu's input is computed from the input's shape (ConstantOfShape of a Shape), still dynamic.
  auto model = loadModel(path.string());
  PassManager pm({true, std::nullopt, ""});
  pm.add(passes::createSetShapesPass(shapes));
  pm.add(passes::createOpsetPass({11, std::nullopt}));
  try {
    pm.run(*model);
    FAIL("opset converted a Trilu whose dimensions are not static");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    std::string what = e.what();
    CHECK_THAT(what,
               Catch::Contains("Trilu's last two dimensions are not static (fix the input shapes and fold what is "
                               "computed from them: `graphrw legalize` does both, or `graphrw set-shapes` then "
                               "`graphrw fold`)"));
    CHECK_THAT(what, !Catch::Contains("run set-shapes first"));
  }
  // What the message advises works (the test above checks the maths): set-shapes, fold, then opset.
  auto advised = loadModel(path.string());
  PassManager then({true, std::nullopt, ""});
  then.add(passes::createSetShapesPass(shapes));
  then.add(passes::createFoldPass({}));
  then.add(passes::createOpsetPass({11, std::nullopt}));
  CHECK_NOTHROW(then.run(*advised));
  CHECK(advised->opsetVersion("") == 11);
}
