// Timestamp precision of written pcap files, read back through the capture reader.
#include "capture/capture_writer.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "capture/capture_reader.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::capture::capture_writer_test {
namespace {

std::vector<std::uint32_t> fractions_written(TimestampPrecision precision) {
  test::TempDir dir;
  const std::string path = (dir / "t.pcap").string();
  const std::vector<std::byte> frame(60, std::byte{1});
  CaptureWriter w;
  EXPECT_TRUE(w.open(path, LinkType::Ethernet, 65535, precision)) << w.error();
  EXPECT_TRUE(w.write_ns(1700000000, 123456789, frame));
  EXPECT_TRUE(w.write(1700000001, 654321, frame));
  EXPECT_TRUE(w.close()) << w.error();
  CaptureReader r;
  EXPECT_TRUE(r.open(path)) << r.error();
  std::vector<std::uint32_t> out;
  CaptureRecord rec;
  while (r.next(rec) == ReadStatus::Record) out.push_back(rec.ts_nsec);
  return out;
}

TEST(CaptureWriter, NanosecondFilesKeepSubMicrosecondTimestamps) {
  EXPECT_EQ(fractions_written(TimestampPrecision::Nano), (std::vector<std::uint32_t>{123456789, 654321000}));
}

TEST(CaptureWriter, MicrosecondFilesTruncateNanosecondTimestamps) {
  EXPECT_EQ(fractions_written(TimestampPrecision::Micro), (std::vector<std::uint32_t>{123456000, 654321000}));
}

}  // namespace
}  // namespace roce::capture::capture_writer_test
