#include "driver/compare.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "io/loader.h"
#include "io/writer.h"
#include "pass/pass.h"
#include "support/error.h"
#include "support/json_text.h"
#include "support/text_file.h"

extern char** environ;

namespace fs = std::filesystem;

namespace graphrw {
namespace {

const char* kRunner =
#include "compare_runner.js.inc"
    ;

// A private temporary folder, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ =
        fs::temp_directory_path() / ("graphrw-compare-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

onnx::ModelProto readModelProto(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  onnx::ModelProto m;
  if (!in || !m.ParseFromIstream(&in)) fail(ExitCode::Internal, "cannot read back " + file.string());
  return m;
}

// Writes standard-ONNX nodes for the ai.graphcore ops of one graph (and its subgraphs).
class Mapper {
 public:
  Mapper(onnx::GraphProto& g, int64_t opset) : g_(g), opset_(opset) {}

  void run() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    out_ = &nodes;
    for (auto& n : *g_.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) Mapper(*a.mutable_g(), opset_).run();
        for (auto& sub : *a.mutable_graphs()) Mapper(sub, opset_).run();
      }
      if (n.domain() != "ai.graphcore") {
        *nodes.Add() = n;
        continue;
      }
      map(n);
    }
    g_.mutable_node()->Swap(&nodes);
  }

