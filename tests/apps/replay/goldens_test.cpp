// pcap/replay/: the committed golden scenarios are exactly what the generator writes, each has
// its line in pcap/README.md, and the engine reproduces every expected frame of every one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "apps/replay/replay.hpp"
#include "apps/replay_goldens/cases.hpp"

namespace roce::goldens {
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }
}  // namespace roce::goldens

namespace roce::replay {
namespace {

namespace fs = std::filesystem;

const fs::path& golden_dir() {
  static const fs::path dir = fs::path(ROCE_SOURCE_ROOT) / "pcap" / "replay";
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_file_holds(const fs::path& p, const std::vector<goldens::TimedFrame>& want) {
  auto got = read_frames(p.string());
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), want.size()) << p << ": run scripts/make_replay_goldens.sh";
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*got)[i].bytes, want[i].bytes) << p << " frame " << i + 1 << ": run scripts/make_replay_goldens.sh";
    EXPECT_EQ((*got)[i].ts, goldens::kStartSec * kSecond + want[i].at_ns / 1000 * 1000) << p << " frame " << i + 1;
  }
}

class Golden : public ::testing::TestWithParam<goldens::GoldenCase> {};

TEST_P(Golden, CommittedFilesAreWhatTheGeneratorWrites) {
  const auto& c = GetParam();
  EXPECT_EQ(slurp(golden_dir() / (c.name + ".scenario")), c.scenario) << "run scripts/make_replay_goldens.sh";
  expect_file_holds(golden_dir() / (c.name + ".in.pcap"), c.frames.in());
  expect_file_holds(golden_dir() / (c.name + ".out.pcap"), c.frames.out());
}

TEST_P(Golden, HasItsLineInThePcapReadme) {
  const std::string readme = slurp(fs::path(ROCE_SOURCE_ROOT) / "pcap" / "README.md");
  EXPECT_NE(readme.find("| replay/" + GetParam().name + " |"), std::string::npos);
}

TEST_P(Golden, EngineReproducesEveryExpectedFrameAndCounter) {
  const auto& c = GetParam();
  ReplayOptions o;
  o.input = (golden_dir() / (c.name + ".in.pcap")).string();
  o.scenario = (golden_dir() / (c.name + ".scenario")).string();
  o.expect = (golden_dir() / (c.name + ".out.pcap")).string();
  std::ostringstream out, err;
  const ReplayReport rep = replay(o, out, err);
  EXPECT_EQ(rep.exit_code, kExitPass) << out.str() << err.str();
  ASSERT_TRUE(rep.comparison.has_value());
  // Not vacuous: every expected frame was there to compare, and the scenario checks counters.
  EXPECT_EQ(rep.comparison->expected_frames, c.frames.out().size());
  EXPECT_EQ(rep.comparison->got_frames, c.frames.out().size());
  EXPECT_TRUE(rep.counter_mismatches.empty());
  EXPECT_NE(c.scenario.find("[expect]"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Replay, Golden, ::testing::ValuesIn(goldens::golden_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Goldens, NoStrayFilesInThePcapReplayDirectory) {
  std::set<std::string> want;
  for (const auto& c : goldens::golden_cases())
    for (const char* ext : {".scenario", ".in.pcap", ".out.pcap"}) want.insert(c.name + ext);
  for (const auto& e : fs::directory_iterator(golden_dir()))
    EXPECT_TRUE(want.count(e.path().filename().string())) << e.path() << " is not written by the generator";
}

}  // namespace
}  // namespace roce::replay
