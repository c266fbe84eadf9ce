// Parse -> frame_spec_from -> build_frame must give back the captured bytes of every RoCEv2
// frame in ../shared/captures: the builder writes exactly what real NICs and rxe put on the wire.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "protocol/builder.hpp"
#include "tests/support/captures_dir.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::captures_rebuild_test {
namespace {

namespace fs = std::filesystem;

// First differing byte, or -1.
long first_difference(ByteSpan a, ByteSpan b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (ia == a.end() && ib == b.end()) return -1;
  return ia - a.begin();
}

TEST(CapturesRebuild, EveryRoceV2FrameRebuildsByteForByteUpToTheDatagramEnd) {
  std::string why;
  const auto dir = test::find_captures_dir(why);
  if (!dir) GTEST_SKIP() << why;

  std::uint64_t rebuilt = 0;
  std::vector<std::byte> out(16 * 1024);
  for (const auto& e : fs::recursive_directory_iterator(*dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".pcap" && ext != ".pcapng")) continue;
    const std::string rel = fs::relative(e.path(), *dir).generic_string();
    capture::CaptureReader reader;
    ASSERT_TRUE(reader.open(e.path().string())) << rel << ": " << reader.error();
    capture::CaptureRecord rec;
    capture::DecodedFrame frame;
    int mismatches = 0;
    while (reader.next(rec) == capture::ReadStatus::Record) {
      capture::decode_frame(reader.link_type(), rec.data, {}, frame);
      if (frame.verdict != capture::Verdict::Roce) continue;
      const Packet& p = frame.packet;
      const FrameLayout l = build_frame(frame_spec_from(p), p.payload, out, CrcBackend::Isal);
      ASSERT_TRUE(l.ok()) << rel << " frame " << rec.index << ": " << to_string(l.error);
      // Everything after the IP datagram is Ethernet padding, which the builder does not write.
      const ByteSpan original = rec.data.subspan(frame.ip_offset - p.l3_offset, p.datagram_end);
      const ByteSpan again(out.data(), l.length);
      const long at = first_difference(original, again);
      if (at >= 0 && ++mismatches <= 3) {
        ADD_FAILURE() << rel << " frame " << rec.index << " (" << opcode_name(p.opcode()) << ") differs at byte " << at
                      << "\n  captured " << test::to_hex(original) << "\n  rebuilt  " << test::to_hex(again);
      }
      ++rebuilt;
    }
    EXPECT_EQ(mismatches, 0) << rel;
  }
  EXPECT_GT(rebuilt, 0u) << "no RoCEv2 frames under " << *dir;
  std::printf("[ rebuilt ] %llu RoCEv2 frames byte for byte\n", static_cast<unsigned long long>(rebuilt));
}

}  // namespace
}  // namespace roce::proto::captures_rebuild_test