 private:
  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  std::string label(const onnx::NodeProto& n) {
    return "node '" + (n.name().empty() ? n.output_size() ? n.output(0) : std::string("?") : n.name()) +
           "' (ai.graphcore::" + n.op_type() + ")";
  }
  std::string fresh(const std::string& what) { return "graphrw_std/" + std::to_string(counter_++) + "/" + what; }
  std::string scalar(float v) {
    auto* t = g_.add_initializer();
    t->set_name(fresh("c"));
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
    return t->name();
  }
  std::string ints0(int64_t v) {  // an int64 scalar
    auto* t = g_.add_initializer();
    t->set_name(fresh("c"));
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(v);
    return t->name();
  }
  std::string ints(const std::vector<int64_t>& v) {
    auto* t = g_.add_initializer();
    t->set_name(fresh("shape"));
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return t->name();
  }
  onnx::NodeProto* op(const std::string& type, std::vector<std::string> in, const std::string& out) {
    auto* x = out_->Add();
    x->set_op_type(type);
    for (auto& i : in) x->add_input(i);
    x->add_output(out);
    return x;
  }
  void axes(onnx::NodeProto* n, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  bool read(const std::string& value) {
    for (const auto& n : g_.node())
      for (const auto& in : n.input())
        if (in == value) return true;
    for (const auto& o : g_.output())
      if (o.name() == value) return true;
    return false;
  }

  void map(const onnx::NodeProto& n) {
    const std::string& type = n.op_type();
    const std::string x = n.input_size() ? n.input(0) : "";
    if (type == "Nop" || type == "Detach") {
      op("Identity", {x}, n.output(0));
    } else if (type == "Scale") {
      const auto* s = attr(n, "scale");
      op("Mul", {x, scalar(s ? s->f() : 1.0f)}, n.output(0));
    } else if (type == "Swish") {
      std::string sig = fresh("sigmoid");
      op("Sigmoid", {x}, sig);
      op("Mul", {x, sig}, n.output(0));
    } else if (type == "GeluErf" || type == "Gelu") {
      // GeluErf: x/2 (1 + erf(x / sqrt 2)); Gelu: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      std::string e = fresh("e");
      if (type == "GeluErf") {
        std::string d = fresh("d");
        op("Div", {x, scalar(1.41421356237f)}, d);
        op("Erf", {d}, e);
      } else {
        std::string x2 = fresh("x2"), x3 = fresh("x3"), cx3 = fresh("cx3"), inner = fresh("inner"), d = fresh("d");
        op("Mul", {x, x}, x2);
        op("Mul", {x2, x}, x3);
        op("Mul", {x3, scalar(0.044715f)}, cx3);
        op("Add", {x, cx3}, inner);
        op("Mul", {inner, scalar(0.7978845608f)}, d);
        op("Tanh", {d}, e);
      }
      std::string a = fresh("a"), m = fresh("m");
      op("Add", {e, scalar(1.0f)}, a);
      op("Mul", {x, a}, m);
      op("Mul", {m, scalar(0.5f)}, n.output(0));
    } else if (type == "GroupNormalization") {
      groupNorm(n);
    } else {
      fail(ExitCode::Unsupported,
           label(n) + ": graphrw compare has no standard ONNX definition for ai.graphcore::" + type);
    }
  }

  // y = (x - mean) / sqrt(var + eps) * scale + bias, statistics over each
  // group of channels (dimension 1) of each sample; scale and bias per channel.
  void groupNorm(const onnx::NodeProto& n) {
    if (opset_ >= 18) fail(ExitCode::Unsupported, label(n) + ": ai.onnx opset 18 or later is not supported here");
    for (int o = 1; o < n.output_size(); ++o)
      if (!n.output(o).empty() && read(n.output(o)))
        fail(ExitCode::Unsupported,
             label(n) +
                 ": its mean or inverse standard deviation output is read; only the normalised output is defined here");
    const auto* g = attr(n, "num_groups");
    const auto* eps = attr(n, "epsilon");
    int64_t groups = g ? g->i() : 1;
    std::string grouped = fresh("grouped"), mean = fresh("mean"), d = fresh("d"), sq = fresh("sq"), var = fresh("var"),
                ve = fresh("ve"), sd = fresh("sd"), norm = fresh("norm"), shape = fresh("shape"), back = fresh("back"),
                scale = fresh("scale"), bias = fresh("bias"), scaled = fresh("scaled"), rank = fresh("rank"),
                extra = fresh("extra"), extra1 = fresh("extra1"), ones = fresh("ones"),
                perChannel = fresh("per_channel");
    op("Reshape", {n.input(0), ints({0, groups, -1})}, grouped);
    axes(op("ReduceMean", {grouped}, mean), {2});
    op("Sub", {grouped, mean}, d);
    op("Mul", {d, d}, sq);
    axes(op("ReduceMean", {sq}, var), {2});
    op("Add", {var, scalar(eps ? eps->f() : 1e-5f)}, ve);
    op("Sqrt", {ve}, sd);
    op("Div", {d, sd}, norm);
    op("Shape", {n.input(0)}, shape);
    op("Reshape", {norm, shape}, back);
    // Scale and bias as [C, 1, ..., 1] (rank - 1 dimensions) from the input's rank at run time.
    op("Size", {shape}, rank);
    op("Sub", {rank, ints0(2)}, extra);
    op("Reshape", {extra, ints({1})}, extra1);
    auto* c = op("ConstantOfShape", {extra1}, ones);
    auto* value = c->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    value->mutable_t()->add_dims(1);
    value->mutable_t()->add_int64_data(1);
    auto* cat = op("Concat", {ints({-1}), ones}, perChannel);
    auto* axis = cat->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    op("Reshape", {n.input(1), perChannel}, scale);
    op("Reshape", {n.input(2), perChannel}, bias);
    op("Mul", {back, scale}, scaled);
    op("Add", {scaled, bias}, n.output(0));
  }

  onnx::GraphProto& g_;
  int64_t opset_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto>* out_ = nullptr;
  size_t counter_ = 0;
};

// Removes graphrw's and PopART's `__` attributes (ONNX Runtime's fusions copy
// them onto its own ops, FusedGemm, and then refuse them) from a graph and its subgraphs.
void stripPrivateAttributes(onnx::GraphProto& g) {
  for (auto& n : *g.mutable_node()) {
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i) {
      auto& a = *attrs->Mutable(i);
      if (a.name().starts_with("__")) {
        attrs->DeleteSubrange(i--, 1);
        continue;
      }
      if (a.has_g()) stripPrivateAttributes(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) stripPrivateAttributes(sub);
    }
  }
}

// Each input of the model: its dimensions, a number or a symbolic name (null: unknown).
nlohmann::json inputShapes(const ir::Model& m) {
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& in : m.graph().inputs()) {
    if (in.value->isInitializer()) continue;
    const onnx::TypeProto* t = in.value->type();
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) continue;
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& d : t->tensor_type().shape().dim())
      dims.push_back(d.has_dim_value()   ? nlohmann::json(d.dim_value())
                     : d.has_dim_param() ? nlohmann::json(d.dim_param())
                                         : nlohmann::json());
    shapes[in.value->name()] = dims;
  }
  return shapes;
}

