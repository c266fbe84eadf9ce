// Issue 26: zero-copy transmit, measured on the sending side before it is built into the
// engine. Per 4 KiB WRITE packet (4 KiB MTU), what the requester and its worker do today: an
// mbuf per frame, headers written, the payload copied in from the memory region with its ICRC
// share computed as it is copied (place_and_seal), the frame freed after transmission. Against
// what zero-copy transmit would do: headers written into an mbuf, the payload left in the
// region and referenced by a second mbuf (rte_pktmbuf_attach_extbuf, the region's shared info
// counting the mbufs in flight, the MR lifetime rule of docs/perf-changes.md section 28), the
// ICRC still computed over the payload where it is and put in a third mbuf, the three chained,
// and the chain freed after transmission (the region's count back down). Bursts of 32 as the
// worker builds them; the payload either one hot 4 KiB source (as the goodput case sends from)
// or sweeping a buffer larger than the LLC (data the application wrote long ago). The first
// frame of each is checked byte for byte against the other's.
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/suite/big_buffer.hpp"
#include "bench/suite/cases.hpp"
#include "bench/suite/frames.hpp"
#include "protocol/builder.hpp"
#include "protocol/crc32.hpp"
#include "protocol/icrc.hpp"
#include "protocol/icrc_linear.hpp"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr unsigned kBurst = 32;
constexpr std::uint32_t kPayload = 4096;
constexpr std::uint16_t kRoom = 4096 + 512;

proto::FrameSpec middle_spec() {
  proto::FrameSpec s;
  s.eth.src = kDutMac;
  s.eth.dst = kPeerMac;
  s.ipv4.src = kDutIp;
  s.ipv4.dst = kPeerIp;
  s.udp_src_port = 0xC0DE;
  s.bth.opcode = proto::raw(proto::Opcode::RcWriteMiddle);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(kPeerQpn);
  s.bth.psn.set(0x123456);
  return s;
}

// The region's shared info: one reference held by the region itself, one per mbuf in flight;
// the callback would complete a deregistration waiting for the count (never reached here, the
// region outlives the case).
void region_released(void*, void* opaque) { *static_cast<bool*>(opaque) = true; }

struct Sender {
  rte_mempool* pool = nullptr;
  proto::FrameSpec spec = middle_spec();
  proto::IcrcHeaderCache cache;
  rte_mbuf_ext_shared_info shinfo{};
  bool released = false;
  std::uint32_t psn = 0;

  // The payload copied into the frame's mbuf (today's path).
  bool copy_burst(const std::byte* const* payloads) {
    std::array<rte_mbuf*, kBurst> m;
    if (rte_pktmbuf_alloc_bulk(pool, m.data(), kBurst) != 0) return false;
    for (unsigned i = 0; i < kBurst; ++i) {
      spec.bth.psn.set(psn++ & 0xFFFFFF);
      const proto::MutableByteSpan out{rte_pktmbuf_mtod(m[i], std::byte*), kRoom};
      const proto::FrameLayout l = proto::write_headers(spec, kPayload, out);
      proto::place_and_seal(spec, l, out, proto::CrcBackend::Isal, payloads[i], &cache);
      m[i]->data_len = static_cast<std::uint16_t>(l.length);
      m[i]->pkt_len = static_cast<std::uint32_t>(l.length);
    }
    rte_pktmbuf_free_bulk(m.data(), kBurst);  // the TX completion
    return true;
  }

  // The payload referenced where it is: headers, payload and ICRC in three chained mbufs.
  bool zero_copy_burst(std::byte* const* payloads, rte_mbuf** keep = nullptr) {
    std::array<rte_mbuf*, 3 * kBurst> m;
    if (rte_pktmbuf_alloc_bulk(pool, m.data(), 3 * kBurst) != 0) return false;
    for (unsigned i = 0; i < kBurst; ++i) {
      rte_mbuf* h = m[3 * i];
      rte_mbuf* e = m[3 * i + 1];
      rte_mbuf* t = m[3 * i + 2];
      spec.bth.psn.set(psn++ & 0xFFFFFF);
      const proto::MutableByteSpan out{rte_pktmbuf_mtod(h, std::byte*), kRoom};
      const proto::FrameLayout l = proto::write_headers(spec, kPayload, out);
      const std::size_t upto = l.payload_offset - l.l3_offset;
      std::uint32_t c = proto::icrc_prefix_linear(cache, proto::CrcBackend::Isal, spec.ip_version, out.subspan(l.l3_offset, upto), upto);
      c = proto::crc32(proto::CrcBackend::Isal, c, payloads[i], kPayload);
      h->data_len = static_cast<std::uint16_t>(l.payload_offset);
      h->pkt_len = h->data_len;
      rte_mbuf_ext_refcnt_update(&shinfo, 1);
      rte_pktmbuf_attach_extbuf(e, payloads[i], RTE_BAD_IOVA, static_cast<std::uint16_t>(kPayload), &shinfo);
      e->data_off = 0;
      e->data_len = static_cast<std::uint16_t>(kPayload);
      e->pkt_len = kPayload;
      proto::write_icrc({rte_pktmbuf_mtod(t, std::byte*), proto::kIcrcBytes}, c);
      t->data_len = proto::kIcrcBytes;
      t->pkt_len = proto::kIcrcBytes;
      if (rte_pktmbuf_chain(h, e) != 0 || rte_pktmbuf_chain(h, t) != 0) return false;
      if (keep) keep[i] = h;
    }
    if (keep) return true;
    std::array<rte_mbuf*, kBurst> heads;
    for (unsigned i = 0; i < kBurst; ++i) heads[i] = m[3 * i];
    rte_pktmbuf_free_bulk(heads.data(), kBurst);  // the TX completion: each chain, extbuf count included
    return true;
  }
};

