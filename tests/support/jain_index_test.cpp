#include "tests/support/jain_index.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace roce::test::jain_index_test {
namespace {

TEST(JainIndex, EqualSharesAreOneAndOneHogIsOneOverN) {
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{8, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{0, 0}), 0.0);
}

}  // namespace
}  // namespace roce::test::jain_index_test