// Runs node with the runner; returns its JSON.
nlohmann::json runNode(const std::string& ortDir, const ScratchDir& dir, const fs::path& a, const fs::path& b,
                       const CompareOptions& options, const nlohmann::json& twin) {
  {
    std::ofstream(dir / "runner.js") << kRunner;
    nlohmann::json ranges = nlohmann::json::object(), shapes = nlohmann::json::object();
    for (const auto& [name, r] : options.valRanges) ranges[name] = {r.first, r.second};
    for (const auto& [name, dims] : options.shapes) shapes[name] = dims;
    nlohmann::json o = {{"rtol", options.rtol},
                        {"atol", options.atol},
                        {"seed", options.seed},
                        {"intMax", options.intMax},
                        {"inputs", options.inputs},
                        {"dims", options.dims},
                        {"shapes", shapes},
                        {"valRanges", ranges},
                        {"valRange", {options.valRange.first, options.valRange.second}},
                        {"equalNan", options.equalNan},
                        {"twin", twin}};
    std::ofstream(dir / "options.json") << o.dump();
  }
  std::string out = (dir / "result.json").string(), err = (dir / "stderr.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string runner = (dir / "runner.js").string(), optionsFile = (dir / "options.json").string();
  std::string as = a.string(), bs = b.string();
  std::vector<char*> argv = {const_cast<char*>("node"), runner.data(), as.data(), bs.data(),
                             optionsFile.data(),        nullptr};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with("NODE_PATH=")) env.emplace_back(*e);
  env.push_back("NODE_PATH=" + (fs::path(ortDir) / "node_modules").string());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "node", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) usageError("graphrw compare needs Node.js to run ONNX Runtime: apt-get install nodejs");
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const std::exception&) {
    std::ifstream e(err);
    std::string first;
    std::getline(e, first);
    fail(ExitCode::Internal, "ONNX Runtime's runner gave no result (" + first + ")");
  }
  if (j.contains("error")) fail(ExitCode::BadInput, "ONNX Runtime: " + j["error"].get<std::string>());
  return j;
}

}  // namespace

onnx::ModelProto standardOnnx(ir::Model& model) {
  ScratchDir dir;
  WriteOptions embed;
  embed.external = ExternalMode::Embed;
  writeModel(model, (dir / "original.onnx").string(), embed);
  auto copy = loadModel((dir / "original.onnx").string());  // the caller's model stays as it is
  PassManager pm;
  // Calls and local functions inlined, by the registered expand pass with its defaults.
  pm.add(buildPass(*findPass("expand"), nlohmann::json{{"pass", "expand"}}, RuleContext{}, ""));
  pm.run(*copy);
  writeModel(*copy, (dir / "expanded.onnx").string(), embed);
  onnx::ModelProto m = readModelProto(dir / "expanded.onnx");
  int64_t opset = 0;
  for (const auto& o : m.opset_import())
    if (ir::isDefaultDomain(o.domain())) opset = o.version();
  Mapper(*m.mutable_graph(), opset).run();
  for (int i = 0; i < m.opset_import_size(); ++i)
    if (m.opset_import(i).domain() == "ai.graphcore") m.mutable_opset_import()->DeleteSubrange(i--, 1);
  stripPrivateAttributes(*m.mutable_graph());
  return m;
}

bool runsAsIs(const ir::Model& model) {
  bool asIs = true;
  model.walkGraphs([&](const ir::Graph& g) {
    for (const auto& n : g.nodes()) {
      if (n->domain() == "ai.graphcore") asIs = false;
      for (const auto& a : n->attributes())
        if (a.name().starts_with("__")) asIs = false;
    }
  });
  return asIs;
}

std::string findOnnxRuntime() {
  auto has = [](const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "node_modules" / "onnxruntime-node" / "package.json", ec);
  };
  if (const char* env = std::getenv("GRAPHRW_ORT_DIR")) {
    if (has(env)) return env;
    usageError(std::string("GRAPHRW_ORT_DIR=") + env + " holds no node_modules/onnxruntime-node");
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  // Beside an installed graphrw: PREFIX/lib/graphrw (the binary is PREFIX/bin/graphrw).
  if (fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec)
    candidates.push_back(self.parent_path().parent_path() / "lib" / "graphrw");
  for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
    candidates.push_back(p);
    if (p == p.root_path()) break;
  }
  candidates.emplace_back("/usr/local/lib");
  candidates.emplace_back("/usr/lib");
  for (const auto& c : candidates)
    if (has(c)) return c.string();
  usageError(
      "graphrw compare needs ONNX Runtime for Node.js: run `npm install --ignore-scripts onnxruntime-node@1.30.0` "
      "in a folder and set GRAPHRW_ORT_DIR to it (or `npm install -g --ignore-scripts onnxruntime-node@1.30.0`)");
}

