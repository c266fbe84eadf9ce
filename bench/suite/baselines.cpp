// The references every transport figure is divided by: raw forwarding and a raw ping-pong over
// the same net_ring PMD with the same frames, memcpy into a buffer larger than the LLC, the
// ICRC on each CRC backend, and memcpy + ICRC per frame (what a receiver cannot avoid).
#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bench/suite/big_buffer.hpp"
#include "bench/suite/cases.hpp"
#include "bench/suite/frames.hpp"
#include "protocol/crc32.hpp"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr unsigned kRound = 2048;  // frames per timed round (the rings hold 4096)
int g_tag = 0;
std::string tag() { return "bl" + std::to_string(g_tag++); }

std::uint32_t pmtu_for(std::uint32_t payload) { return payload <= 1024 ? 1024 : 4096; }

}  // namespace

// rx burst on port b, swap MACs, tx burst back out; the frames were preloaded into b's RX
// ring, and only the forwarder is timed. One sample = the rate over `window` seconds of rounds.
bool forward_baseline(const SuiteConfig& c, std::uint32_t payload, Results& out) {
  Feeder f;
  if (!make_feeder(f, tag(), true, 3 * kRound - 1)) return false;
  std::vector<std::byte> dummy(payload);
  WriteFrames frames(payload, payload, pmtu_for(payload), 0x11, 0, dummy.data(), dummy.size());
  if (!preload(f.ports.a, f.pool, frames, 0, kRound)) return false;
  Figure fig{"forward", {}, "Mpps", {}, {}};
  fig.with("payload", payload);
  std::array<rte_mbuf*, kRound> back;
  for (unsigned run = 0; run < c.runs; ++run) {
    double busy = 0;
    std::uint64_t frames_done = 0;
    while (busy < c.window) {
      unsigned done = 0;
      const auto t0 = Clock::now();
      std::array<rte_mbuf*, 32> m;
      while (done < kRound) {
        const std::uint16_t n = rte_eth_rx_burst(f.ports.b, 0, m.data(), 32);
        for (std::uint16_t i = 0; i < n; ++i) {
          auto* eth = rte_pktmbuf_mtod(m[i], rte_ether_hdr*);
          std::swap(eth->src_addr, eth->dst_addr);
        }
        std::uint16_t sent = 0;
        while (sent < n) sent += rte_eth_tx_burst(f.ports.b, 0, m.data() + sent, static_cast<std::uint16_t>(n - sent));
        done += n;
      }
      busy += since(t0);
      frames_done += kRound;
      unsigned got = 0;
      while (got < kRound)
        got += rte_eth_rx_burst(f.ports.a, 0, back.data() + got, static_cast<std::uint16_t>(std::min(32u, kRound - got)));
      unsigned sent = 0;
      while (sent < kRound) sent += rte_eth_tx_burst(f.ports.a, 0, back.data() + sent, static_cast<std::uint16_t>(kRound - sent));
    }
    fig.samples.push_back(static_cast<double>(frames_done) / busy / 1e6);
  }
  drain(f.ports.b);
  out.add(std::move(fig));
  return true;
}

// 1 MiB copies from a hot source into consecutive places of a buffer larger than the LLC.
bool memcpy_bandwidth(const SuiteConfig& c, Results& out) {
  constexpr std::size_t kChunk = 1u << 20;
  std::vector<std::byte> src(kChunk, std::byte{3});
  std::span<std::byte> big = big_buffers(c.big_bytes).a;
  Figure fig{"memcpy", {}, "GB/s", {}, {}};
  std::size_t at = 0;
  for (unsigned run = 0; run < c.runs; ++run) {
    std::uint64_t bytes = 0;
    const auto t0 = Clock::now();
    double t = 0;
    while ((t = since(t0)) < c.window) {
      for (int i = 0; i < 16; ++i) {
        if (at + kChunk > big.size()) at = 0;
        std::memcpy(big.data() + at, src.data(), kChunk);
        at += kChunk;
        bytes += kChunk;
      }
    }
    fig.samples.push_back(static_cast<double>(bytes) / t / 1e9);
  }
  fig.with("buffer_mib", static_cast<double>(c.big_bytes >> 20));
  out.add(std::move(fig));
  return true;
}

// CRC-32 over a hot 4 KiB buffer on each backend (the ICRC is this CRC over the datagram).
bool icrc_bandwidth(const SuiteConfig& c, Results& out) {
  std::vector<std::byte> buf(4096);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(i * 13 + 5);
  for (const proto::CrcBackend b : {proto::CrcBackend::Isal, proto::CrcBackend::Zlib, proto::CrcBackend::Portable}) {
    Figure fig{"icrc", {}, "GB/s", {}, {}};
    fig.with("backend", proto::to_string(b));
    std::uint32_t sink = 0;
    for (unsigned run = 0; run < c.runs; ++run) {
      std::uint64_t bytes = 0;
      const auto t0 = Clock::now();
      double t = 0;
      while ((t = since(t0)) < c.window / 2) {
        for (int i = 0; i < 64; ++i) sink ^= proto::crc32(b, sink, buf.data(), buf.size());
        bytes += 64 * buf.size();
      }
      fig.samples.push_back(static_cast<double>(bytes) / t / 1e9);
    }
    if (sink == 0x12345678) std::puts("");  // keeps the CRCs from being optimised away
    out.add(std::move(fig));
  }
  return true;
}

