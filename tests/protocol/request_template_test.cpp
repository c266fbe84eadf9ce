// The request template writes what write_headers() and seal() write from the same FrameSpec, byte
// for byte, for every request opcode, IPv4 and IPv6 (with and without Ethernet, with VLAN tags),
// every pad, PSNs across the wrap, SE and AckReq, both ICRC methods and both sealing paths.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "protocol/parser.hpp"
#include "protocol/request_template.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::request_template_test {
namespace {

FrameSpec path_v4() {
  FrameSpec s;
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.ipv4.src = {10, 1, 2, 3};
  s.ipv4.dst = {10, 1, 2, 4};
  s.ipv4.ttl = 61;
  s.ipv4.id = 0x1234;
  s.set_ecn(Ecn::Ect0);
  s.ipv4.tos |= 26 << 2;  // a DSCP
  s.udp_src_port = 0xC0DE;
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0xABCDEF);
  return s;
}

FrameSpec path_v6() {
  FrameSpec s = path_v4();
  s.ip_version = IpVersion::V6;
  s.ipv6.src = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
  s.ipv6.dst = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  s.ipv6.traffic_class = 0x6A;
  s.ipv6.flow_label = 0xB1234;
  s.ipv6.hop_limit = 7;
  return s;
}

std::vector<std::pair<const char*, FrameSpec>> paths() {
  std::vector<std::pair<const char*, FrameSpec>> out{{"ipv4", path_v4()}, {"ipv6", path_v6()}};
  FrameSpec vlan = path_v4();
  vlan.eth.vlan_count = 1;
  vlan.eth.vlan_tpid = {kEtherTypeVlan, 0};
  vlan.eth.vlan_tci = {0x2005, 0};
  out.emplace_back("ipv4 one VLAN tag", vlan);
  FrameSpec qinq = path_v6();
  qinq.eth.vlan_count = 2;
  qinq.eth.vlan_tpid = {kEtherTypeQinQ, kEtherTypeVlan};
  qinq.eth.vlan_tci = {0x0064, 0x3007};
  out.emplace_back("ipv6 two VLAN tags", qinq);
  FrameSpec bare = path_v4();
  bare.with_ethernet = false;
  out.emplace_back("ipv4 without Ethernet", bare);
  FrameSpec marked = path_v6();
  marked.bth.set_mig_req(true);
  marked.bth.set_becn(true);
  marked.bth.flags |= 0x03;  // a TVer other than 0
  out.emplace_back("ipv6, MigReq, BECN, TVer", marked);
  return out;
}

ExtHeaders random_ext(std::mt19937& rng) {
  ExtHeaders e;
  auto* b = reinterpret_cast<std::uint8_t*>(&e);
  for (std::size_t i = 0; i < sizeof e; ++i) b[i] = static_cast<std::uint8_t>(rng());
  return e;
}

struct Built {
  FrameLayout layout;
  std::vector<std::byte> frame;
};

constexpr std::size_t kBuffer = 4200;

// The builder's frame: the path with the per-frame fields set as the requester sets them.
Built by_builder(const FrameSpec& path, const RequestFields& f, const ExtHeaders& ext, const std::byte* payload,
                 IcrcHeaderCache* cache, bool copy_first) {
  FrameSpec spec = path;
  spec.ext = ext;
  spec.bth.opcode = f.opcode;
  spec.bth.psn.set(f.psn);
  if (f.solicited) spec.bth.set_se(true);
  spec.bth.set_ack_requested(f.ack_requested);
  Built b{{}, std::vector<std::byte>(kBuffer, std::byte{0x77})};
  b.layout = write_headers(spec, f.payload_length, b.frame);
  if (!b.layout.ok()) return b;
  if (copy_first) {
    std::memcpy(b.frame.data() + b.layout.payload_offset, payload, f.payload_length);
    seal(spec, b.layout, b.frame, CrcBackend::Isal, cache);
  } else {
    place_and_seal(spec, b.layout, b.frame, CrcBackend::Isal, payload, cache);
  }
  return b;
}

