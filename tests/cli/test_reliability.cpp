// Outputs that never harm and hostile inputs that end in a clean one-line
// error: the binary on special files, conflicts, crafted models and rule
// files, a full disk and kill -9.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <csignal>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "models.h"
#include "support.h"

namespace fs = std::filesystem;
using graphrw::test::readFile;
using graphrw::test::run;
using graphrw::test::writeFile;

namespace {

std::string bin() { return graphrw::test::graphrwBin(); }
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }
size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

fs::path smallModel(const fs::path& dir) {
  auto proto = graphrw::test::parseModel(graphrw::test::kSmallModel);
  graphrw::test::toRawData(proto);
  graphrw::test::writeProto(proto, dir / "m.onnx");
  return dir / "m.onnx";
}

std::vector<std::string> tempFiles(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".graphrw-tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("outputs: -o writes through devices, FIFOs and symlinks, refuses folders, keeps modes",
          "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir.path());
  REQUIRE(run(bin() + " convert " + q(m) + " -o " + q(dir / "expected.onnx")).status == 0);
  const std::string expected = readFile(dir / "expected.onnx");

  auto devnull = run(bin() + " expand " + q(m) + " -o /dev/null");
  CHECK(devnull.status == 0);
  struct stat st;
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));

  fs::path fifo = dir / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto piped = run("cat " + q(fifo) + " > " + q(dir / "from-fifo.onnx") + " & " + bin() + " convert " + q(m) + " -o " +
                   q(fifo) + "; s=$?; wait; exit $s");
  CHECK(piped.status == 0);
  CHECK(readFile(dir / "from-fifo.onnx") == expected);
  CHECK(fs::is_fifo(fifo));

  writeFile(dir / "real.onnx", "old");
  fs::create_symlink("real.onnx", dir / "link.onnx");
  CHECK(run(bin() + " convert " + q(m) + " -o " + q(dir / "link.onnx")).status == 0);
  CHECK(fs::is_symlink(dir / "link.onnx"));
  CHECK(readFile(dir / "real.onnx") == expected);

  fs::create_directory(dir / "folder");
  auto folder = run(bin() + " convert " + q(m) + " -o " + q(dir / "folder"));
  CHECK(folder.status == 4);
  CHECK(lines(folder.err) == 1);
  CHECK_THAT(folder.err, Catch::Contains("is a folder"));

  writeFile(dir / "private.onnx", "old");
  fs::permissions(dir / "private.onnx", fs::perms::owner_read | fs::perms::owner_write);
  CHECK(run(bin() + " convert " + q(m) + " -o " + q(dir / "private.onnx")).status == 0);
  CHECK((fs::status(dir / "private.onnx").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));

  auto missing = run(bin() + " convert " + q(m) + " -o " + q(dir / "nodir" / "x.onnx"));
  CHECK(missing.status == 4);
  CHECK_THAT(missing.err,
             Catch::Contains("the folder") && Catch::Contains("nodir") && Catch::Contains("does not exist"));
  CHECK(tempFiles(dir.path()).empty());
}

TEST_CASE("usage conflicts are found before anything is read or written", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir.path());
  auto both = run(bin() + " expand " + q(m) + " -o - --report -");
  CHECK(both.status == 2);
  CHECK(both.out.empty());
  CHECK_THAT(both.err, Catch::Contains("--report -"));

  // --out-dir appears only with the first model written.
  writeFile(dir / "broken.onnx", "not a model");
  writeFile(dir / "r.json", R"({"version": 1, "passes": [{"pass": "expand"}]})");
  auto failing =
      run(bin() + " run " + q(dir / "r.json") + " " + q(dir / "broken.onnx") + " --out-dir " + q(dir / "out"));
  CHECK(failing.status == 3);
  CHECK_FALSE(fs::exists(dir / "out"));

  // The same-name check looks at every input before sharding.
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::copy_file(m, dir / "a" / "model.onnx");
  fs::copy_file(m, dir / "b" / "model.onnx");
  for (const char* shard : {"0/2", "1/2"}) {
    auto r = run(bin() + " run " + q(dir / "r.json") + " " + q(dir / "a" / "model.onnx") + " " +
                 q(dir / "b" / "model.onnx") + " --out-dir " + q(dir / "out") + " --shard " + shard);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("would collide"));
  }
  auto huge = run(bin() + " run " + q(dir / "r.json") + " " + q(m) + " " + q(dir / "a" / "model.onnx") + " --out-dir " +
                  q(dir / "out") + " --shard 1/18446744073709551616");
  CHECK(huge.status == 2);
  CHECK_THAT(huge.err, Catch::Contains("--shard"));
  auto every = run(bin() + " checkpoint " + q(m) + " --after op_type=MatMul --every 99999999999999999999999");
  CHECK(every.status == 2);
  CHECK_THAT(every.err, Catch::Contains("--every"));
}