nlohmann::json compareModels(CompareModel a, CompareModel b, const CompareOptions& options) {
  std::string ort = findOnnxRuntime();
  ScratchDir dir;
  for (const auto& [name, file] : options.inputs) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) usageError("--input " + name + "=" + file + ": not a file");
  }
  CompareOptions resolved = options;
  for (auto& [name, file] : resolved.inputs) file = fs::absolute(file).string();
  nlohmann::json twin = inputShapes(*b.model);
  // ONNX Runtime reads a model's own file when nothing needs mapping;
  // otherwise a standard-ONNX copy. Either way graphrw's IR is released
  // before ONNX Runtime starts, so only one side's session is alive at a time.
  nlohmann::json how;
  auto side = [&](CompareModel& m, const std::string& copy) -> fs::path {
    fs::path file;
    bool asIs = m.file != "-" && runsAsIs(*m.model);
    how[copy.substr(0, 1)] = asIs ? "file" : "standard ONNX copy";
    if (asIs) {
      file = fs::absolute(m.file);
    } else {
      onnx::ModelProto p = standardOnnx(*m.model);
      std::ofstream out(dir / copy, std::ios::binary);
      if (!p.SerializeToOstream(&out)) fail(ExitCode::OutputFailed, "cannot write a temporary model");
      file = dir / copy;
    }
    m.model.reset();
    return file;
  };
  fs::path fileA = side(a, "a.onnx"), fileB = side(b, "b.onnx");
  auto result = runNode(ort, dir, fileA, fileB, resolved, twin);
  result["run"] = how;
  return result;
}

std::string renderComparison(const nlohmann::json& result, const CompareOptions& compareOptions) {
  std::ostringstream os;
  for (const auto& in : result["inputs"]) {
    std::string dims;
    for (const auto& d : in["dims"]) dims += (dims.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
    os << "input  " << escapeControl(in["name"].get<std::string>()) << ": " << in["type"].get<std::string>() << "["
       << dims << "] " << escapeControl(in["from"].get<std::string>())
       << (in["from"] == "random" ? " (seed " + std::to_string(compareOptions.seed) + ")" : std::string()) << "\n";
  }
  if (!result["dims_set_to_1"].empty()) {
    std::string names;
    for (const auto& d : result["dims_set_to_1"])
      names += (names.empty() ? "" : ", ") + escapeControl(d.get<std::string>());
    os << "dims   " << names << " set to 1 (--dim NAME=N to choose)\n";
  }
  for (const auto& out : result["outputs"]) {
    os << "output " << escapeControl(out["name"].get<std::string>()) << ": ";
    if (out.contains("problem")) {
      os << escapeControl(out["problem"].get<std::string>()) << "\n";
      continue;
    }
    auto number = [](const nlohmann::json& v) {
      if (v.is_string()) return v.get<std::string>();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g", v.get<double>());
      return std::string(buf);
    };
    os << out["type"].get<std::string>() << ", max abs diff " << number(out["max_abs"]) << " (mean "
       << number(out["mean_abs"]) << "), max rel diff " << number(out["max_rel"]) << " (mean "
       << number(out["mean_rel"]) << ")" << (out["within"].get<bool>() ? ": within" : ": OUTSIDE") << " tolerance\n";
    const auto& nan = out["nan"];
    const auto& inf = out["inf"];
    if (nan["a"] != 0 || nan["b"] != 0 || inf["a"] != 0 || inf["b"] != 0)
      os << "       NaN " << nan["a"].get<int64_t>() << " in A, " << nan["b"].get<int64_t>() << " in B; Inf "
         << inf["a"].get<int64_t>() << " in A, " << inf["b"].get<int64_t>() << " in B"
         << (compareOptions.equalNan ? " (--equal-nan)" : "") << "\n";
    if (out["mismatched"] != 0 && out["max_abs"] != 0) {
      std::string counts;
      for (const auto& c : out["histogram"]["counts"]) counts += " " + std::to_string(c.get<int64_t>());
      os << "       |A-B| in 10 bins over [0, " << number(out["histogram"]["max"]) << "]:" << counts << "\n";
    }
    if (out["mismatched"] != 0) {
      std::string index;
      for (const auto& i : out["worst"]["index"])
        index += (index.empty() ? "" : ",") + std::to_string(i.get<int64_t>());
      os << "       " << out["mismatched"].get<int64_t>() << " of " << out["elements"].get<int64_t>()
         << " elements outside; worst at [" << index << "]: A " << number(out["worst"]["a"]) << ", B "
         << number(out["worst"]["b"]) << "\n";
    }
  }
  char tol[64];
  std::snprintf(tol, sizeof tol, "rtol %g, atol %g", compareOptions.rtol, compareOptions.atol);
  os << (result["ok"].get<bool>() ? "same outputs within " : "outputs differ beyond ") << tol << "\n";
  return os.str();
}

}  // namespace graphrw