Built by_template(const RequestTemplate& t, const RequestFields& f, const ExtHeaders& ext, const std::byte* payload,
                  bool copy_first) {
  Built b{{}, std::vector<std::byte>(kBuffer, std::byte{0x77})};
  b.layout = t.write_headers(f, ext, b.frame);
  if (!b.layout.ok()) return b;
  if (copy_first) {
    std::memcpy(b.frame.data() + b.layout.payload_offset, payload, f.payload_length);
    t.seal(b.layout, b.frame, CrcBackend::Isal);
  } else {
    t.place_and_seal(b.layout, b.frame, CrcBackend::Isal, payload);
  }
  return b;
}

void expect_same(const Built& a, const Built& b, const std::string& what) {
  ASSERT_EQ(a.layout.error, b.layout.error) << what;
  EXPECT_EQ(a.layout.l3_offset, b.layout.l3_offset) << what;
  EXPECT_EQ(a.layout.payload_offset, b.layout.payload_offset) << what;
  EXPECT_EQ(a.layout.payload_length, b.layout.payload_length) << what;
  EXPECT_EQ(a.layout.pad, b.layout.pad) << what;
  EXPECT_EQ(a.layout.length, b.layout.length) << what;
  if (a.frame != b.frame)
    ADD_FAILURE() << what << "\nbuilder  " << test::to_hex(a.frame.data(), a.layout.length) << "\ntemplate "
                  << test::to_hex(b.frame.data(), b.layout.length);
}