TEST_CASE("an external data file never replaces a model, and a failed write leaves the old data",
          "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir.path());
  const std::string input = readFile(m);
  auto ontoInput =
      run(bin() + " convert " + q(m) + " -o " + q(dir / "o.onnx") + " --external-data m.onnx --size-threshold 0");
  CHECK(ontoInput.status == 2);
  CHECK_THAT(ontoInput.err, Catch::Contains("would replace the input"));
  CHECK(readFile(m) == input);
  auto ontoOutput =
      run(bin() + " convert " + q(m) + " -o " + q(dir / "o.onnx") + " --external-data o.onnx --size-threshold 0");
  CHECK(ontoOutput.status == 2);
  CHECK_FALSE(fs::exists(dir / "o.onnx"));

  writeFile(dir / "w.data", "old data");
  fs::create_directory(dir / "folder.onnx");
  auto failed =
      run(bin() + " convert " + q(m) + " -o " + q(dir / "folder.onnx") + " --external-data w.data --size-threshold 0");
  CHECK(failed.status == 4);
  CHECK(readFile(dir / "w.data") == "old data");
  CHECK(tempFiles(dir.path()).empty());
}

TEST_CASE("call cycles are refused at load, naming the functions", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto self = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[2] X) => (float[2] Y) { Y = f.A(X) }
<domain: "f", opset_import: ["" : 17, "f" : 1]>
A (x) => (y) { y = f.B(x) }
<domain: "f", opset_import: ["" : 17, "f" : 1]>
B (x) => (y) { y = f.A(x) }
)");
  graphrw::test::writeProto(self, dir / "cycle.onnx");
  for (const char* cmd : {"convert", "validate", "expand", "inspect"}) {
    auto r = run(bin() + " " + cmd + " " + q(dir / "cycle.onnx") + " -o " + q(dir / "out.onnx"));
    if (std::string(cmd) == "validate" || std::string(cmd) == "inspect")
      r = run(bin() + " " + cmd + " " + q(dir / "cycle.onnx"));
    INFO(cmd);
    CHECK(r.status == 3);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains("call cycle: f::A -> f::B -> f::A"));
  }
}

