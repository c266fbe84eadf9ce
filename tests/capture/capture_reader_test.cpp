#include "capture/capture_reader.hpp"

#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <vector>

#include "capture/capture_writer.hpp"
#include "tests/support/pcap_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::capture::capture_reader_test {
namespace {

using test::append_record;
using test::pcap_file_header;

std::vector<std::byte> bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 31 + seed) & 0xFF);
  return v;
}

class CaptureReaderTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::vector<char>& content) {
    const auto p = dir_ / name;
    test::write_file(p, content.data(), content.size());
    return p.string();
  }
  test::TempDir dir_;
};

TEST_F(CaptureReaderTest, ReadsRecordsInOrderWithOneBasedIndexTimestampsAndLengths) {
  auto f = pcap_file_header(DLT_EN10MB);
  append_record(f, bytes(60, 1), 1700000000, 5);
  append_record(f, bytes(100, 2), 1700000001, 999999);
  CaptureReader r;
  ASSERT_TRUE(r.open(write("two.pcap", f))) << r.error();
  EXPECT_EQ(r.link_type(), LinkType::Ethernet);
  CaptureRecord rec;
  ASSERT_EQ(r.next(rec), ReadStatus::Record);
  EXPECT_EQ(rec.index, 1u);
  EXPECT_EQ(rec.ts_sec, 1700000000);
  EXPECT_EQ(rec.ts_nsec, 5000u);
  EXPECT_EQ(rec.caplen, 60u);
  EXPECT_FALSE(rec.snap_truncated());
  EXPECT_EQ(std::vector<std::byte>(rec.data.begin(), rec.data.end()), bytes(60, 1));
  ASSERT_EQ(r.next(rec), ReadStatus::Record);
  EXPECT_EQ(rec.index, 2u);
  EXPECT_EQ(rec.ts_nsec, 999999000u);
  EXPECT_EQ(rec.data.size(), 100u);
  EXPECT_EQ(r.next(rec), ReadStatus::End);
  EXPECT_EQ(r.records_read(), 2u);
}

TEST_F(CaptureReaderTest, RecordCutBySnapLengthKeepsBothLengths) {
  auto f = pcap_file_header(DLT_EN10MB, 64);
  append_record(f, bytes(64, 3), 1, 0, 1082);
  CaptureReader r;
  ASSERT_TRUE(r.open(write("snap.pcap", f))) << r.error();
  CaptureRecord rec;
  ASSERT_EQ(r.next(rec), ReadStatus::Record);
  EXPECT_EQ(rec.caplen, 64u);
  EXPECT_EQ(rec.wire_len, 1082u);
  EXPECT_TRUE(rec.snap_truncated());
}

TEST_F(CaptureReaderTest, AcceptsEthernetCookedAndRawIpLinkTypes) {
  const std::vector<std::pair<std::uint32_t, LinkType>> cases{
      {1, LinkType::Ethernet}, {113, LinkType::LinuxSll}, {276, LinkType::LinuxSll2},
      {101, LinkType::RawIp},  {12, LinkType::RawIp},     {228, LinkType::RawIp},
      {229, LinkType::RawIp}};
  for (const auto& [linktype, want] : cases) {
    SCOPED_TRACE(linktype);
    CaptureReader r;
    ASSERT_TRUE(r.open(write("lt.pcap", pcap_file_header(linktype)))) << r.error();
    EXPECT_EQ(r.link_type(), want);
    CaptureRecord rec;
    EXPECT_EQ(r.next(rec), ReadStatus::End);
  }
}

TEST_F(CaptureReaderTest, RefusesAnUnsupportedLinkTypeNamingIt) {
  CaptureReader r;
  EXPECT_FALSE(r.open(write("wifi.pcap", pcap_file_header(105))));
  EXPECT_NE(r.error().find("105"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("not supported"), std::string::npos) << r.error();
}

TEST_F(CaptureReaderTest, MissingEmptyAndNonCaptureFilesFailToOpenWithAReason) {
  CaptureReader r;
  EXPECT_FALSE(r.open((dir_ / "does-not-exist.pcap").string()));
  EXPECT_FALSE(r.error().empty());
  EXPECT_FALSE(r.open(write("empty.pcap", {})));
  EXPECT_FALSE(r.error().empty());
  const std::string text = "this is not a capture file, just some text\n";
  EXPECT_FALSE(r.open(write("text.pcap", {text.begin(), text.end()})));
  EXPECT_FALSE(r.error().empty());
  CaptureRecord rec;
  EXPECT_EQ(r.next(rec), ReadStatus::Error);  // nothing open: an error, not a crash
}

TEST_F(CaptureReaderTest, FileCutInsideARecordGivesTheRecordsBeforeItThenAnError) {
  auto f = pcap_file_header(DLT_EN10MB);
  append_record(f, bytes(80, 1), 1, 0);
  append_record(f, bytes(80, 2), 1, 10);
  const std::size_t whole = f.size();
  append_record(f, bytes(500, 3), 1, 20);
  for (const std::size_t cut : {whole + 8, whole + test::kPcapRecordHeaderBytes + 100}) {
    SCOPED_TRACE(cut);
    CaptureReader r;
    ASSERT_TRUE(r.open(write("cut.pcap", std::vector<char>(f.begin(), f.begin() + static_cast<long>(cut)))));
    CaptureRecord rec;
    EXPECT_EQ(r.next(rec), ReadStatus::Record);
    EXPECT_EQ(r.next(rec), ReadStatus::Record);
    EXPECT_EQ(r.next(rec), ReadStatus::Error);
    EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
    EXPECT_EQ(r.records_read(), 2u);
  }
}

TEST_F(CaptureReaderTest, WriterOutputReadsBackIdenticallyForEveryLinkType) {
  for (const LinkType link : {LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2, LinkType::RawIp}) {
    SCOPED_TRACE(to_string(link));
    const std::string path = (dir_ / "written.pcap").string();
    CaptureWriter w;
    ASSERT_TRUE(w.open(path, link, 100)) << w.error();
    ASSERT_TRUE(w.write(1700000000, 10, bytes(70, 1)));
    ASSERT_TRUE(w.write(1700000000, 20, bytes(300, 2)));  // longer than the snap length: cut to 100
    ASSERT_TRUE(w.close()) << w.error();

    CaptureReader r;
    ASSERT_TRUE(r.open(path)) << r.error();
    EXPECT_EQ(r.link_type(), link);
    CaptureRecord rec;
    ASSERT_EQ(r.next(rec), ReadStatus::Record);
    EXPECT_EQ(std::vector<std::byte>(rec.data.begin(), rec.data.end()), bytes(70, 1));
    EXPECT_EQ(rec.ts_nsec, 10000u);
    ASSERT_EQ(r.next(rec), ReadStatus::Record);
    EXPECT_EQ(rec.caplen, 100u);
    EXPECT_EQ(rec.wire_len, 300u);
    EXPECT_EQ(r.next(rec), ReadStatus::End);
  }
}

TEST_F(CaptureReaderTest, WriterReportsAFileItCannotCreate) {
  CaptureWriter w;
  EXPECT_FALSE(w.open((dir_ / "no-such-dir" / "x.pcap").string(), LinkType::Ethernet));
  EXPECT_FALSE(w.error().empty());
  EXPECT_FALSE(w.write(0, 0, bytes(10, 0)));
}

}  // namespace
}  // namespace roce::capture::capture_reader_test
