// Per-packet cost of the protocol layer: parse (with and without ICRC check), build, the ICRC
// on each CRC backend, and a memcpy of the same bytes as the yardstick. One RC WRITE_ONLY over
// IPv4 per payload size (64 B, 1 KiB, 4 KiB). Every benchmark reports Mpps and GB/s; absolute
// figures move with the machine, the ratios to memcpy are what to compare
// (bench/run_protocol_bench.sh prints them).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"
#include "protocol/crc32_short.hpp"
#include "protocol/icrc_batch.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"
#include "protocol/request_template.hpp"
#include "protocol/write_only_match.hpp"

namespace roce::proto {
namespace {

struct Fixture {
  FrameSpec spec;
  std::vector<std::byte> payload;
  std::vector<std::byte> frame;
  std::size_t l3 = 0;

  // A WRITE_ONLY of payload_len bytes; with `ack_if_empty` and no payload, an ACK instead (the
  // single-frame benchmarks' second frame).
  explicit Fixture(std::size_t payload_len, bool ack_if_empty = false) : payload(payload_len) {
    for (std::size_t i = 0; i < payload_len; ++i) payload[i] = static_cast<std::byte>(i * 131 + 7);
    spec.eth.dst = {0x52, 0x54, 0x00, 0x0a, 0xaa, 0xba};
    spec.eth.src = {0x52, 0x54, 0x00, 0xbf, 0x43, 0x69};
    spec.ipv4.src = {192, 168, 65, 4};
    spec.ipv4.dst = {192, 168, 65, 5};
    spec.ipv4.tos = 0x02;
    spec.bth.pkey.set(0xFFFF);
    spec.bth.dest_qp.set(0x11);
    spec.bth.psn.set(0x8C84DD);
    if (ack_if_empty && payload_len == 0) {
      spec.bth.opcode = raw(Opcode::RcAck);
      spec.ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(0x42)};
    } else {
      spec.bth.opcode = raw(Opcode::RcWriteOnly);
      spec.bth.set_ack_requested(true);
      spec.ext.reth.va.set(0x0000aaab09dd5000);
      spec.ext.reth.rkey.set(0x2d5);
      spec.ext.reth.dma_length.set(static_cast<std::uint32_t>(payload_len));
    }
    frame.resize(payload_len + 128);
    const FrameLayout l = build_frame(spec, payload, frame, CrcBackend::Isal);
    if (!l.ok()) std::abort();
    frame.resize(l.length);
    l3 = l.l3_offset;
  }
  // What the ICRC runs over: the IP datagram without the ICRC itself.
  ByteSpan datagram() const { return ByteSpan(frame).subspan(l3, frame.size() - l3 - kIcrcBytes); }
};

void report(benchmark::State& state, std::size_t bytes_per_op) {
  const auto ops = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes_per_op));
  // Rates print with a "/s" suffix: "Mpkt=10.9/s" is Mpps, "GB=1.5/s" is GB/s (10^9 bytes).
  state.counters["Mpkt"] = benchmark::Counter(ops / 1e6, benchmark::Counter::kIsRate);
  state.counters["GB"] = benchmark::Counter(ops * static_cast<double>(bytes_per_op) / 1e9, benchmark::Counter::kIsRate);
  state.counters["bytes_per_op"] = static_cast<double>(bytes_per_op);
}

void BM_Parse(benchmark::State& state, bool verify_icrc) {
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  ParseOptions o;
  o.verify_icrc = verify_icrc;
  Packet p;
  for (auto _ : state) {
    const ParseError e = parse_frame(f.frame, o, p);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(p);
  }
  if (parse_frame(f.frame, o, p) != ParseError::None) state.SkipWithError("parse failed");
  report(state, f.frame.size());
}
BENCHMARK_CAPTURE(BM_Parse, icrc_isal, true)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_Parse, headers_only, false)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);

