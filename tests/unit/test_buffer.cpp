#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "support.h"
#include "support/buffer.h"
#include "support/wire.h"

using namespace graphrw;

namespace {

std::string pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  return s;
}

}  // namespace

TEST_CASE("spilled bytes live in a file, each from a page, and read back equal", "[buffer]") {
  std::string a = pattern(100000, 'a'), b = pattern(5000, 'b');
  Bytes sa = Buffer::spill(a), sb = Buffer::spill(b);
  REQUIRE(sa.owner);
  REQUIRE(sb.owner);
  CHECK(sa.view() == a);
  CHECK(sb.view() == b);
  // In a file (the writer copies them file to file), page-aligned, one after the other.
  CHECK(sa.owner->fd() >= 0);
  CHECK(sb.owner->fd() == sa.owner->fd());
  auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  CHECK(sa.owner->fileOffset() % page == 0);
  CHECK(sb.owner->fileOffset() % page == 0);
  CHECK(sb.owner->fileOffset() >= sa.owner->fileOffset() + a.size());
  // Read through the descriptor, at the buffer's own offset in the file.
  CHECK(sb.copy() == b);
  CHECK(sb.owner->equalAt(0, b.data(), b.size()));
  CHECK(sb.owner->equalAt(10, b.data() + 10, 100));
  CHECK_FALSE(sb.owner->equalAt(0, a.data(), 100));
  CHECK_FALSE(sb.owner->equalAt(b.size() - 10, b.data(), 20));  // past the end
  CHECK(Buffer::spill("").empty());

  // A batch spills for every model: the blocks of a payload no one holds go back.
  struct stat st {};
  int fd = sa.owner->fd();
  uint64_t at = sa.owner->fileOffset();
  REQUIRE(fstat(fd, &st) == 0);
  blkcnt_t before = st.st_blocks;
  sa = Bytes{};
  REQUIRE(fstat(fd, &st) == 0);
  CHECK(st.st_blocks < before);
  char byte = 1;
  REQUIRE(pread(fd, &byte, 1, static_cast<off_t>(at)) == 1);
  CHECK(byte == 0);  // a hole
  CHECK(sb.copy() == b);  // its neighbour is intact
}

TEST_CASE("a mapped file is compared and copied through its descriptor", "[buffer]") {
  test::TempDir dir;
  std::string content = pattern(300000, 'x');
  std::ofstream(dir / "f.bin", std::ios::binary) << content;
  auto buffer = Buffer::mapFile(dir / "f.bin");
  REQUIRE(buffer->fd() >= 0);
  CHECK(buffer->fileOffset() == 0);
  CHECK(buffer->equalAt(123456, content.data() + 123456, 70000));
  CHECK_FALSE(buffer->equalAt(123456, content.data(), 70000));
  CHECK_FALSE(buffer->equalAt(content.size() - 1, content.data(), 2));
  Bytes middle{buffer, buffer->data() + 1000, 200000};
  CHECK(middle.copy() == content.substr(1000, 200000));
  // Memory bytes hold the same through fromString.
  Bytes owned = Bytes::copyOf("hello");
  CHECK(owned.copy() == "hello");
  CHECK(owned.owner->equalAt(1, "ell", 3));
}

TEST_CASE("coalesce merges file pieces with equal neighbours, by file offset, spilled pieces too", "[buffer][wire]") {
  test::TempDir dir;
  std::string content = "HEADER" + pattern(50000, 'p') + "TRAILER";
  std::ofstream(dir / "f.bin", std::ios::binary) << content;
  auto file = Buffer::mapFile(dir / "f.bin");
  Bytes payload{file, file->data() + 6, 50000};
  std::vector<wire::Piece> pieces{{"HEADER", 6}, wire::payloadPiece(payload), {"TRAILER", 7}};
  auto merged = wire::coalesce(pieces);
  REQUIRE(merged.size() == 1);  // the whole file, as one kernel copy
  CHECK(merged[0].file == file.get());
  CHECK(merged[0].offset == 0);
  CHECK(merged[0].size == content.size());

  // A spilled payload: its piece names its place in the spill file; the
  // bytes before it in that file are not the header, so nothing merges.
  Buffer::spill(pattern(7000, 'q'));  // something before it in the spill file
  Bytes spilled = Buffer::spill(content.substr(6, 50000));
  auto piece = wire::payloadPiece(spilled);
  CHECK(piece.offset == spilled.owner->fileOffset());
  auto kept = wire::coalesce({{"HEADER", 6}, piece, {"OTHER", 5}});
  REQUIRE(kept.size() == 3);
  CHECK(kept[1].file == spilled.owner.get());
  CHECK(kept[1].offset == spilled.owner->fileOffset());
  CHECK(kept[1].size == 50000);
}

namespace {

// The resident size of the mapping that holds `p`, from /proc/self/smaps.
size_t residentKiB(const char* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  auto address = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2 && line.find(':') > line.find('-')) {
      inside = address >= from && address < to;
      continue;
    }
    size_t kib = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %zu kB", &kib) == 1) return kib;
  }
  FAIL("no mapping holds the address");
  return 0;
}

void touchAll(const Buffer& b) {
  volatile char sum = 0;
  for (size_t i = 0; i < b.size(); i += 4096) sum = static_cast<char>(sum + b.data()[i]);
}

}  // namespace

TEST_CASE("a mapped file lets passed pages go, on a second scan too", "[buffer]") {
  test::TempDir dir;
  auto path = dir.path() / "big.bin";
  constexpr size_t kSize = size_t{64} << 20;
  { std::ofstream(path, std::ios::binary) << pattern(kSize, 'a'); }
  auto buffer = Buffer::mapFile(path);
  REQUIRE(buffer->size() == kSize);
  const char* end = buffer->data() + kSize;
  for (int scan = 0; scan < 2; ++scan) {
    INFO("scan " << scan);
    // A scan from the start: the first call is far behind the last drop.
    buffer->releaseBefore(buffer->data() + 4096);
    touchAll(*buffer);
    CHECK(residentKiB(buffer->data()) > 60 * 1024);
    for (size_t at = 4 << 20; at <= kSize; at += 4 << 20) buffer->releaseBefore(buffer->data() + at);
    // All but the last step and its margin (at most 17 MiB) was let go.
    CHECK(residentKiB(buffer->data()) <= 17 * 1024);
  }
  // The views still read the file.
  CHECK(std::string_view(end - 5, 5) == std::string_view(pattern(kSize, 'a')).substr(kSize - 5));
}
