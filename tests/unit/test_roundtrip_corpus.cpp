// Lossless: every model of ONNX's backend test corpus, loaded and written with
// no pass, is the same protobuf message, field by field, and the same bytes
// protobuf itself would write.
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/writer.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace graphrw;

TEST_CASE("load then write is lossless over libonnx-testdata", "[roundtrip][corpus]") {
  fs::path root = ONNX_TESTDATA_DIR;
  REQUIRE(fs::is_directory(root));  // installed by .ci/run (libonnx-testdata): never skipped
  size_t checked = 0;
  std::vector<std::string> failures;
  for (const char* part : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    REQUIRE(fs::is_directory(root / part));
    for (const auto& entry : fs::directory_iterator(root / part)) {
      fs::path file = entry.path() / "model.onnx";
      if (!fs::exists(file)) continue;
      std::string bytes = test::readFile(file);
      onnx::ModelProto original;
      REQUIRE(original.ParseFromString(bytes));
      try {
        // Views for everything of 16 bytes or more, so the splicing is exercised hard.
        auto model = loadModel(Buffer::fromString(bytes), file.parent_path(), file.string(), LoadOptions{16});
        std::string written = serialize(*model);
        onnx::ModelProto back;
        std::string diff;
        if (!back.ParseFromString(written))
          failures.push_back(file.string() + ": output does not parse");
        else if (!test::sameMessage(original, back, &diff))
          failures.push_back(file.string() + ": " + diff);
        else if (written != original.SerializeAsString())
          failures.push_back(file.string() + ": bytes differ from protobuf's serialization");
      } catch (const std::exception& e) {
        failures.push_back(file.string() + ": " + e.what());
      }
      ++checked;
    }
  }
  INFO(checked << " models checked");
  for (const auto& f : failures) UNSCOPED_INFO(f);
  CHECK(checked > 1000);
  CHECK(failures.empty());
}
