// --shard auto under Slurm, Kubernetes and GNU parallel, and graphrw report
// merge: docs/batch.md's recipes run as written (the schedulers' environments
// simulated for Slurm and Kubernetes, GNU parallel itself for the third).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "driver/batch.h"
#include "support.h"
#include "support/error.h"

namespace fs = std::filesystem;
using graphrw::test::run;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// The fenced block of docs/batch.md whose info string is "LANG TAG".
std::string docBlock(const std::string& tag) {
  std::istringstream doc(graphrw::test::readFile(fs::path(GRAPHRW_SOURCE_DIR) / "docs" / "batch.md"));
  std::string text, line;
  bool in = false, found = false;
  while (std::getline(doc, line)) {
    if (!in && line.starts_with("```") && line.ends_with(" " + tag)) {
      in = found = true;
      continue;
    }
    if (in && line == "```") break;
    if (in) text += line + "\n";
  }
  REQUIRE(found);
  return text;
}

// A work folder as the recipes expect it: rules.json, models/ (seven small
// models, one broken), graphrw on PATH.
struct Workspace {
  graphrw::test::TempDir dir;
  std::string env;
  Workspace() {
    fs::create_directories(dir / "models");
    for (int i = 1; i <= 6; ++i) {
      auto r = run(std::string(GRAPHRW_GEN_BERT) + " -o " + q(dir / "models" / ("m" + std::to_string(i) + ".onnx")) +
                   " --layers 1 --hidden 16 --heads 2 --intermediate 32 --vocab 50 --seq 4 --batch 1 --seed " +
                   std::to_string(i));
      REQUIRE(r.status == 0);
    }
    graphrw::test::writeFile(dir / "models" / "broken.onnx", "not a model");
    graphrw::test::writeFile(dir / "rules.json", R"({"version": 1, "passes": [{"pass": "expand"}]})");
    env = "cd " + q(dir / "") + " && export PATH=" + q(fs::path(graphrw::test::graphrwBin()).parent_path()) +
          ":\"$PATH\" && ";
  }
  // What one machine's run of the whole list reports, times left out.
  nlohmann::json oneMachine() {
    auto r = run(env + "graphrw run rules.json models/*.onnx --out-dir one --report one.json");
    CHECK(r.status == 3);  // the broken model
    return comparable(nlohmann::json::parse(graphrw::test::readFile(dir / "one.json")));
  }
  static nlohmann::json comparable(nlohmann::json r) {
    for (const char* key : {"seconds", "seconds_longest_shard", "shards", "shard"}) r["summary"].erase(key);
    for (auto& m : r["models"]) {
      m.erase("output");
      for (auto& p : m["passes"]) p.erase("seconds");
    }
    return r;
  }
  // Every model converted exactly once into out/, and the merged report a one-machine run's.
  void checkConverted(const std::string& mergedFile) {
    std::set<std::string> outputs;
    for (const auto& e : fs::directory_iterator(dir / "out")) outputs.insert(e.path().filename().string());
    CHECK(outputs == std::set<std::string>{"m1.onnx", "m2.onnx", "m3.onnx", "m4.onnx", "m5.onnx", "m6.onnx"});
    auto merged = nlohmann::json::parse(graphrw::test::readFile(dir / mergedFile));
    CHECK(merged["summary"]["shards"] == 4);
    CHECK(merged["summary"]["models"] == 7);
    CHECK(merged["summary"]["failed"] == 1);
    CHECK(comparable(merged) == oneMachine());
  }
};

}  // namespace

