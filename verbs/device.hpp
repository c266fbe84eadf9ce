// The one device this library offers: its ibv_device (named by the configuration) and the
// attributes ibv_query_device/port/gid report, all derived from what the engine and the port
// really do.
#pragma once

#include <infiniband/verbs.h>

#include "verbs/config.hpp"
#include "verbs/runtime.hpp"

namespace roce::verbs {

struct Device : ibv_device {
  DeviceConfig config;
};

// The configured device (parsed from the environment on first use), or nullptr with the reason
// printed once on stderr.
Device* configured_device();
bool is_our_device(const ibv_device* d);

// Node GUID from the port's MAC (modified EUI-64, as rxe and ConnectX derive theirs), in
// network byte order like ibv_get_device_guid's result.
__be64 node_guid(const proto::MacAddr& mac);

void fill_device_attr(Runtime& rt, ibv_device_attr& a);
void fill_port_attr(Runtime& rt, ibv_port_attr& a);

inline constexpr int kGidTableLength = 1;  // GID 0: the address (IPv4-mapped for IPv4), RoCE v2
inline constexpr std::uint32_t kMaxMessageBytes = 1u << 31;
inline constexpr std::uint32_t kVendorId = 0xFFFFFF;  // no IEEE OUI, as rxe and siw report
inline constexpr int kMaxCq = 65536;
inline constexpr int kMaxPd = 65536;
inline constexpr int kMaxAh = 65536;
inline constexpr int kMaxSrq = 65536;

}  // namespace roce::verbs
