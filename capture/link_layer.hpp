// Link layers the RoCE tools read from capture files, and the Linux cooked headers that some
// of them put in front of the IP datagram (tcpdump -i any writes SLL or SLL2).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"

namespace roce::capture {

enum class LinkType : std::uint8_t {
  Ethernet,   // DLT_EN10MB (1)
  LinuxSll,   // DLT_LINUX_SLL (113)
  LinuxSll2,  // DLT_LINUX_SLL2 (276)
  RawIp,      // DLT_RAW (12 on Linux; LINKTYPE_RAW 101 in files), DLT_IPV4 (228), DLT_IPV6 (229)
};

// The libpcap DLT_ value of an opened capture, or nullopt for a link type we do not decode.
std::optional<LinkType> link_type_from_dlt(int dlt);
int dlt_of(LinkType t);
std::string to_string(LinkType t);

// LINKTYPE_LINUX_SLL header (16 bytes).
struct SllHeader {
  proto::Be16 packet_type;  // 0 to us, 1 broadcast, 2 multicast, 3 other host, 4 sent by us
  proto::Be16 arphrd_type;
  proto::Be16 addr_length;
  std::array<std::uint8_t, 8> addr;
  proto::Be16 protocol;  // EtherType of what follows
};
static_assert(sizeof(SllHeader) == 16);

// LINKTYPE_LINUX_SLL2 header (20 bytes): the protocol moves to the front, an interface index
// is added.
struct Sll2Header {
  proto::Be16 protocol;
  proto::Be16 reserved;
  proto::Be32 if_index;
  proto::Be16 arphrd_type;
  std::uint8_t packet_type;
  std::uint8_t addr_length;
  std::array<std::uint8_t, 8> addr;
};
static_assert(sizeof(Sll2Header) == 20);

}  // namespace roce::capture