// Per frame of `payload` bytes: memcpy the frame into consecutive places of a buffer larger
// than the LLC and run ISA-L's CRC-32 over the copy. Samples in payload Gbit/s.
bool memcpy_icrc_ceiling(const SuiteConfig& c, std::uint32_t payload, Results& out) {
  std::span<std::byte> big = big_buffers(c.big_bytes).a;
  Figure fig{"ceiling", {}, "Gbit/s", {}, {}};
  fig.with("payload", payload);
  for (unsigned run = 0; run < c.runs; ++run) fig.samples.push_back(ceiling_window(big, payload, c.window));
  out.add(std::move(fig));
  return true;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double ceiling_window(std::span<std::byte> big, std::uint32_t payload, double seconds, std::size_t* cursor, CeilingDetail* detail) {
  std::vector<std::byte> dummy(payload);
  WriteFrames frames(payload, payload, pmtu_for(payload), 0x11, 0, dummy.data(), dummy.size());
  std::vector<std::byte> src(std::size_t{kRound} * (payload + 128));
  std::vector<std::size_t> len(kRound), off(kRound);
  std::size_t at = 0;
  for (unsigned i = 0; i < kRound; ++i) {
    off[i] = at;
    len[i] = frames.build(i, {src.data() + at, payload + 128});
    at += len[i];
  }
  std::size_t dst = cursor && *cursor < big.size() ? *cursor : 0;
  std::uint32_t sink = 0;
  std::uint64_t n = 0;
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_seconds();
  double t = 0;
  std::uint64_t best = UINT64_MAX;  // TSC cycles of the fastest round
  // At least one round: a lane whose vCPU was away for a whole short window (the smoke mode's
  // are 100 us) would otherwise measure nothing, and the scaling case fail on a busy machine.
  do {
    const std::uint64_t r0 = rte_rdtsc();
    for (unsigned i = 0; i < kRound; ++i) {
      if (dst + len[i] > big.size()) dst = 0;
      auto* d = reinterpret_cast<unsigned char*>(big.data() + dst);
      std::memcpy(d, src.data() + off[i], len[i]);
      sink ^= crc32_gzip_refl(0, d, len[i]);
      dst += (len[i] + 63) & ~std::size_t{63};
    }
    best = std::min(best, rte_rdtsc() - r0);
    n += kRound;
  } while ((t = since(t0)) < seconds);
  if (cursor) *cursor = dst;
  if (sink == 0x12345678) std::puts("");  // keeps the CRCs from being optimised away
  if (detail) {
    detail->cpu_gbits = static_cast<double>(n) * payload * 8 / (thread_cpu_seconds() - c0) / 1e9;
    detail->best_round_gbits = n == 0 ? 0
                                      : static_cast<double>(kRound) * payload * 8 * static_cast<double>(rte_get_tsc_hz()) /
                                            static_cast<double>(best) / 1e9;
  }
  return static_cast<double>(n) * payload * 8 / t / 1e9;
}

// One 64 B WRITE_ONLY frame bounced a -> b -> a over the ring pair on this thread: the
// round trip of the PMD alone. Samples: median, p99, p99.9 of each run, in microseconds.
bool ring_pingpong(const SuiteConfig& c, Results& out) {
  Feeder f;
  if (!make_feeder(f, tag(), true, 1023)) return false;
  std::vector<std::byte> dummy(64);
  WriteFrames frames(64, 64, 1024, 0x11, 0, dummy.data(), dummy.size());
  if (!preload(f.ports.a, f.pool, frames, 0, 1)) return false;
  // The frame is now in b's RX ring: take it back to a to start.
  rte_mbuf* m = nullptr;
  while (rte_eth_rx_burst(f.ports.b, 0, &m, 1) == 0) {
  }
  const double ns_per_cycle = 1e9 / static_cast<double>(rte_get_tsc_hz());
  Figure p50{"rtt", {}, "us", {}, {}}, p99 = p50, p999 = p50;
  p50.with("path", "ring").with("stat", "p50");
  p99.with("path", "ring").with("stat", "p99");
  p999.with("path", "ring").with("stat", "p99.9");
  std::vector<double> s(c.rtt_samples);
  for (unsigned run = 0; run < c.runs; ++run) {
    for (unsigned i = 0; i < c.rtt_samples; ++i) {
      const std::uint64_t t0 = rte_rdtsc();
      while (rte_eth_tx_burst(f.ports.b, 0, &m, 1) == 0) {
      }
      while (rte_eth_rx_burst(f.ports.a, 0, &m, 1) == 0) {
      }
      auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
      std::swap(eth->src_addr, eth->dst_addr);
      while (rte_eth_tx_burst(f.ports.a, 0, &m, 1) == 0) {
      }
      while (rte_eth_rx_burst(f.ports.b, 0, &m, 1) == 0) {
      }
      s[i] = static_cast<double>(rte_rdtsc() - t0) * ns_per_cycle / 1e3;
    }
    std::sort(s.begin(), s.end());
    p50.samples.push_back(s[s.size() / 2]);
    p99.samples.push_back(s[std::min(s.size() - 1, s.size() * 99 / 100)]);
    p999.samples.push_back(s[std::min(s.size() - 1, s.size() * 999 / 1000)]);
  }
  rte_pktmbuf_free(m);
  out.add(std::move(p50));
  out.add(std::move(p99));
  out.add(std::move(p999));
  return true;
}

}  // namespace roce::bench
