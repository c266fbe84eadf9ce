// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when every share is equal, 1/n when one
// flow has everything. 0 for no traffic at all.
#pragma once

#include <span>

namespace roce::test {

inline double jain_index(std::span<const double> x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq == 0 ? 0 : sum * sum / (static_cast<double>(x.size()) * sq);
}

}  // namespace roce::test