TEST(RequestTemplate, WritesTheBuildersBytesForEveryRequestOpcode) {
  std::mt19937 rng(12);
  std::vector<std::byte> payload(4096);
  for (auto& x : payload) x = std::byte{static_cast<std::uint8_t>(rng())};
  const std::uint32_t lengths[] = {0, 1, 2, 3, 4, 5, 61, 62, 63, 64, 255, 256, 1023, 1024, 2048, 4093, 4096, 4097};
  const std::uint32_t psns[] = {0, 1, 0x7FFFFF, 0xFFFFFE, 0xFFFFFF, 0x1000005 /* past the wrap: masked */};
  ASSERT_FALSE(opcode_info(std::uint8_t{0x1F}).valid);
  ASSERT_FALSE(opcode_info(std::uint8_t{0xFE}).valid);
  std::size_t compared = 0, frames = 0;
  for (const auto& [name, path] : paths()) {
    for (bool linear : {true, false}) {
      RequestTemplate t;
      ASSERT_TRUE(t.build(path, CrcBackend::Isal, linear)) << name;
      IcrcHeaderCache cache;
      for (int op = 0; op < 256; ++op) {
        // Every request opcode, and two that are no opcode (refused alike).
        const OpcodeInfo& info = opcode_info(static_cast<std::uint8_t>(op));
        if (!(info.valid && info.is_request) && op != 0x1F && op != 0xFE) continue;
        for (std::uint32_t len : lengths) {
          for (std::uint32_t psn : psns) {
            const int flags = static_cast<int>(rng() % 4);
            const RequestFields f{static_cast<std::uint8_t>(op), psn, (flags & 1) != 0, (flags & 2) != 0, len};
            const ExtHeaders ext = random_ext(rng);
            const bool copy_first = rng() % 2;
            const Built a = by_builder(path, f, ext, payload.data(), linear ? &cache : nullptr, copy_first);
            const Built b = by_template(t, f, ext, payload.data(), copy_first);
            expect_same(a, b,
                        std::string(name) + (linear ? " linear" : " plain") + " op " + std::to_string(op) + " len " +
                            std::to_string(len) + " psn " + std::to_string(psn));
            ++compared;
            if (a.layout.ok()) ++frames;
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  // Most combinations made a frame (the rest compared their refusals).
  EXPECT_GT(frames, compared / 3) << frames << " frames of " << compared;
}

// A requester run's image (make_image, write_from_image) against write_headers: every opcode
// byte, payloads about the path MTU and past the IP length's limit, a path MTU of 1024 and of 0
// (any IBA MTU), validation on and off, SE and AckReq, and a buffer one byte short: the same
// layout or error, and the same bytes in the whole buffer. One image writes several frames
// (PSNs and extension headers of their own), and fits exactly the fields it was made for.
TEST(RequestTemplate, AnImageWritesWriteHeadersBytesForEveryFrameItFits) {
  std::mt19937 rng(19);
  const std::uint32_t lengths[] = {0, 1, 3, 64, 1024, 1025, 4096, 4097, 70000};
  std::vector<std::byte> a(kBuffer), b(kBuffer);
  std::size_t compared = 0, frames = 0, refused = 0;
  for (auto [name, path] : paths()) {
    for (std::uint32_t pmtu : {1024u, 0u}) {
      for (bool validate : {true, false}) {
        path.pmtu = pmtu;
        path.validate = validate;
        RequestTemplate t;
        ASSERT_TRUE(t.build(path, CrcBackend::Isal, true)) << name;
        RequestTemplate::Image image;
        for (int op = 0; op < 256; ++op) {
          for (std::uint32_t len : lengths) {
            RequestFields f{static_cast<std::uint8_t>(op), static_cast<std::uint32_t>(rng()), rng() % 2 == 0,
                            rng() % 2 == 0, len};
            // The last image was made for another opcode or length (or none yet).
            EXPECT_FALSE(image.fits(f));
            t.make_image(f, image);
            EXPECT_TRUE(image.fits(f));
            {
              // Each field of the key on its own makes it not fit; the PSN does not.
              RequestFields g = f;
              g.opcode = static_cast<std::uint8_t>(g.opcode + 1);
              EXPECT_FALSE(image.fits(g));
              g = f;
              g.payload_length += 4;
              EXPECT_FALSE(image.fits(g));
              g = f;
              g.solicited = !g.solicited;
              EXPECT_FALSE(image.fits(g));
              g = f;
              g.ack_requested = !g.ack_requested;
              EXPECT_FALSE(image.fits(g));
              g = f;
              g.psn ^= 0x5A5A5A;
              EXPECT_TRUE(image.fits(g)) << "the PSN is per frame";
            }
            for (int frame = 0; frame < 3; ++frame) {
              f.psn = static_cast<std::uint32_t>(rng());
              const ExtHeaders ext = random_ext(rng);
              for (bool short_buffer : {false, true}) {
                const FrameLayout probe = t.write_headers(f, ext, a);
                const std::size_t size = short_buffer && probe.ok() ? probe.length - 1 : a.size();
                std::fill(a.begin(), a.end(), std::byte{0x77});
                std::fill(b.begin(), b.end(), std::byte{0x77});
                const FrameLayout la = t.write_headers(f, ext, MutableByteSpan{a.data(), size});
                const BuildError eb = t.write_from_image(image, f.psn, ext, MutableByteSpan{b.data(), size});
                const std::string what = std::string(name) + " pmtu " + std::to_string(pmtu) +
                                         (validate ? "" : " unvalidated") + " op " + std::to_string(op) + " len " +
                                         std::to_string(len) + " frame " + std::to_string(frame) +
                                         (short_buffer ? " short buffer" : "");
                ASSERT_EQ(la.error, eb) << what;
                if (la.ok()) {
                  const FrameLayout& lb = image.layout();
                  EXPECT_EQ(la.l3_offset, lb.l3_offset) << what;
                  EXPECT_EQ(la.payload_offset, lb.payload_offset) << what;
                  EXPECT_EQ(la.payload_length, lb.payload_length) << what;
                  EXPECT_EQ(la.pad, lb.pad) << what;
                  EXPECT_EQ(la.length, lb.length) << what;
                }
                ASSERT_TRUE(a == b) << what << "\nwrite_headers " << test::to_hex(a.data(), 100) << "\nimage         "
                                    << test::to_hex(b.data(), 100);
                ++compared;
                if (la.ok()) ++frames;
                else ++refused;
              }
            }
          }
        }
      }
    }
  }
  // Both outcomes were compared, many times each.
  EXPECT_GT(frames, compared / 25) << frames << " frames of " << compared;  // most opcode bytes are no request
  EXPECT_GT(refused, compared / 4) << refused << " refusals of " << compared;
}

TEST(RequestTemplate, FramesParseWithTheirFieldsAndAGoodIcrc) {
  RequestTemplate t;
  const FrameSpec path = path_v6();
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  std::vector<std::byte> payload(64, std::byte{0x5A});
  ExtHeaders ext;
  ext.reth = Reth{Be64::of(0x1122334455667788), Be32::of(0xCAFE), Be32::of(64)};
  const Built b = by_template(t, RequestFields{raw(Opcode::RcWriteOnly), 0xFFFFFF, false, true, 63}, ext, payload.data(), false);
  ASSERT_TRUE(b.layout.ok());
  Packet p;
  ASSERT_EQ(parse_frame(std::span{b.frame}.first(b.layout.length), {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  EXPECT_EQ(p.psn(), 0xFFFFFFu);
  EXPECT_TRUE(p.bth.ack_requested());
  EXPECT_EQ(p.bth.pad_count(), 1);
  EXPECT_EQ(p.payload_length, 63u);
  EXPECT_EQ(p.ext.reth.va.get(), 0x1122334455667788u);
  EXPECT_EQ(p.ipv6.flow_label, 0xB1234u);
  EXPECT_EQ(p.udp_src_port, 0xC0DE);
}

// A template is the path it was built from: after the path changes (a new traffic class, source
// port, destination), frames from the old template differ and a rebuilt one matches again.
TEST(RequestTemplate, ARebuiltTemplateFollowsAChangedPath) {
  FrameSpec path = path_v4();
  RequestTemplate t;
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  std::vector<std::byte> payload(64, std::byte{0x11});
  ExtHeaders ext;
  const RequestFields f{raw(Opcode::RcSendOnly), 9, false, true, 64};
  IcrcHeaderCache cache;
  expect_same(by_builder(path, f, ext, payload.data(), &cache, false), by_template(t, f, ext, payload.data(), false), "before");
  path.ipv4.tos = static_cast<std::uint8_t>(46 << 2 | 1);
  path.udp_src_port = 0xD00D;
  path.ipv4.dst = {10, 9, 9, 9};
  const Built changed = by_builder(path, f, ext, payload.data(), &cache, false);
  EXPECT_NE(changed.frame, by_template(t, f, ext, payload.data(), false).frame);
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  expect_same(changed, by_template(t, f, ext, payload.data(), false), "rebuilt");
}

// The template's own image (image_for, a requester run's) is made once for fields that keep
// fitting it, made again for others, and forgotten when the template is built again for another
// path or cleared: the headers then are the new path's.
TEST(RequestTemplate, ItsImageIsKeptForTheSameFieldsAndForgottenWhenRebuilt) {
  FrameSpec path = path_v4();
  RequestTemplate t;
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  ExtHeaders ext;
  ext.reth = Reth{Be64::of(0x1122334455667788), Be32::of(0x99), Be32::of(64)};
  const std::uint8_t op = raw(Opcode::RcWriteOnly);
  std::vector<std::byte> a(kBuffer), b(kBuffer);
  const auto same_as_write_headers = [&](const RequestTemplate::Image& image, std::uint32_t psn, std::uint32_t len,
                                         const char* what) {
    std::fill(a.begin(), a.end(), std::byte{0x77});
    std::fill(b.begin(), b.end(), std::byte{0x77});
    const FrameLayout l = t.write_headers(RequestFields{op, psn, false, true, len}, ext, a);
    ASSERT_TRUE(l.ok()) << what;
    ASSERT_EQ(t.write_from_image(image, psn, ext, b), BuildError::None) << what;
    EXPECT_EQ(image.layout().length, l.length) << what;
    EXPECT_TRUE(a == b) << what << "\nwrite_headers " << test::to_hex(a.data(), l.payload_offset) << "\nimage         "
                        << test::to_hex(b.data(), l.payload_offset);
  };
  const RequestTemplate::Image* first = &t.image_for(op, false, true, 64);
  same_as_write_headers(*first, 5, 64, "first");
  EXPECT_EQ(&t.image_for(op, false, true, 64), first) << "one image a template";
  same_as_write_headers(t.image_for(op, false, true, 64), 6, 64, "the same fields again");
  same_as_write_headers(t.image_for(op, false, true, 100), 7, 100, "another length");
  same_as_write_headers(t.image_for(op, false, true, 64), 8, 64, "back");
  // Rebuilt for another path: the image held the old path's addresses and checksum.
  path.ipv4.dst = {10, 9, 9, 9};
  path.udp_src_port = 0xD00D;
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  same_as_write_headers(t.image_for(op, false, true, 64), 9, 64, "rebuilt");
  t.clear();
  path.ipv4.dst = {10, 9, 9, 10};
  ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
  same_as_write_headers(t.image_for(op, false, true, 64), 10, 64, "cleared and rebuilt");
}

// write_headers stores a RETH alone, or no extension header, without walking every header kind;
// every other set of headers goes the walk. Each kind of opcode, with every extension header's
// bytes distinct: the builder's bytes, and the parsed frame shows the headers its opcode has (a
// RETH with an immediate is not a RETH alone: its immediate is there).
TEST(RequestTemplate, ARethAloneNoHeaderAndTheRestAreTheBuildersBytes) {
  std::mt19937 rng(26);
  std::vector<std::byte> payload(256, std::byte{0x3C});
  std::size_t reth_alone = 0, none = 0, other = 0;
  for (const auto& [name, path] : paths()) {
    RequestTemplate t;
    ASSERT_TRUE(t.build(path, CrcBackend::Isal, true)) << name;
    IcrcHeaderCache cache;
    for (const Opcode op : {Opcode::RcWriteOnly, Opcode::RcWriteFirst, Opcode::RcReadRequest, Opcode::UcWriteOnly,
                            Opcode::RcSendOnly, Opcode::RcSendFirst, Opcode::RcSendMiddle, Opcode::RcWriteOnlyImm,
                            Opcode::RcSendOnlyImm, Opcode::RcSendOnlyInv, Opcode::RcCmpSwap}) {
      const OpcodeInfo& info = opcode_info(op);
      // FIRST and MIDDLE carry a whole path MTU (pmtu 0: any IBA MTU, 256 the smallest).
      const std::uint32_t len = info.payload == PayloadRule::None ? 0 : info.payload == PayloadRule::ExactPmtu ? 256 : 64;
      const RequestFields f{raw(op), 0x123456, false, true, len};
      const ExtHeaders ext = random_ext(rng);
      const std::string what = std::string(name) + " " + info.name;
      const Built b = by_template(t, f, ext, payload.data(), false);
      expect_same(by_builder(path, f, ext, payload.data(), &cache, false), b, what);
      ASSERT_TRUE(b.layout.ok()) << what;
      if (info.headers == header_bit(ExtHeader::Reth)) ++reth_alone;
      else if (info.headers == 0) ++none;
      else ++other;
      // parse_frame takes Ethernet frames of transport version 0 (the BTH flags' low four bits).
      if (!path.with_ethernet || (path.bth.flags & 0x0Fu) != 0) continue;
      Packet p;
      ASSERT_EQ(parse_frame(std::span{b.frame}.first(b.layout.length), {}, p), ParseError::None) << what;
      if (info.has(ExtHeader::Reth)) {
        EXPECT_EQ(std::memcmp(&p.ext.reth, &ext.reth, sizeof ext.reth), 0) << what;
      }
      if (info.has(ExtHeader::ImmDt)) {
        EXPECT_EQ(std::memcmp(&p.ext.imm, &ext.imm, sizeof ext.imm), 0) << what;
      }
      if (info.has(ExtHeader::Ieth)) {
        EXPECT_EQ(std::memcmp(&p.ext.ieth, &ext.ieth, sizeof ext.ieth), 0) << what;
      }
      if (info.has(ExtHeader::AtomicEth)) {
        EXPECT_EQ(std::memcmp(&p.ext.atomic, &ext.atomic, sizeof ext.atomic), 0) << what;
      }
    }
  }
  EXPECT_GT(reth_alone, 0u);
  EXPECT_GT(none, 0u);
  EXPECT_GT(other, 0u);
}

TEST(RequestTemplate, RefusesAPathWithPerFrameBthBitsSet) {
  FrameSpec path = path_v4();
  RequestTemplate t;
  path.bth.set_ack_requested(true);
  EXPECT_FALSE(t.build(path, CrcBackend::Isal, true));
  EXPECT_FALSE(t.ready());
  path.bth.set_ack_requested(false);
  path.bth.set_se(true);
  EXPECT_FALSE(t.build(path, CrcBackend::Isal, true));
  path.bth.set_se(false);
  EXPECT_TRUE(t.build(path, CrcBackend::Isal, true));
  EXPECT_TRUE(t.ready());
  t.clear();
  EXPECT_FALSE(t.ready());
}

}  // namespace
}  // namespace roce::proto::request_template_test
