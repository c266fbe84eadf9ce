// Relative-tolerance comparison for the spec's reference numbers (dcqcn.md section 9: 1e-12).
#pragma once

#include <gtest/gtest.h>

#include <cmath>

namespace roce::cc::test {

inline ::testing::AssertionResult rel_near(const char* a_expr, const char* b_expr, double a, double b) {
  const double tol = 1e-12 * std::max(std::fabs(a), std::fabs(b));
  if (std::fabs(a - b) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a_expr << " = " << a << " vs " << b_expr << " = " << b
                                       << std::hexfloat << " (" << a << " vs " << b << ")";
}

constexpr double kGbps = 1e9;
constexpr double kMbps = 1e6;

}  // namespace roce::cc::test

#define EXPECT_REL(a, b) EXPECT_PRED_FORMAT2(::roce::cc::test::rel_near, a, b)