void BM_Build(benchmark::State& state) {
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  std::vector<std::byte> out(f.frame.size());
  for (auto _ : state) {
    const FrameLayout l = build_frame(f.spec, f.payload, out, CrcBackend::Isal);
    benchmark::DoNotOptimize(l);
    benchmark::ClobberMemory();
  }
  if (out != f.frame) state.SkipWithError("build differs from the fixture");
  report(state, f.frame.size());
}
BENCHMARK(BM_Build)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);

void BM_Icrc(benchmark::State& state, CrcBackend backend) {
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  const ByteSpan d = f.datagram();
  for (auto _ : state) {
    std::uint32_t crc = compute_icrc(backend, IpVersion::V4, d);
    benchmark::DoNotOptimize(crc);
  }
  if (compute_icrc(backend, IpVersion::V4, d) != read_icrc(ByteSpan(f.frame).last(kIcrcBytes)))
    state.SkipWithError("ICRC differs from the frame's");
  report(state, d.size());
}
BENCHMARK_CAPTURE(BM_Icrc, isal, CrcBackend::Isal)->ArgName("payload")->Arg(0)->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_Icrc, zlib, CrcBackend::Zlib)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_Icrc, portable, CrcBackend::Portable)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);

// The ICRC with the headers' share by linearity (icrc_linear.hpp), ISA-L for the rest: "hit"
// is one flow (its template cached), "miss" one flow more than a set has ways, all in the same
// set, in turns, so every call computes a template (the cost a flow pays when the cache does not
// hold it; the set replaces its ways in turn).
void BM_IcrcLinear(benchmark::State& state, bool hit) {
  constexpr std::size_t kFlows = 5;  // icrc_linear.cpp: four ways a set; the miss count below checks it
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  std::vector<std::vector<std::byte>> flows(kFlows, std::vector<std::byte>(f.datagram().begin(), f.datagram().end()));
  // Other destination addresses: not in the set's key, so the same set.
  for (std::size_t i = 1; i < kFlows; ++i) flows[i][16] ^= static_cast<std::byte>(i << 4);
  IcrcHeaderCache cache;
  std::size_t k = 0;
  for (auto _ : state) {
    std::uint32_t crc = compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, flows[k]);
    benchmark::DoNotOptimize(crc);
    if (!hit && ++k == kFlows) k = 0;
  }
  if (compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, flows[0]) != read_icrc(ByteSpan(f.frame).last(kIcrcBytes)))
    state.SkipWithError("ICRC differs from the frame's");
  if (!hit && cache.misses() < static_cast<std::uint64_t>(state.iterations())) state.SkipWithError("the flows did not share a set");
  report(state, flows[0].size());
}
BENCHMARK_CAPTURE(BM_IcrcLinear, hit, true)->ArgName("payload")->Arg(0)->Arg(64)->Arg(1024)->Arg(4096);
BENCHMARK_CAPTURE(BM_IcrcLinear, miss, false)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);

