// What a replay sets up before the capture's frames arrive: our address, the QPs with their
// QPNs and PSNs, memory regions with the keys and addresses the capture's requests use,
// receives, requester work requests, and what to check afterwards. Read from a small text file
// (docs/replay.md gives the format) or derived from a capture (derive.hpp).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/cc/notification_point.hpp"
#include "lib/rdma/address.hpp"
#include "lib/status.hpp"
#include "lib/time.hpp"

namespace roce::replay {

struct QpSpec {
  std::string name;
  ibv_qp_type type = IBV_QPT_RC;
  std::uint32_t qpn = 0x11;
  bool rts = true;  // false: left in RTR, a responder only (responses to it are dropped)
  std::uint32_t peer_qpn = 0;
  rdma::IpAddress peer_ip{};
  proto::MacAddr peer_mac{};
  std::uint32_t rq_psn = 0;
  std::uint32_t sq_psn = 0;
  std::uint32_t mtu = 1024;
  int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  std::uint8_t max_dest_rd_atomic = 4;
  std::uint8_t max_rd_atomic = 4;
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 7;
  std::uint8_t rnr_retry = 7;
  std::uint32_t qkey = 0;
  std::uint8_t traffic_class = 0;
  int line = 0;
};

enum class Fill : std::uint8_t {
  Zero,
  Pattern,  // byte i = (i * 7 + 3) mod 256: distinct neighbours, so a shifted READ shows
  Byte,     // every byte = fill_byte
};

struct MrSpec {
  std::string name;
  std::uint64_t size = 4096;
  Fill fill = Fill::Zero;
  std::uint8_t fill_byte = 0;
  std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> bytes;  // (offset, data) laid over the fill
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  std::optional<std::uint32_t> rkey;  // the key the capture's requests carry for this region
  std::uint64_t va = 0;               // the address the capture's requests use for byte 0
  int line = 0;
};

struct RecvSpec {
  std::string qp;
  std::uint32_t count = 1;
  std::uint32_t size = 4096;
  Nanos at = 0;  // posted this long after the start
  int line = 0;
};

struct WrSpec {
  std::string name;
  std::string qp;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  std::string mr;             // local memory (name of an [mr]); empty for a zero-length request
  std::uint64_t offset = 0;   // into that region
  std::uint32_t length = 0;
  std::uint64_t remote_va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t imm = 0;      // immediate data, as it appears on the wire
  std::uint64_t compare_add = 0;
  std::uint64_t swap = 0;
  bool signaled = true;
  Nanos at = 0;
  int line = 0;
};

// How an output frame is held against the expected one; docs/replay.md explains each.
struct CompareOptions {
  bool timing = true;          // timestamps must agree to the microsecond
  bool credits = true;         // ACK credit codes must agree (else only the ACK type is compared)
  bool coalesce_acks = false;  // an ACK that a later response on the other side covers may be absent
  std::uint32_t max_diffs = 10;
  // Responses to these QPs: the expected MSN is ours plus this (mod 2^24). A capture that
  // starts mid-connection shows a responder that had completed messages before it began.
  std::map<std::uint32_t, std::uint32_t> msn_offset;
};

struct Scenario {
  std::string source;              // file name, for messages
  std::optional<Nanos> start;      // time origin (ns since the epoch); default: the first input frame
  Nanos tail = 0;                  // timers keep running this long after the last frame
  rdma::LocalAddress local{};
  bool dcqcn = false;
  cc::NpParams np{};
  std::vector<QpSpec> qps;
  std::vector<MrSpec> mrs;
  std::vector<RecvSpec> recvs;
  std::vector<WrSpec> wrs;
  std::vector<std::pair<std::string, std::uint64_t>> expect;  // counter name -> value
  CompareOptions compare{};

  const QpSpec* find_qp(std::string_view name) const;
  const MrSpec* find_mr(std::string_view name) const;
};

// Parses the text format. Errors name the source and line.
Result<Scenario> parse_scenario(std::string_view text, const std::string& source);
Result<Scenario> load_scenario(const std::string& path);
// Writes a scenario back in the text format (parse_scenario reads it unchanged;
// scenario_writer.cpp).
std::string to_text(const Scenario& s);

// Byte i of a region filled with `f`.
constexpr std::uint8_t fill_byte_at(Fill f, std::uint8_t value, std::uint64_t i) {
  switch (f) {
    case Fill::Zero: return 0;
    case Fill::Pattern: return static_cast<std::uint8_t>(i * 7 + 3);
    case Fill::Byte: return value;
  }
  return 0;
}

std::string to_string(Fill f);
std::string wr_opcode_name(ibv_wr_opcode op);
std::string access_text(int ibv_access_flags);  // "local_write,remote_read" as the format spells it

}  // namespace roce::replay
