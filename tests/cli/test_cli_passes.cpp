// End-to-end: the replace, checkpoint and outline subcommands and their rule-file forms.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "seed_models.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace graphrw::test;

namespace {

std::string bin() { return graphrwBin(); }
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }
size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("checkpoint from the command line, its rule file, inspect", "[cli][checkpoint]") {
  TempDir dir;
  writeProto(seedM1(), dir / "m1.onnx");
  auto r = run(bin() + " checkpoint " + q(dir / "m1.onnx") + " --after 'scope=dense_*'");
  REQUIRE(r.status == 0);
  REQUIRE(fs::exists(dir / "m1.checkpointed.onnx"));

  auto text = run(bin() + " inspect " + q(dir / "m1.checkpointed.onnx"));
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("checkpoints: 2\n  dense_1_out (node dense_1/Relu/Checkpoint)\n"));
  CHECK_THAT(text.out, Catch::Contains("recompute marks: 0"));
  auto js = run(bin() + " inspect --json " + q(dir / "m1.checkpointed.onnx"));
  auto j = nlohmann::json::parse(js.out);
  CHECK(j["recomputation"]["checkpoints"].size() == 2);
  CHECK(j["recomputation"]["checkpoints"][1]["value"] == "output/before_checkpoint");

  writeFile(dir / "ck.rules.json",
            R"({"version": 1, "passes": [{"pass": "checkpoint", "after": {"scope": "dense_*"}}]})");
  auto byRules = run(bin() + " run " + q(dir / "ck.rules.json") + " " + q(dir / "m1.onnx"));
  REQUIRE(byRules.status == 0);
  CHECK(readFile(dir / "m1.ck.onnx") == readFile(dir / "m1.checkpointed.onnx"));

  auto rec = run(bin() + " checkpoint " + q(dir / "m1.onnx") + " --after scope=dense_2 --mode recompute -o " +
                 q(dir / "rec.onnx"));
  REQUIRE(rec.status == 0);
  CHECK_THAT(run(bin() + " inspect " + q(dir / "rec.onnx")).out, Catch::Contains("recompute marks: 3"));
  auto valid = run(bin() + " validate " + q(dir / "rec.onnx"));
  CHECK(valid.status == 0);

  writeFile(dir / "keep.onnx", "old");
  auto none = run(bin() + " checkpoint " + q(dir / "m1.onnx") + " --after op_type=Conv -o " + q(dir / "keep.onnx"));
  CHECK(none.status == 2);
  CHECK(lines(none.err) == 1);
  CHECK_THAT(none.err, Catch::Contains("selector 'op_type=Conv' matched no node"));
  CHECK(readFile(dir / "keep.onnx") == "old");
  auto allowed = run(bin() + " checkpoint " + q(dir / "m1.onnx") + " --after op_type=Conv --allow-no-match -o " +
                     q(dir / "same.onnx"));
  CHECK(allowed.status == 0);
  CHECK(readFile(dir / "same.onnx") == readFile(dir / "m1.onnx"));

  auto badMode = run(bin() + " checkpoint " + q(dir / "m1.onnx") + " --after op_type=Relu --mode sometimes");
  CHECK(badMode.status == 2);
  writeFile(dir / "bad.rules.json",
            R"({"version": 1, "passes": [{"pass": "checkpoint", "after": {"scope": "dense_*"}, "evry": 2}]})");
  auto bad = run(bin() + " run " + q(dir / "bad.rules.json") + " " + q(dir / "m1.onnx"));
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("evry"));
}