// Batching several frames' ICRCs (issue 26): ISA-L over the part a 64 B WRITE's ICRC leaves to
// it (the RETH and the payload, 80 bytes after the BTH's template share) for a burst of eight
// frames. "chained": each call seeded with the last one's result, so no two overlap (a call's
// latency). "independent": eight calls back to back, free to overlap in the out-of-order window
// (what computing a burst's CRCs together buys with ISA-L as it is). "one_buffer": one call over
// the eight frames' 640 bytes: near what a multi-buffer kernel folding eight frames in parallel
// could reach per frame. "clmul": the eight in one crc32_short_batch call (crc32_short.hpp's
// carry-less kernel where the CPU has it, else ISA-L as "independent"). Items are frames.
enum class TailBatch { Chained, Independent, OneBuffer, Clmul };
void BM_IcrcTailBurst(benchmark::State& state, TailBatch how) {
  constexpr std::size_t kFrames = 8, kTail = 16 + 64;
  std::vector<std::byte> tails(kFrames * kTail);
  for (std::size_t i = 0; i < tails.size(); ++i) tails[i] = static_cast<std::byte>(i * 37 + 11);
  std::uint32_t seed = 0x9e3779b9u;
  std::array<const std::byte*, kFrames> data;
  std::array<std::uint32_t, kFrames> len;
  for (std::size_t k = 0; k < kFrames; ++k) {
    data[k] = tails.data() + k * kTail;
    len[k] = kTail;
  }
  for (auto _ : state) {
    std::uint32_t acc = 0;
    if (how == TailBatch::OneBuffer) {
      acc = crc32(CrcBackend::Isal, seed, tails.data(), tails.size());
    } else if (how == TailBatch::Clmul) {
      std::array<std::uint32_t, kFrames> crc;
      crc.fill(seed);
      crc32_short_batch(crc.data(), data.data(), len.data(), kFrames, crc.data());
      for (const std::uint32_t c : crc) acc += c;
    } else {
      for (std::size_t k = 0; k < kFrames; ++k) {
        const std::uint32_t c = crc32(CrcBackend::Isal, how == TailBatch::Chained ? seed ^ acc : seed, tails.data() + k * kTail, kTail);
        acc = how == TailBatch::Chained ? c : acc + c;
      }
    }
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFrames));
}
BENCHMARK_CAPTURE(BM_IcrcTailBurst, chained, TailBatch::Chained);
BENCHMARK_CAPTURE(BM_IcrcTailBurst, independent, TailBatch::Independent);
BENCHMARK_CAPTURE(BM_IcrcTailBurst, one_buffer, TailBatch::OneBuffer);
BENCHMARK_CAPTURE(BM_IcrcTailBurst, clmul, TailBatch::Clmul);

// Sixteen flows (destination QPs) in turns, one call each, as a worker receiving from 16 QPs
// sees them: whether the template cache holds them all (misses per call is a counter).
void BM_IcrcLinearFlows(benchmark::State& state) {
  constexpr std::size_t kFlows = 16;
  constexpr std::size_t kDestQpLow = 20 + 8 + 7;  // IPv4 header, UDP header, BTH byte 7
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  std::vector<std::vector<std::byte>> flows(kFlows, std::vector<std::byte>(f.datagram().begin(), f.datagram().end()));
  for (std::size_t k = 0; k < kFlows; ++k) flows[k][kDestQpLow] ^= static_cast<std::byte>(k);
  IcrcHeaderCache cache;
  std::size_t k = 0;
  for (auto _ : state) {
    std::uint32_t crc = compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, flows[k]);
    benchmark::DoNotOptimize(crc);
    k = (k + 1) % kFlows;
  }
  for (const auto& d : flows)
    if (compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, d) != compute_icrc(CrcBackend::Isal, IpVersion::V4, d))
      state.SkipWithError("ICRC differs from the plain one");
  state.counters["misses_per_call"] = static_cast<double>(cache.misses()) / static_cast<double>(std::max<std::int64_t>(1, state.iterations()));
  report(state, f.datagram().size());
}
BENCHMARK(BM_IcrcLinearFlows)->ArgName("payload")->Arg(64)->Arg(1024);

// A requester's frame as lib/rdma builds it, the PSN moving on each time: the builder from the
// connection's FrameSpec (write_headers, then place_and_seal with the ICRC plain by ISA-L or
// with the engine's flow cache) against the QP's prebuilt request template (its ICRC plain or
// from its own flow state). The same bytes each way (checked after the loop).
enum class RequestBuild { BuilderIsal, BuilderCache, TemplateIsal, TemplateFlow };