TEST_CASE("expand: a long chain of functions inlines, an exponential one is refused before any work",
          "[cli][reliability]") {
  graphrw::test::TempDir dir;
  const int n = 4200;
  std::string chain =
      "<ir_version: 8, opset_import: [\"\" : 17, \"f\" : 1]>\nmain (float[2] X) => (float[2] Y) { Y = f.F0(X) }\n";
  for (int i = 0; i < n; ++i)
    chain += "<domain: \"f\", opset_import: [\"\" : 17, \"f\" : 1]>\nF" + std::to_string(i) +
             " (x) => (y) { y = " + (i + 1 < n ? "f.F" + std::to_string(i + 1) + "(x)" : std::string("Relu(x)")) +
             " }\n";
  graphrw::test::writeProto(graphrw::test::parseModel(chain), dir / "chain.onnx");
  auto r = run(bin() + " expand " + q(dir / "chain.onnx") + " -o " + q(dir / "flat.onnx") + " --report " +
               q(dir / "r.json"));
  REQUIRE(r.status == 0);
  auto report = nlohmann::json::parse(readFile(dir / "r.json"));
  CHECK(report["passes"][0]["functions_removed"].size() == n);
  // validate never recurses without bound: past its depth limit ONNX's inference is not run, and says so.
  auto valid = run(bin() + " validate " + q(dir / "chain.onnx"));
  CHECK(valid.status == 1);
  CHECK_THAT(valid.out, Catch::Contains("nest 4200 deep") && Catch::Contains("not run"));
  auto flatValid = run(bin() + " validate " + q(dir / "flat.onnx"));
  CHECK(flatValid.status == 0);
  auto flat = graphrw::test::readProto(dir / "flat.onnx");
  CHECK(flat.graph().node_size() == 1);
  CHECK(flat.graph().node(0).op_type() == "Relu");

  // Each function calls the next twice: 2^40 nodes once inlined.
  std::string bomb =
      "<ir_version: 8, opset_import: [\"\" : 17, \"f\" : 1]>\nmain (float[2] X) => (float[2] Y) { Y = f.G0(X) }\n";
  for (int i = 0; i < 40; ++i)
    bomb += "<domain: \"f\", opset_import: [\"\" : 17, \"f\" : 1]>\nG" + std::to_string(i) + " (x) => (y) { " +
            (i + 1 < 40 ? "t = f.G" + std::to_string(i + 1) + "(x)\n y = f.G" + std::to_string(i + 1) + "(t)"
                        : std::string("t = Relu(x)\n y = Relu(t)")) +
            " }\n";
  graphrw::test::writeProto(graphrw::test::parseModel(bomb), dir / "bomb.onnx");
  auto refused = run(bin() + " expand " + q(dir / "bomb.onnx") + " -o " + q(dir / "out.onnx"));
  CHECK(refused.status == 2);
  CHECK(lines(refused.err) == 1);
  CHECK_THAT(refused.err, Catch::Contains("1099511627776 nodes") && Catch::Contains("--max-nodes"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
  auto limited = run(bin() + " expand " + q(dir / "chain.onnx") + " --max-nodes 0 -o " + q(dir / "out.onnx"));
  CHECK(limited.status == 2);  // the schema's minimum
}

TEST_CASE("hostile rule files and template files end in one-line rule errors", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir.path());
  auto rule = [&](const std::string& text) {
    writeFile(dir / "r.json", text);
    return run(bin() + " run " + q(dir / "r.json") + " " + q(m) + " -o " + q(dir / "out.onnx"));
  };
  auto deep = rule(std::string(100000, '[') + std::string(100000, ']'));
  CHECK(deep.status == 2);
  CHECK_THAT(deep.err, Catch::Contains("nested more than"));
  auto big = rule(R"({"version": 1e400, "passes": []})");
  CHECK(big.status == 2);
  CHECK(lines(big.err) == 1);
  auto digits = rule("{\"version\": " + std::string(5000, '9') + ", \"passes\": []}");
  CHECK(digits.status == 2);
  CHECK(lines(digits.err) == 1);
  auto huge =
      rule(R"({"version": 1, "passes": [{"pass": "checkpoint", "after": {"op_type": "MatMul"}, "every": 1e300}]})");
  CHECK(huge.status == 2);
  for (const char* file : {"/dev/zero", "/etc/passwd"}) {
    auto t = rule(std::string(R"({"version": 1, "passes": [{"pass": "replace", "replacements": [)"
                              R"({"select": {"op_type": "MatMul"}, "template_file": ")") +
                  file + "\"}]}]}");
    INFO(file);
    CHECK(t.status == 2);
    CHECK(lines(t.err) == 1);
    CHECK_THAT(t.err, !Catch::Contains("root:"));
  }
  auto notRules = run(bin() + " run /dev/zero " + q(m));
  CHECK(notRules.status == 2);
  CHECK_THAT(notRules.err, Catch::Contains("not a regular file"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
}

TEST_CASE("a tensor whose dimensions overflow is bad input, not undefined behaviour", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto proto = graphrw::test::parseModel(graphrw::test::kSmallModel);
  auto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->clear_dims();
  w->add_dims(int64_t{1} << 62);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("w.bin");
  writeFile(dir / "w.bin", std::string(64, '\0'));
  graphrw::test::writeProto(proto, dir / "big.onnx");
  auto r = run(bin() + " inspect " + q(dir / "big.onnx"));
  CHECK(r.status == 3);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains("2^63"));
}

TEST_CASE("a later run removes the temporary files of a killed one", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir.path());
  // A pid above the kernel's pid_max never runs.
  writeFile(dir / ".out.onnx.graphrw-tmp-4194305-abcdef", "partial");
  writeFile(dir / ".keep.graphrw-tmp-1-abcdef", "init is alive");
  CHECK(run(bin() + " convert " + q(m) + " -o " + q(dir / "out.onnx")).status == 0);
  CHECK_FALSE(fs::exists(dir / ".out.onnx.graphrw-tmp-4194305-abcdef"));
  CHECK(fs::exists(dir / ".keep.graphrw-tmp-1-abcdef"));
}

TEST_CASE("a full disk: a clear error, nothing partial, the old output intact", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  fs::path small = dir / "small-disk";
  fs::create_directory(small);
  // Needs root (as CI runs): a 64 KiB tmpfs the BERT-style example does not fit in.
  REQUIRE(mount("tmpfs", small.c_str(), "tmpfs", 0, "size=64k") == 0);
  struct Unmount {
    fs::path p;
    ~Unmount() { umount(p.c_str()); }
  } unmount{small};
  writeFile(small / "out.onnx", "old");
  auto r = run(bin() + " expand " + q(fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "bert-tiny.onnx") + " -o " +
               q(small / "out.onnx"));
  CHECK(r.status == 4);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains("disk full"));
  CHECK(readFile(small / "out.onnx") == "old");
  CHECK(tempFiles(small).empty());

  // A read-only folder is named as such.
  fs::path readOnly = dir / "read-only";
  fs::create_directory(readOnly);
  REQUIRE(mount("tmpfs", readOnly.c_str(), "tmpfs", MS_RDONLY, "size=64k") == 0);
  Unmount unmountReadOnly{readOnly};
  auto ro = run(bin() + " convert " + q(fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "bert-tiny.onnx") + " -o " +
                q(readOnly / "out.onnx"));
  CHECK(ro.status == 4);
  CHECK(lines(ro.err) == 1);
  CHECK_THAT(ro.err, Catch::Contains("is not writable") && Catch::Contains("read-only"));
}

