#include "ort.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "support.h"

namespace fs = std::filesystem;

namespace graphrw::test {
namespace {

const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += kB64[(v >> (6 * k)) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string unbase64(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::strchr(kB64, c);
    if (c == '=' || !p || c == '\0') continue;
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

const char* ortType(int32_t t) {
  switch (t) {
    case 1:
      return "float32";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 4:
      return "uint16";
    case 5:
      return "int16";
    case 6:
      return "int32";
    case 7:
      return "int64";
    case 8:
      return "string";
    case 9:
      return "bool";
    case 10:
      return "float16";
    case 11:
      return "float64";
    case 12:
      return "uint32";
    case 13:
      return "uint64";
    default:
      return nullptr;
  }
}

size_t width(int32_t t) {
  switch (t) {
    case 2:
    case 3:
    case 9:
      return 1;
    case 4:
    case 5:
    case 10:
    case 16:
      return 2;
    case 1:
    case 6:
    case 12:
      return 4;
    default:
      return 8;
  }
}

// A tensor's data as raw little-endian bytes, from raw_data or the typed fields.
std::string rawBytes(const onnx::TensorProto& t) {
  if (t.has_raw_data()) return t.raw_data();
  std::string out;
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  switch (t.data_type()) {
    case 1:
      for (float v : t.float_data()) put(&v, 4);
      break;
    case 11:
      for (double v : t.double_data()) put(&v, 8);
      break;
    case 7:
      for (int64_t v : t.int64_data()) put(&v, 8);
      break;
    case 12:
      for (uint64_t v : t.uint64_data()) {
        auto x = static_cast<uint32_t>(v);
        put(&x, 4);
      }
      break;
    case 13:
      for (uint64_t v : t.uint64_data()) put(&v, 8);
      break;
    case 6:
      for (int32_t v : t.int32_data()) put(&v, 4);
      break;
    default: {
      size_t w = width(t.data_type());
      for (int32_t v : t.int32_data()) put(&v, w);  // narrow types and float16 bits, little-endian
    }
  }
  return out;
}

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY) : std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

double element(const std::string& bytes, size_t i, int32_t t) {
  const char* p = bytes.data() + i * width(t);
  auto get = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  };
  switch (t) {
    case 1:
      return get(float{});
    case 2:
      return get(uint8_t{});
    case 3:
      return get(int8_t{});
    case 4:
      return get(uint16_t{});
    case 5:
      return get(int16_t{});
    case 6:
      return get(int32_t{});
    case 7:
      return get(int64_t{});
    case 9:
      return get(uint8_t{}) != 0;
    case 10: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return halfToDouble(h);
    }
    case 11:
      return get(double{});
    case 12:
      return get(uint32_t{});
    case 13:
      return get(uint64_t{});
    default:
      return NAN;
  }
}

std::string ortDir() { return GRAPHRW_ORT_DIR; }

}  // namespace

nlohmann::json ortCompare(const fs::path& a, const fs::path& b, double tol, int intMax) {
  // The harness is installed by .ci/bootstrap; a missing one fails, never skips.
  REQUIRE(fs::exists(fs::path(ortDir()) / "node_modules" / "onnxruntime-node"));
  auto r = run("node '" + ortDir() + "/ort.js' compare '" + a.string() + "' '" + b.string() + "' --tol " +
               std::to_string(tol) + " --int-max " + std::to_string(intMax));
  INFO(r.err);
  return nlohmann::json::parse(r.out);
}

std::vector<OrtResult> ortRun(const std::vector<OrtCase>& cases) {
  REQUIRE(fs::exists(fs::path(ortDir()) / "node_modules" / "onnxruntime-node"));
  TempDir dir;
  nlohmann::json request = nlohmann::json::array();
  for (const auto& c : cases) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& t : c.inputs) {
      const char* type = ortType(t.data_type());
      nlohmann::json in = {{"name", t.name()},
                           {"type", type ? type : "unsupported"},
                           {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}};
      if (t.data_type() == onnx::TensorProto::STRING)
        in["strings"] = std::vector<std::string>(t.string_data().begin(), t.string_data().end());
      else
        in["data"] = base64(rawBytes(t));
      inputs.push_back(in);
    }
    request.push_back({{"model", c.model.string()}, {"inputs", inputs}});
  }
  writeFile(dir / "request.json", request.dump());
  auto r = run("node '" + ortDir() + "/ort.js' batch '" + (dir / "request.json").string() + "' '" +
               (dir / "response.json").string() + "'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto response = nlohmann::json::parse(readFile(dir / "response.json"));
  std::vector<OrtResult> results;
  for (const auto& item : response) {
    OrtResult res;
    res.ok = item["ok"].get<bool>();
    if (!res.ok)
      res.error = item["error"].get<std::string>();
    else
      for (const auto& o : item["outputs"]) res.outputs.push_back(o);
    results.push_back(std::move(res));
  }
  return results;
}

std::string compareTensor(const nlohmann::json& actual, const onnx::TensorProto& expected, double rtol, double atol) {
  std::vector<int64_t> dims = actual["dims"].get<std::vector<int64_t>>();
  std::vector<int64_t> want(expected.dims().begin(), expected.dims().end());
  if (dims != want) return "dims differ";
  const char* type = ortType(expected.data_type());
  if (!type) return "unsupported expected type";
  if (actual["type"].get<std::string>() != type) return "type " + actual["type"].get<std::string>() + " vs " + type;
  if (expected.data_type() == onnx::TensorProto::STRING) {
    auto got = actual["strings"].get<std::vector<std::string>>();
    if (got.size() != static_cast<size_t>(expected.string_data_size())) return "sizes differ";
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != expected.string_data(static_cast<int>(i)))
        return "element " + std::to_string(i) + ": '" + got[i] + "' vs expected '" +
               expected.string_data(static_cast<int>(i)) + "'";
    return "";
  }
  std::string got = unbase64(actual["data"].get<std::string>());
  std::string exp = rawBytes(expected);
  size_t n = exp.size() / width(expected.data_type());
  if (got.size() != exp.size()) return "sizes differ";
  for (size_t i = 0; i < n; ++i) {
    double x = element(got, i, expected.data_type()), y = element(exp, i, expected.data_type());
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(x) && std::isinf(y) && (x > 0) == (y > 0)) continue;
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y)))
      return "element " + std::to_string(i) + ": " + std::to_string(x) + " vs expected " + std::to_string(y);
  }
  return "";
}

}  // namespace graphrw::test