void BM_BuildRequest(benchmark::State& state, RequestBuild how) {
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  FrameSpec path = f.spec;  // the connection's part: no per-frame field set
  path.bth.opcode = 0;
  path.bth.psn.set(0);
  path.bth.set_ack_requested(false);
  path.ext = ExtHeaders{};
  const bool templated = how == RequestBuild::TemplateIsal || how == RequestBuild::TemplateFlow;
  RequestTemplate t;
  if (!t.build(path, CrcBackend::Isal, how == RequestBuild::TemplateFlow)) state.SkipWithError("no template");
  IcrcHeaderCache cache;
  IcrcHeaderCache* c = how == RequestBuild::BuilderCache ? &cache : nullptr;
  std::vector<std::byte> out(f.frame.size());
  const auto len = static_cast<std::uint32_t>(f.payload.size());
  std::uint32_t psn = 0x8C84DD;
  auto one = [&] {
    ExtHeaders ext = path.ext;
    ext.reth = f.spec.ext.reth;
    if (templated) {
      const FrameLayout l = t.write_headers(RequestFields{raw(Opcode::RcWriteOnly), psn, false, true, len}, ext, out);
      t.place_and_seal(l, out, CrcBackend::Isal, f.payload.data());
      return l;
    }
    FrameSpec spec = path;
    spec.ext = ext;
    spec.bth.opcode = raw(Opcode::RcWriteOnly);
    spec.bth.psn.set(psn);
    spec.bth.set_ack_requested(true);
    const FrameLayout l = write_headers(spec, len, out);
    place_and_seal(spec, l, out, CrcBackend::Isal, f.payload.data(), c);
    return l;
  };
  for (auto _ : state) {
    const FrameLayout l = one();
    benchmark::DoNotOptimize(l);
    benchmark::ClobberMemory();
    psn = (psn + 1) & 0xFFFFFF;
  }
  psn = 0x8C84DD;
  one();
  if (out != f.frame) state.SkipWithError("frame differs from the fixture");
  report(state, f.frame.size());
}
BENCHMARK_CAPTURE(BM_BuildRequest, builder_isal, RequestBuild::BuilderIsal)->ArgName("payload")->Arg(64)->Arg(1024);
BENCHMARK_CAPTURE(BM_BuildRequest, builder_cache, RequestBuild::BuilderCache)->ArgName("payload")->Arg(64)->Arg(1024);
BENCHMARK_CAPTURE(BM_BuildRequest, template_isal, RequestBuild::TemplateIsal)->ArgName("payload")->Arg(64)->Arg(1024);
BENCHMARK_CAPTURE(BM_BuildRequest, template_flow, RequestBuild::TemplateFlow)->ArgName("payload")->Arg(64)->Arg(1024);

// A requester's run of 64 B WRITEs as lib/rdma builds it (the QP's request template, the ICRC's
// header share from its flow state), the PSN moving on per frame, into 16 frame buffers 2 KiB
// apart as mbufs are: "per_frame" places and seals each frame before writing the next (the
// run path before section 49), "batch" writes every frame and then seals them together
// (IcrcSealBatch: every ICRC computed, then all stored), "after_writes" writes every frame and
// then seals each in turn (an ICRC stored before the next is computed). Items are frames; the
// frames must be the same bytes every way. "batch_isal": "batch" with each frame's ICRC by
// IcrcFlow::prefix in turn instead of one crc32_short_lead_batch call (section 49's seal; since
// section 58 that is the kernel too, a frame a call: --icrc-clmul=off for ISA-L's).
enum class RunSeal { PerFrame, Batch, BatchIsal, AfterWrites };

