#include "capture/link_layer.hpp"

#include <pcap/pcap.h>

namespace roce::capture {

std::optional<LinkType> link_type_from_dlt(int dlt) {
  switch (dlt) {
    case DLT_EN10MB: return LinkType::Ethernet;
    case DLT_LINUX_SLL: return LinkType::LinuxSll;
    case DLT_LINUX_SLL2: return LinkType::LinuxSll2;
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6: return LinkType::RawIp;
  }
  return std::nullopt;
}

int dlt_of(LinkType t) {
  switch (t) {
    case LinkType::Ethernet: return DLT_EN10MB;
    case LinkType::LinuxSll: return DLT_LINUX_SLL;
    case LinkType::LinuxSll2: return DLT_LINUX_SLL2;
    case LinkType::RawIp: return DLT_RAW;
  }
  return DLT_EN10MB;
}

std::string to_string(LinkType t) {
  switch (t) {
    case LinkType::Ethernet: return "ethernet";
    case LinkType::LinuxSll: return "linux-sll";
    case LinkType::LinuxSll2: return "linux-sll2";
    case LinkType::RawIp: return "raw-ip";
  }
  return "unknown";
}

}  // namespace roce::capture
