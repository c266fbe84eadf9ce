// MappedBuffer::file backs roce-appliance's --mr-file: remote memory kept in a file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "client/buffers.hpp"
#include "tests/support/temp_dir.hpp"

namespace roce::client {
namespace {

TEST(MappedBufferFile, CreatesAndGrowsTheFileAndKeepsWhatIsWritten) {
  test::TempDir dir;
  const auto path = (dir / "mem").string();
  {
    auto b = MappedBuffer::file(path, 8192);
    ASSERT_TRUE(b.ok()) << b.error().message;
    std::memcpy(b->data(), "remote", 6);
  }
  EXPECT_EQ(std::filesystem::file_size(path), 8192u);
  auto again = MappedBuffer::file(path, 16384);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::memcmp(again->data(), "remote", 6), 0);
  EXPECT_EQ(std::filesystem::file_size(path), 16384u);
}

TEST(MappedBufferFile, NeverCutsALongerFile) {
  test::TempDir dir;
  const auto path = dir / "big";
  std::vector<char> data(1 << 20, 'x');
  test::write_file(path, data.data(), data.size());
  {
    auto b = MappedBuffer::file(path.string(), 4096);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b->size(), 4096u);
    EXPECT_EQ(static_cast<char>(b->data()[4095]), 'x');
  }
  EXPECT_EQ(std::filesystem::file_size(path), 1u << 20);
}

TEST(MappedBufferFile, RefusesDirectoriesAndMissingFolders) {
  test::TempDir dir;
  auto d = MappedBuffer::file(dir.path().string(), 4096);
  ASSERT_FALSE(d.ok());
  auto m = MappedBuffer::file((dir / "no" / "such").string(), 4096);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("cannot open"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace roce::client