void BM_SealRun(benchmark::State& state, RunSeal how) {
  constexpr std::size_t kRun = 16, kStride = 2048;
  const Fixture f(64);
  FrameSpec path = f.spec;
  path.bth.opcode = 0;
  path.bth.psn.set(0);
  path.bth.set_ack_requested(false);
  path.ext = ExtHeaders{};
  RequestTemplate t;
  if (!t.build(path, CrcBackend::Isal, true)) state.SkipWithError("no template");
  std::vector<std::byte> frames(kRun * kStride);
  const auto len = static_cast<std::uint32_t>(f.payload.size());
  ExtHeaders ext{};
  ext.reth = f.spec.ext.reth;
  IcrcSealBatch sealing;
  std::array<FrameLayout, kRun> layouts;
  std::uint32_t psn = 0x8C84DD;
  auto run = [&] {
    for (std::size_t k = 0; k < kRun; ++k) {
      const MutableByteSpan out{frames.data() + k * kStride, kStride};
      const FrameLayout l = t.write_headers(RequestFields{raw(Opcode::RcWriteOnly), static_cast<std::uint32_t>((psn + k) & 0xFFFFFF), false, true, len}, ext, out);
      layouts[k] = l;
      if (how == RunSeal::PerFrame) t.place_and_seal(l, out, CrcBackend::Isal, f.payload.data());
      else sealing.add(place_unsealed(l, out, f.payload.data()));
    }
    if (how == RunSeal::Batch || how == RunSeal::BatchIsal) {
      sealing.seal(t.icrc_flow(), CrcBackend::Isal, how == RunSeal::Batch);
    } else if (how == RunSeal::AfterWrites) {
      for (std::size_t k = 0; k < kRun; ++k) t.seal(layouts[k], MutableByteSpan{frames.data() + k * kStride, kStride}, CrcBackend::Isal);
      sealing = IcrcSealBatch{};
    }
  };
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
    psn = (psn + kRun) & 0xFFFFFF;
  }
  psn = 0x8C84DD;
  run();
  if (!std::equal(f.frame.begin(), f.frame.end(), frames.begin())) state.SkipWithError("frame differs from the fixture");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kRun));
}
BENCHMARK_CAPTURE(BM_SealRun, per_frame, RunSeal::PerFrame);
BENCHMARK_CAPTURE(BM_SealRun, batch, RunSeal::Batch);
BENCHMARK_CAPTURE(BM_SealRun, batch_isal, RunSeal::BatchIsal);
BENCHMARK_CAPTURE(BM_SealRun, after_writes, RunSeal::AfterWrites);

// One frame's ICRC on its own, as the protocol floor (bench/suite/protocol_cost.cpp) and the
// engine take it: "build_seal" is write_headers + place_and_seal with the engine's flow cache,
// "parse_verify" parse_frame with the cache checking the ICRC, "icrc" compute_icrc_linear
// alone. "clmul": a datagram of up to 256 bytes whole through crc32_short's kernel (the CPU's,
// where it has one: else the same as "isal"); "isal": the kernel turned off (crc32_short_use),
// the 12 look-ups and ISA-L (or the portable CRC for an ACK's 4 bytes) as before. The WRITE's
// payload is the argument, 0 the ACK (the floor's frames). The same frames and values either
// way (checked). "match_verify": a responder run's WRITE ONLY recognised by its flow's template
// instead of parsed (WriteOnlyTemplate::match, write_only_match.hpp: the header bytes compared,
// lengths, IPv4 checksum and ICRC from the flow's CRC state checked; docs/perf-changes.md
// section 82), payloads up to its limit, 200 bytes. "match_packet": a QP's flow template
// (FlowTemplate::match, section 87) making parse_frame's Packet of the ACK (0) or the WRITE ONLY
// (64) from the flow's image: the match and the Packet's fill, what the engine runs instead of
// parse_verify for such a frame. Issue 26's floor stays "parse_verify".
enum class Single { BuildSeal, ParseVerify, Icrc, MatchVerify, MatchPacket };