// The first frame of each path, byte for byte (the chain read out linearly).
bool same_frames(Sender& s, std::byte* payload) {
  std::array<std::byte*, kBurst> p;
  p.fill(payload);
  std::array<rte_mbuf*, kBurst> chains{};
  const std::uint32_t psn0 = s.psn;
  if (!s.zero_copy_burst(p.data(), chains.data())) return false;
  std::vector<std::byte> linear(rte_pktmbuf_pkt_len(chains[0]));
  const void* got = rte_pktmbuf_read(chains[0], 0, static_cast<std::uint32_t>(linear.size()), linear.data());
  bool ok = got != nullptr && chains[0]->nb_segs == 3;
  if (ok && got != linear.data()) std::memcpy(linear.data(), got, linear.size());
  rte_pktmbuf_free_bulk(chains.data(), kBurst);
  std::vector<std::byte> copied(kRoom);
  s.spec.bth.psn.set(psn0 & 0xFFFFFF);
  const proto::FrameLayout l = proto::write_headers(s.spec, kPayload, copied);
  proto::place_and_seal(s.spec, l, copied, proto::CrcBackend::Isal, payload, &s.cache);
  return ok && l.length == linear.size() && std::memcmp(copied.data(), linear.data(), l.length) == 0;
}

}  // namespace

bool zero_copy_transmit(const SuiteConfig& c, Results& out) {
  const std::string name = "bszc" + std::to_string(getpid());
  Sender s;
  s.pool = rte_pktmbuf_pool_create(name.c_str(), 4 * kBurst * 3 - 1, 0, 0, kRoom + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  if (s.pool == nullptr) {
    std::fprintf(stderr, "zero copy: mbuf pool: %s\n", rte_strerror(rte_errno));
    return false;
  }
  s.shinfo.free_cb = region_released;
  s.shinfo.fcb_opaque = &s.released;
  rte_mbuf_ext_refcnt_set(&s.shinfo, 1);  // the region's own reference
  std::span<std::byte> big = big_buffers(c.big_bytes).a;
  bool ok = same_frames(s, big.data());
  if (!ok) std::fprintf(stderr, "zero copy: the chained frame differs from the copied one\n");
  const std::uint64_t slots = big.size() / kPayload;
  std::uint64_t slot = 0;
  for (const bool sweep : {false, true}) {
    Figure copy{"zero_copy_tx", {}, "ns/frame", {}, {}}, zc = copy, ratio{"zero_copy_tx_vs_copy", {}, "ratio", {}, {}};
    const char* source = sweep ? "swept (cold)" : "hot";
    copy.with("path", "copy into the mbuf").with("payload", kPayload).with("source", source);
    zc.with("path", "extbuf over the region").with("payload", kPayload).with("source", source);
    ratio.with("payload", kPayload).with("source", source);
    for (unsigned run = 0; ok && run <= c.runs; ++run) {  // run 0 warms up
      // Each window's figure is the median burst: on this shared machine a burst the thread
      // was descheduled in, or whose caches another job took, lands in the tail.
      std::vector<double> ns[2];
      const auto w0 = Clock::now();
      do {
        for (int path = 0; path < 2 && ok; ++path) {  // the two take turns burst by burst
          std::array<std::byte*, kBurst> p;
          for (auto& q : p) q = sweep ? big.data() + (slot++ % slots) * kPayload : big.data();
          const auto t0 = Clock::now();
          ok = path == 0 ? s.copy_burst(p.data()) : s.zero_copy_burst(p.data());
          ns[path].push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kBurst);
        }
      } while (ok && std::chrono::duration<double>(Clock::now() - w0).count() < c.window);
      if (run == 0) continue;
      for (auto& v : ns) std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      copy.samples.push_back(ns[0][ns[0].size() / 2]);
      zc.samples.push_back(ns[1][ns[1].size() / 2]);
      ratio.samples.push_back(zc.samples.back() / copy.samples.back());
    }
    if (!ok) break;
    std::fprintf(stderr, "  zero copy tx, 4 KiB, %s source: copy %.0f ns, extbuf %.0f ns a frame (%.2f)\n", source, copy.median(),
                 zc.median(), ratio.median());
    out.add(std::move(copy));
    out.add(std::move(zc));
    out.add(std::move(ratio));
  }
  // Every chain was freed: only the region's own reference is left.
  if (ok && rte_mbuf_ext_refcnt_read(&s.shinfo) != 1) {
    std::fprintf(stderr, "zero copy: %u references left on the region\n", rte_mbuf_ext_refcnt_read(&s.shinfo));
    ok = false;
  }
  rte_mempool_free(s.pool);
  return ok && !s.released;
}

}  // namespace roce::bench
