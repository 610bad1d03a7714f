#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "io/file_copy.h"
#include "support.h"
#include "support/buffer.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::test;

namespace {

// Bytes that differ at every offset a misplaced copy could land on.
std::string noise(size_t n) {
  std::string s(n, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
  ~Fd() { close(fd); }
};

void put(int fd, const std::string& bytes) {
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
}

}  // namespace

TEST_CASE("the copier puts each range where the output stands, through its pipe, at any offsets", "[file_copy]") {
  TempDir dir;
  const std::string input = noise(5 * 1024 * 1024 + 321);
  writeFile(dir / "in", input);
  Fd in(open((dir / "in").c_str(), O_RDONLY));
  // A small piece (copy_file_range), pieces misaligned on both sides, one
  // aligned, one spanning many of the pipe's pieces, and writes between them.
  struct Range {
    uint64_t offset;
    size_t size;
  };
  auto prefix = GENERATE(as<size_t>{}, 0, 1, 4096, 9750);
  const Range ranges[] = {
      {17, 1000}, {9750, 3 * 1024 * 1024 + 5}, {0, 600 * 1024}, {4096, 300 * 1024}, {1, input.size() - 1}};
  Fd out(open((dir / "out").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  std::string expected = noise(prefix + 7).substr(7);
  put(out.fd, expected);
  FileCopier copier(out.fd, "out");
  for (const auto& r : ranges) {
    copier.copy(in.fd, r.offset, r.size, input.data() + r.offset);
    expected += input.substr(r.offset, r.size);
    put(out.fd, "<>");
    expected += "<>";
  }
  CHECK(copier.chunk() > 0);  // the splice path ran: a regular output, a pipe size granted
  REQUIRE(readFile(dir / "out") == expected);
}

TEST_CASE("the copier writes to a pipe without its own pipe", "[file_copy]") {
  TempDir dir;
  const std::string input = noise(2 * 1024 * 1024);
  writeFile(dir / "in", input);
  Fd in(open((dir / "in").c_str(), O_RDONLY));
  int p[2];
  REQUIRE(pipe(p) == 0);
  std::string got;
  std::thread reader([&] {
    char buf[65536];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
    close(p[0]);
  });
  {
    FileCopier copier(p[1], "<pipe>");
    copier.copy(in.fd, 123, input.size() - 123, input.data() + 123);
    CHECK(copier.chunk() == 0);
  }
  close(p[1]);
  reader.join();
  CHECK(got == input.substr(123));
}

TEST_CASE("the copier stops with an error when the input is shorter than the range", "[file_copy]") {
  TempDir dir;
  const std::string input = noise(1024 * 1024);
  writeFile(dir / "in", input);
  Fd in(open((dir / "in").c_str(), O_RDONLY));
  auto size = GENERATE(as<size_t>{}, 1000, 900 * 1024);  // copy_file_range's path and the pipe's
  Fd out(open((dir / "out").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  FileCopier copier(out.fd, "out.onnx");
  try {
    copier.copy(in.fd, input.size() - size / 2, size, nullptr);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::OutputFailed);
    CHECK(std::string(e.what()) == "out.onnx: the input file shrank while being copied");
  }
}

TEST_CASE("the copier falls back to writes for an output that refuses splice (O_APPEND)", "[file_copy]") {
  TempDir dir;
  const std::string input = noise(3 * 1024 * 1024);
  writeFile(dir / "in", input);
  Fd in(open((dir / "in").c_str(), O_RDONLY));
  writeFile(dir / "out", "head");
  Fd out(open((dir / "out").c_str(), O_WRONLY | O_APPEND));
  FileCopier copier(out.fd, "out");
  copier.copy(in.fd, 5, 2 * 1024 * 1024, input.data() + 5);
  CHECK(copier.chunk() == 0);  // the pipe was given up after the output refused it
  copier.copy(in.fd, 77, 1024 * 1024, input.data() + 77);
  CHECK(readFile(dir / "out") == "head" + input.substr(5, 2 * 1024 * 1024) + input.substr(77, 1024 * 1024));
}

TEST_CASE("pieces are written in order: small file pieces batched with their neighbours, large ones copied",
          "[file_copy]") {
  TempDir dir;
  const std::string input = noise(4 * 1024 * 1024 + 77);
  writeFile(dir / "in", input);
  auto mapped = Buffer::mapFile(dir / "in");
  auto filePiece = [&](uint64_t offset, size_t size) {
    wire::Piece p{mapped->data() + offset, size, mapped.get(), mapped->fileOffset() + offset};
    return p;
  };
  const std::string header = "header", big(8000, 'm');
  std::vector<wire::Piece> pieces;
  std::string expected;
  // Rows of a folded Concat (3 KiB from three places in turn, over 1 MiB: several
  // batches), a header between runs, a large piece, memory too large to batch.
  for (uint64_t row = 0; row < 600; ++row)
    for (uint64_t part : {0ull, 1000003ull, 2000029ull}) {
      pieces.push_back(filePiece(part + row * 3072, 3072));
      expected += input.substr(part + row * 3072, 3072);
    }
  pieces.push_back({header.data(), header.size()});
  expected += header;
  pieces.push_back(filePiece(5, 300 * 1024));
  expected += input.substr(5, 300 * 1024);
  pieces.push_back(filePiece(4 * 1024 * 1024, 77));
  expected += input.substr(4 * 1024 * 1024, 77);
  pieces.push_back({big.data(), big.size()});
  expected += big;
  Fd out(open((dir / "out").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  writePieces(out.fd, pieces, "out");
  CHECK(readFile(dir / "out") == expected);
}

TEST_CASE("small pieces of an input that shrank stop with an error, not a fault on its mapping", "[file_copy]") {
  TempDir dir;
  writeFile(dir / "in", noise(1024 * 1024));
  auto mapped = Buffer::mapFile(dir / "in");
  REQUIRE(truncate((dir / "in").c_str(), 100 * 1024) == 0);
  std::vector<wire::Piece> pieces = {
      {mapped->data() + 4096, 3072, mapped.get(), mapped->fileOffset() + 4096},
      {mapped->data() + 512 * 1024, 3072, mapped.get(), mapped->fileOffset() + 512 * 1024}};
  Fd out(open((dir / "out").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  try {
    writePieces(out.fd, pieces, "out.onnx");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::OutputFailed);
    CHECK(std::string(e.what()) == "out.onnx: the input file shrank while being copied");
  }
}