void BM_SingleFrame(benchmark::State& state, Single step, bool clmul) {
  const Fixture f(static_cast<std::size_t>(state.range(0)), true);
  const bool had = crc32_short_has_clmul();
  crc32_short_use(clmul);
  IcrcHeaderCache cache;
  ParseOptions po;
  po.mtu_rules = false;
  po.icrc_cache = &cache;
  Packet p;
  std::vector<std::byte> out(f.frame.size());
  const ByteSpan datagram = f.datagram();
  WriteOnlyTemplate flow;
  if (step == Single::MatchVerify && (parse_frame(f.frame, po, p) != ParseError::None || !flow.set(f.frame, p, po)))
    state.SkipWithError("no template");
  FlowTemplate packets;
  if (step == Single::MatchPacket && (parse_frame(f.frame, po, p) != ParseError::None || !packets.learn(f.frame, p, po)))
    state.SkipWithError("no template");
  MatchedWriteOnly matched;
  std::uint64_t sink = 0;
  for (auto _ : state) {
    if (step == Single::BuildSeal) {
      const FrameLayout l = write_headers(f.spec, static_cast<std::uint32_t>(f.payload.size()), out);
      place_and_seal(f.spec, l, out, CrcBackend::Isal, f.payload.data(), &cache);
      sink += l.length;
      benchmark::ClobberMemory();
    } else if (step == Single::ParseVerify) {
      sink += static_cast<unsigned>(parse_frame(f.frame, po, p));
      sink += static_cast<unsigned>(p.icrc_status);
    } else if (step == Single::MatchVerify) {
      sink += flow.match(f.frame, matched);
      benchmark::DoNotOptimize(matched);
    } else if (step == Single::MatchPacket) {
      sink += packets.match(f.frame, p);
      sink += p.payload_length;
      benchmark::ClobberMemory();
    } else {
      sink += compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, datagram);
    }
  }
  benchmark::DoNotOptimize(sink);
  if (step == Single::BuildSeal && out != f.frame) state.SkipWithError("frame differs from the builder's");
  if (parse_frame(f.frame, po, p) != ParseError::None || p.icrc_status != IcrcStatus::Ok) state.SkipWithError("ICRC not good");
  if (compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, datagram) != read_icrc(ByteSpan(f.frame).last(kIcrcBytes)))
    state.SkipWithError("ICRC differs from the frame's");
  if (step == Single::MatchVerify && (!flow.match(f.frame, matched) || matched.payload_length() != f.payload.size()))
    state.SkipWithError("the template did not match its own frame");
  if (step == Single::MatchPacket && (!packets.match(f.frame, p) || p.payload_length != f.payload.size()))
    state.SkipWithError("the template did not match its own frame");
  state.counters["kernel"] = crc32_short_has_clmul() ? 1 : 0;
  crc32_short_use(had);
  report(state, f.frame.size());
}
BENCHMARK_CAPTURE(BM_SingleFrame, build_seal_clmul, Single::BuildSeal, true)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, build_seal_isal, Single::BuildSeal, false)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, parse_verify_clmul, Single::ParseVerify, true)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, parse_verify_isal, Single::ParseVerify, false)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, icrc_clmul, Single::Icrc, true)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, icrc_isal, Single::Icrc, false)->ArgName("payload")->Arg(0)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK_CAPTURE(BM_SingleFrame, match_verify_clmul, Single::MatchVerify, true)->ArgName("payload")->Arg(64)->Arg(200);
BENCHMARK_CAPTURE(BM_SingleFrame, match_verify_isal, Single::MatchVerify, false)->ArgName("payload")->Arg(64)->Arg(200);
BENCHMARK_CAPTURE(BM_SingleFrame, match_packet_clmul, Single::MatchPacket, true)->ArgName("payload")->Arg(0)->Arg(64);
BENCHMARK_CAPTURE(BM_SingleFrame, match_packet_isal, Single::MatchPacket, false)->ArgName("payload")->Arg(0)->Arg(64);

// Copies exactly the bytes the ICRC reads, so GB/s figures compare one to one.
void BM_Memcpy(benchmark::State& state) {
  const Fixture f(static_cast<std::size_t>(state.range(0)));
  const ByteSpan d = f.datagram();
  std::vector<std::byte> out(d.size());
  for (auto _ : state) {
    std::memcpy(out.data(), d.data(), d.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, d.size());
}
BENCHMARK(BM_Memcpy)->ArgName("payload")->Arg(64)->Arg(1024)->Arg(4096);

}  // namespace
}  // namespace roce::proto

// --icrc-clmul=off: the carry-less kernel off for the whole run (crc32_short_use), so that every
// benchmark's ICRC is ISA-L's as on a CPU without AVX-512: the same binary's A/B.
int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--icrc-clmul=off" || a == "--icrc-clmul=on") roce::proto::crc32_short_use(a.ends_with("on"));
    else argv[kept++] = argv[i];
  }
  argc = kept;
  std::fprintf(stderr, "crc32_short kernel: %s\n", roce::proto::crc32_short_has_clmul() ? "on" : "off");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
