#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

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
