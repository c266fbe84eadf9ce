// Closed-loop DCQCN with the paper profile: CP + NP + RP + pacer through one bottleneck
// (closed_loop_sim.hpp). Senders start at line rate; numbers are measured after convergence.
// Each run writes a rate trace into the build directory and, if python3 is available, turns it
// into an SVG with scripts/plot_rates.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cc/closed_loop_sim.hpp"
#include "tests/support/rate_plot.hpp"

namespace roce::cc::test {
namespace {

LoopConfig paper_loop(int senders, double line_rate_bps) {
  LoopConfig c;
  c.senders = senders;
  c.rp = paper_params(line_rate_bps);
  c.cp.line_rate_bps = line_rate_bps;
  c.cp.red = {5'000, 200'000, 0.01};  // spec 2.1
  c.cp.capacity_bytes = 2'000'000;
  c.cp.capacity_packets = 4096;
  c.cp.seed = 2015;
  return c;
}

void print(const std::string& name, const LoopConfig& c, const LoopResult& r) {
  std::printf("[%s] %d senders, window %.0f-%.0f ms: utilisation %.4f, Jain %.4f, queue mean %.1f KB max %.1f KB "
              "(overall max %.1f KB), drops %llu (%llu in window), marks %llu, CNPs %llu, cuts %llu, increases %llu\n",
              name.c_str(), c.senders, c.measure_from / 1e6, c.duration / 1e6, r.utilisation, r.jain,
              r.mean_queue_bytes / 1e3, r.max_queue_bytes_window / 1e3, r.max_queue_bytes / 1e3,
              static_cast<unsigned long long>(r.drops), static_cast<unsigned long long>(r.drops_window),
              static_cast<unsigned long long>(r.marks),
              static_cast<unsigned long long>(r.cnps), static_cast<unsigned long long>(r.rate_decreases),
              static_cast<unsigned long long>(r.rate_increases));
  std::printf("[%s] per-flow Gb/s:", name.c_str());
  for (double x : r.throughput_bps) std::printf(" %.3f", x / 1e9);
  std::printf("\n");
}

// What a working loop looks like after convergence: the link stays busy, the flows share it,
// the queue sits between the marking thresholds, nothing is dropped, and both directions of the
// rate control are exercised.
::testing::AssertionResult converged(const LoopConfig& c, const LoopResult& r, double min_jain) {
  if (r.utilisation < 0.95) return ::testing::AssertionFailure() << "utilisation " << r.utilisation;
  if (r.jain < min_jain) return ::testing::AssertionFailure() << "Jain index " << r.jain;
  if (r.mean_queue_bytes < static_cast<double>(c.cp.red.kmin_bytes) ||
      r.mean_queue_bytes > static_cast<double>(c.cp.red.kmax_bytes))
    return ::testing::AssertionFailure() << "mean queue " << r.mean_queue_bytes << " B outside [Kmin, Kmax]";
  if (r.max_queue_bytes_window > 2 * c.cp.red.kmax_bytes)
    return ::testing::AssertionFailure() << "queue peak " << r.max_queue_bytes_window << " B after convergence";
  if (r.drops_window != 0) return ::testing::AssertionFailure() << r.drops_window << " drops after convergence";
  if (r.cnps == 0 || r.rate_increases == 0) return ::testing::AssertionFailure() << "no CNPs or no increases";
  return ::testing::AssertionSuccess();
}

// Spec section 10: the fluid model's fixed point, first-order approximation, with every
// quantity in packets: p* = (R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2)^(1/3) and
// q* = p*/Pmax (Kmax - Kmin) + Kmin. The exact root is 10-20 % lower.
double fluid_queue_estimate_bytes(const LoopConfig& c) {
  const double packet_bits = c.packet_bytes * 8.0;
  const double cap = c.cp.line_rate_bps / packet_bits;
  const double rai = c.rp.paper.rai_bps / packet_bits;
  const double b = static_cast<double>(c.rp.paper.byte_counter) / c.packet_bytes;
  const double tau = static_cast<double>(c.rp.paper.alpha_interval) * 1e-9;
  const double t = static_cast<double>(c.rp.paper.increase_interval) * 1e-9;
  const double n = c.senders;
  const double p = std::cbrt(rai * n * n / (tau * cap * cap) * std::pow(1 / b + n / (t * cap), 2));
  const RedParams& red = c.cp.red;
  return p / red.pmax * static_cast<double>(red.kmax_bytes - red.kmin_bytes) + static_cast<double>(red.kmin_bytes);
}

void expect_queue_near_fluid_model(const LoopConfig& c, const LoopResult& r) {
  const double q = fluid_queue_estimate_bytes(c);
  std::printf("fluid-model queue estimate %.1f KB, measured mean %.1f KB (ratio %.2f)\n", q / 1e3,
              r.mean_queue_bytes / 1e3, r.mean_queue_bytes / q);
  EXPECT_GT(r.mean_queue_bytes, 0.5 * q);
  EXPECT_LT(r.mean_queue_bytes, 1.5 * q);
}

LoopResult run_traced(const std::string& name, const LoopConfig& c) {
  const auto csv = roce::test::trace_out_dir() / (name + ".csv");
  LoopResult r;
  {
    std::ofstream trace(csv);
    r = run_closed_loop(c, trace ? &trace : nullptr);
  }
  print(name, c, r);
  const roce::test::PlotResult plot = roce::test::plot_rates(csv, name);
  if (!plot.attempted) {
    std::printf("[%s] not plotting: ROCE_PYTHON3/ROCE_PLOT_RATES not set (python3 not found at configure)\n",
                name.c_str());
    return r;
  }
  EXPECT_EQ(plot.status, 0) << plot.command;
  EXPECT_TRUE(std::filesystem::exists(plot.svg));
  std::printf("[%s] rate trace %s, picture %s\n", name.c_str(), csv.c_str(), plot.svg.c_str());
  return r;
}

TEST(ClosedLoop, TwoSendersAt40GShareTheLinkWithAShortQueue) {
  LoopConfig c = paper_loop(2, 40e9);
  c.start_times = {0, from_ms(5)};  // the second flow joins late and must catch up
  c.duration = from_ms(400);
  c.measure_from = from_ms(300);
  const LoopResult r = run_traced("closed_loop_2x40g", c);
  EXPECT_TRUE(converged(c, r, 0.99));
  EXPECT_EQ(r.drops, 0u);
  expect_queue_near_fluid_model(c, r);
}

TEST(ClosedLoop, EightSendersAt100GShareTheLinkWithAShortQueue) {
  LoopConfig c = paper_loop(8, 100e9);
  for (int i = 0; i < c.senders; ++i) c.start_times.push_back(from_ms(2 * i));  // one joins every 2 ms
  c.duration = from_ms(200);
  c.measure_from = from_ms(100);
  const LoopResult r = run_traced("closed_loop_8x100g", c);
  EXPECT_TRUE(converged(c, r, 0.98));
  EXPECT_EQ(r.drops, 0u);
  expect_queue_near_fluid_model(c, r);
}

// 16 senders start together at 100 Gb/s: a 15x overload until the CNPs arrive.
TEST(ClosedLoop, IncastOf16SendersIsAbsorbedAndThenShared) {
  LoopConfig c = paper_loop(16, 100e9);
  c.cp.capacity_bytes = 16'000'000;
  c.cp.capacity_packets = 32'768;
  c.duration = from_ms(100);
  c.measure_from = from_ms(50);
  const LoopResult r = run_traced("closed_loop_incast16x100g", c);
  EXPECT_TRUE(converged(c, r, 0.95));
  EXPECT_EQ(r.drops, 0u) << "the initial burst fits in a 16 MB buffer";
  EXPECT_GT(r.max_queue_bytes, 4 * c.cp.red.kmax_bytes) << "and it was a real burst";
  expect_queue_near_fluid_model(c, r);
}

// The bounds above must catch a broken loop.
TEST(ClosedLoop, BoundsCatchALoopWithoutCnps) {
  LoopConfig c = paper_loop(2, 40e9);
  c.cp.ecn_marking = false;
  c.duration = from_ms(20);
  c.measure_from = from_ms(10);
  const LoopResult r = run_closed_loop(c, nullptr);
  print("no_cnps", c, r);
  EXPECT_EQ(r.cnps, 0u);
  EXPECT_FALSE(converged(c, r, 0.99));
  EXPECT_GT(r.drops, 0u);
}

TEST(ClosedLoop, BoundsCatchALoopWithoutRateIncrease) {
  LoopConfig c = paper_loop(2, 40e9);
  c.rp.paper.increase_interval = kNever;
  c.rp.paper.byte_counter = 0;
  c.duration = from_ms(20);
  c.measure_from = from_ms(10);
  const LoopResult r = run_closed_loop(c, nullptr);
  print("no_increase", c, r);
  EXPECT_EQ(r.rate_increases, 0u);
  EXPECT_FALSE(converged(c, r, 0.99));
  EXPECT_LT(r.utilisation, 0.5);
}

}  // namespace
}  // namespace roce::cc::test
