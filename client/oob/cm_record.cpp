#include "client/oob/cm_record.hpp"

#include <cerrno>
#include <cstring>

#include "protocol/be.hpp"

namespace roce::client {

namespace {

struct CmRecordWire {
  proto::Be32 lid, out_reads, qpn, psn, rkey;
  std::array<std::byte, 4> padding;  // before the 8-byte aligned vaddr
  proto::Be64 vaddr;
  std::array<std::uint8_t, 16> gid;
  proto::Be32 srqn, gid_index;
};
static_assert(sizeof(CmRecordWire) == kPerftestCmRecordBytes);
static_assert(offsetof(CmRecordWire, vaddr) == 24 && offsetof(CmRecordWire, gid) == 32 &&
              offsetof(CmRecordWire, srqn) == 48);

}  // namespace

std::array<std::byte, kPerftestCmRecordBytes> format_perftest_cm(const PerftestDest& d, std::int32_t gid_index) {
  CmRecordWire w{};
  w.lid = proto::Be32::of(d.lid);
  w.out_reads = proto::Be32::of(d.out_reads);
  w.qpn = proto::Be32::of(d.qpn);
  w.psn = proto::Be32::of(d.psn);
  w.rkey = proto::Be32::of(d.rkey);
  w.vaddr = proto::Be64::of(d.vaddr);
  std::memcpy(w.gid.data(), d.gid.raw, w.gid.size());
  w.srqn = proto::Be32::of(d.srqn);
  w.gid_index = proto::Be32::of(static_cast<std::uint32_t>(gid_index));
  std::array<std::byte, kPerftestCmRecordBytes> out{};
  std::memcpy(out.data(), &w, sizeof w);
  return out;
}

Result<PerftestDest> parse_perftest_cm(std::span<const std::byte> message) {
  if (message.size() != kPerftestCmRecordBytes)
    return make_error(EPROTO, "a perftest -R QP record is " + std::to_string(kPerftestCmRecordBytes) + " bytes, not " +
                                  std::to_string(message.size()));
  CmRecordWire w;
  std::memcpy(&w, message.data(), sizeof w);
  PerftestDest d;
  // perftest's LID and OUT_READS are ints; the text record has room for 16 bits of each.
  if (w.lid.get() > 0xFFFF || w.out_reads.get() > 0xFFFF)
    return make_error(EPROTO, "a perftest -R QP record with LID " + std::to_string(w.lid.get()) + " and OUT_READS " +
                                  std::to_string(w.out_reads.get()) + " (each 0..65535)");
  d.lid = static_cast<std::uint16_t>(w.lid.get());
  d.out_reads = static_cast<std::uint16_t>(w.out_reads.get());
  d.qpn = w.qpn.get();
  d.psn = w.psn.get();
  d.rkey = w.rkey.get();
  d.vaddr = w.vaddr.get();
  std::memcpy(d.gid.raw, w.gid.data(), w.gid.size());
  d.srqn = w.srqn.get();
  d.has_gid = true;
  return d;
}

}  // namespace roce::client