TEST_CASE("shard auto: the index and count each scheduler gives, and what is refused", "[cli][batch]") {
  using graphrw::Shard;
  auto shard = [](size_t count, std::map<std::string, std::string> env) {
    return Shard::fromEnvironment(count, [&](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  // Slurm: --array=0-3, --array=1-8, --array=0-15:4 (IDs 0, 4, 8, 12).
  auto s = shard(0, {{"SLURM_ARRAY_TASK_ID", "2"},
                     {"SLURM_ARRAY_TASK_MIN", "0"},
                     {"SLURM_ARRAY_TASK_MAX", "3"},
                     {"SLURM_ARRAY_TASK_COUNT", "4"}});
  CHECK((s.index == 2 && s.count == 4 && s.from == "Slurm"));
  s = shard(8, {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "8"}});
  CHECK((s.index == 0 && s.count == 8));
  s = shard(0, {{"SLURM_ARRAY_TASK_ID", "12"},
                {"SLURM_ARRAY_TASK_MIN", "0"},
                {"SLURM_ARRAY_TASK_MAX", "12"},
                {"SLURM_ARRAY_TASK_STEP", "4"},
                {"SLURM_ARRAY_TASK_COUNT", "4"}});
  CHECK((s.index == 3 && s.count == 4));
  // Kubernetes and GNU parallel need the count.
  s = shard(5, {{"JOB_COMPLETION_INDEX", "4"}});
  CHECK((s.index == 4 && s.count == 5 && s.from == "Kubernetes"));
  s = shard(3, {{"PARALLEL_SEQ", "3"}, {"PARALLEL_JOBSLOT", "1"}});
  CHECK((s.index == 2 && s.count == 3 && s.from == "GNU parallel"));

  const std::pair<std::map<std::string, std::string>, std::string> refused[] = {
      {{}, "none of SLURM_ARRAY_TASK_ID (Slurm array job), JOB_COMPLETION_INDEX"},
      {{{"SLURM_ARRAY_TASK_ID", "5"},
        {"SLURM_ARRAY_TASK_MIN", "1"},
        {"SLURM_ARRAY_TASK_MAX", "7"},
        {"SLURM_ARRAY_TASK_COUNT", "3"}},
       "a Slurm array that is a list, not a range"},
      {{{"SLURM_ARRAY_TASK_ID", "x"}}, "SLURM_ARRAY_TASK_ID='x' is not a number"},
      {{{"JOB_COMPLETION_INDEX", "0"}}, "a Kubernetes Indexed Job does not say its completions; write --shard auto/N"},
      {{{"PARALLEL_SEQ", "1"}}, "GNU parallel does not say how many jobs there are"},
  };
  for (const auto& [env, says] : refused) {
    INFO(says);
    CHECK_THROWS_WITH(shard(0, env), Catch::Contains(says));
  }
  CHECK_THROWS_WITH(shard(4, {{"JOB_COMPLETION_INDEX", "4"}}),
                    Catch::Contains("Kubernetes task 4 is not below the count 4"));
  CHECK_THROWS_WITH(shard(2, {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}),
                    Catch::Contains("--shard auto/2: Slurm says 4 tasks"));
  CHECK_THROWS_WITH(shard(4, {{"PARALLEL_SEQ", "0"}}), Catch::Contains("PARALLEL_SEQ=0 (GNU parallel counts from 1)"));

  // On the command line: a usage error, exit 2, before any model is read.
  Workspace w;
  auto r = run(w.env +
               "env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX -u PARALLEL_SEQ graphrw run rules.json "
               "models/*.onnx --out-dir out --shard auto");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--shard auto: none of"));
  CHECK(run(w.env + "graphrw run rules.json models/*.onnx --out-dir out --shard auto/0").status == 2);
  CHECK(!fs::exists(w.dir / "out"));
}

TEST_CASE("docs/batch.md's Slurm array script: every model once over the tasks, merged report as one machine's",
          "[cli][batch]") {
  Workspace w;
  graphrw::test::writeFile(w.dir / "slurm-array.sh", docBlock("slurm-array.sh"));
  for (int id = 0; id < 4; ++id) {
    auto r = run(w.env + "env SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=" + std::to_string(id) +
                 " SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_COUNT=4 SLURM_CPUS_PER_TASK=2 "
                 "bash slurm-array.sh");
    INFO(r.err);
    CHECK((r.status == 0 || r.status == 3));  // the task with the broken model exits 3
    CHECK_THAT(r.err, Catch::Contains("graphrw: shard " + std::to_string(id) + " of 4 (from Slurm)"));
  }
  auto merge = run(w.env + docBlock("merge"));
  INFO(merge.err);
  CHECK(merge.status == 3);
  CHECK_THAT(merge.err,
             Catch::Contains("graphrw: 4 shards: converted 6, failed 1") && Catch::Contains("broken.onnx: "));
  w.checkConverted("report.json");
}

TEST_CASE("docs/batch.md's Kubernetes Indexed Job: every model once over the pods, merged report as one machine's",
          "[cli][batch]") {
  Workspace w;
  std::string manifest = docBlock("indexed-job.yaml");
  CHECK_THAT(manifest, Catch::Contains("completionMode: Indexed") && Catch::Contains("completions: 4"));
  // The container's command: sh -c with the args line.
  auto at = manifest.find("args:\n");
  REQUIRE(at != std::string::npos);
  std::string line = manifest.substr(manifest.find("- ", at) + 2);
  line = line.substr(0, line.find('\n'));
  CHECK_THAT(line, Catch::Contains("--shard auto/4"));
  graphrw::test::writeFile(w.dir / "pod.sh", line + "\n");
  for (int index = 0; index < 4; ++index) {
    auto r = run(w.env + "env JOB_COMPLETION_INDEX=" + std::to_string(index) + " sh pod.sh");
    INFO(r.err);
    CHECK((r.status == 0 || r.status == 3));
  }
  CHECK(run(w.env + docBlock("merge")).status == 3);
  w.checkConverted("report.json");
}

TEST_CASE("docs/batch.md's GNU parallel line, run by GNU parallel: every model once, merged report as one machine's",
          "[cli][batch]") {
  Workspace w;
  auto r = run(w.env + docBlock("gnu-parallel"));
  INFO(r.err);
  CHECK(r.status == 1);  // parallel's exit status: how many jobs failed (the one with the broken model)
  CHECK(run(w.env + docBlock("merge")).status == 3);
  w.checkConverted("report.json");
}

TEST_CASE("report merge refuses reports that do not belong together", "[cli][batch]") {
  Workspace w;
  for (int i = 0; i < 3; ++i)
    run(w.env + "graphrw run rules.json models/*.onnx --out-dir out --shard " + std::to_string(i) + "/3 --report r" +
        std::to_string(i) + ".json");
  run(w.env + "graphrw run rules.json models/*.onnx --out-dir out --shard 0/3 --report again.json --dry-run");
  graphrw::test::writeFile(w.dir / "other.json", R"({"version": 1, "passes": [{"pass": "strip-doc"}]})");
  run(w.env + "graphrw run other.json models/*.onnx --out-dir out2 --shard 1/3 --report other-r1.json");
  graphrw::test::writeFile(w.dir / "junk.json", "{\"summary\": 3}");
  const std::pair<std::string, std::string> bad[] = {
      {"r0.json r1.json", "report merge: shard 2 of 3 missing"},
      {"r0.json r1.json r2.json r1.json", "report merge: r1.json: shard 1/3 again (also r1.json)"},
      {"r0.json other-r1.json r2.json", "report merge: other-r1.json: rule file other.json, the others rules.json"},
      {"r1.json r2.json again.json", "report merge: again.json: a dry run mixed with a real one"},
      {"r0.json junk.json", "report merge: junk.json: not a batch report of graphrw run"},
      {"r0.json nope.json", "nope.json"},
  };
  for (const auto& [files, says] : bad) {
    INFO(files);
    auto r = run(w.env + "graphrw report merge " + files + " -o merged.json");
    CHECK(r.status == (files.find("nope") == std::string::npos ? 3 : 2));  // a file not there: a usage error
    CHECK_THAT(r.err, Catch::Contains(says));
    CHECK(!fs::exists(w.dir / "merged.json"));
  }
  // Another shard count; a model in two reports (shard 0 of another list holds m1, shard 1 of the whole list too).
  run(w.env + "graphrw run rules.json models/*.onnx --out-dir out --shard 0/1 --report whole.json");
  CHECK_THAT(run(w.env + "graphrw report merge whole.json r0.json").err,
             Catch::Contains("report merge: r0.json: shard 0/3, the others of 1"));
  run(w.env + "graphrw run rules.json models/m1.onnx models/m2.onnx --out-dir out3 --shard 0/3 --report y0.json");
  auto twice = run(w.env + "graphrw report merge y0.json r1.json r2.json");
  CHECK(twice.status == 3);
  CHECK_THAT(twice.err, Catch::Contains("report merge: r1.json: model models/m1.onnx is in y0.json too"));
  // All there: the merged report on stdout, exit 3 for the broken model.
  auto ok = run(w.env + "graphrw report merge r2.json r0.json r1.json");
  CHECK(ok.status == 3);
  CHECK(nlohmann::json::parse(ok.out)["summary"]["models"] == 7);
}