TEST_CASE("kill -9 at any point leaves the old output or the complete new one", "[cli][reliability]") {
  // GRAPHRW_FAULT kills the process (SIGKILL) at an exact point of the write:
  // after 1 byte, half and all of the output's bytes, just before the rename
  // and just after it. Every point is reached on every machine, however fast.
  graphrw::test::TempDir dir;
  auto gen = run(std::string(GRAPHRW_GEN_BERT) + " -o " + q(dir / "big.onnx") +
                 " --layers 2 --hidden 256 --intermediate 1024 --vocab 2000");
  REQUIRE(gen.status == 0);
  const std::string old = "previous output";
  for (const char* command : {"expand", "convert"}) {
    REQUIRE(run(bin() + " " + command + " " + q(dir / "big.onnx") + " -o " + q(dir / "expected.onnx")).status == 0);
    const std::string expected = readFile(dir / "expected.onnx");
    const size_t size = expected.size();
    for (std::string point : {std::string("write:1"), "write:" + std::to_string(size / 2),
                              "write:" + std::to_string(size), std::string("rename"), std::string("renamed")}) {
      INFO(command << " killed at " << point);
      writeFile(dir / "out.onnx", old);
      auto r = run("GRAPHRW_FAULT=" + point + " " + bin() + " " + command + " " + q(dir / "big.onnx") + " -o " +
                   q(dir / "out.onnx"));
      CHECK(r.status == 128 + SIGKILL);  // the point was reached: nothing finished normally
      std::string now = readFile(dir / "out.onnx");
      if (point == "renamed") {
        CHECK(now == expected);
        CHECK(tempFiles(dir.path()).empty());
      } else {
        CHECK(now == old);
        // The temporary file holds what was written when the process died.
        auto temps = tempFiles(dir.path());
        REQUIRE(temps.size() == 1);
        size_t partial = fs::file_size(temps[0]);
        if (point.starts_with("write:")) CHECK(partial >= std::min<size_t>(std::stoull(point.substr(6)), size));
        CHECK(partial <= size);
        if (point == "rename") CHECK(readFile(temps[0]) == expected);
        fs::remove(temps[0]);
      }
    }
  }
  // What a killed run leaves behind, the next run in the folder cleans.
  writeFile(dir / "out.onnx", old);
  REQUIRE(
      run("GRAPHRW_FAULT=write:1 " + bin() + " convert " + q(dir / "big.onnx") + " -o " + q(dir / "out.onnx")).status ==
      128 + SIGKILL);
  REQUIRE(tempFiles(dir.path()).size() == 1);
  REQUIRE(run(bin() + " convert " + q(dir / "expected.onnx") + " -o " + q(dir / "again.onnx")).status == 0);
  CHECK(tempFiles(dir.path()).empty());
  CHECK(readFile(dir / "out.onnx") == old);
}

TEST_CASE("names from a model cannot split or forge message lines", "[cli][reliability]") {
  graphrw::test::TempDir dir;
  auto proto = graphrw::test::parseModel(graphrw::test::kSmallModel);
  // A node reading a value nobody produces, named with a newline and an ANSI escape.
  auto* n = proto.mutable_graph()->add_node();
  n->set_op_type("Relu");
  n->add_input("evil\ngraphrw: info: all good\x1b[0m");
  n->add_output("z");
  graphrw::test::writeProto(proto, dir / "evil.onnx");
  auto r = run(bin() + " convert " + q(dir / "evil.onnx") + " -o " + q(dir / "out.onnx"));
  CHECK(r.status == 3);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains("evil\\x0agraphrw: info: all good\\x1b[0m"));
}
