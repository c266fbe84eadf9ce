#include "verbs/device.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "protocol/mtu.hpp"
#include "verbs/objects.hpp"

namespace roce::verbs {
namespace {

std::once_flag g_parse_once;
Device* g_device = nullptr;

// IBA port attribute encodings (verbs.h has no names for them).
enum : std::uint8_t { kWidth1x = 1, kWidth4x = 2 };
enum : std::uint8_t { kSpeedSdr = 1, kSpeedDdr = 2, kSpeedFdr10 = 8, kSpeedEdr = 32 };

// Ethernet speed to IB width and speed, as Linux's ib_get_eth_speed() maps a netdev for rxe.
void eth_speed(std::uint32_t mbps, std::uint8_t& width, std::uint8_t& speed) {
  if (mbps <= 1000) width = kWidth1x, speed = kSpeedSdr;
  else if (mbps <= 10000) width = kWidth1x, speed = kSpeedFdr10;
  else if (mbps <= 20000) width = kWidth4x, speed = kSpeedDdr;
  else if (mbps <= 25000) width = kWidth1x, speed = kSpeedEdr;
  else if (mbps <= 40000) width = kWidth4x, speed = kSpeedFdr10;
  else width = kWidth4x, speed = kSpeedEdr;
}

}  // namespace

void report(const std::string& what) { std::fprintf(stderr, "roce-verbs: %s\n", what.c_str()); }

bool not_served(const Context& c, const char* verb) {
  if (!c.service) return false;
  static std::once_flag once;
  std::call_once(once, [verb] { report(std::string(verb) + ": not served in service mode yet (EOPNOTSUPP)"); });
  errno = EOPNOTSUPP;
  return true;
}

Device* configured_device() {
  std::call_once(g_parse_once, [] {
    auto words = config_words_from_environment();
    if (!words) {
      report(words.error().message);
      return;
    }
    if (words->empty()) {
      report("no device configured (run the program under roce-run, or set ROCE_VERBS_ARGS or ROCE_VERBS_CONFIG)");
      return;
    }
    auto cfg = parse_config(*words);
    if (!cfg) {
      report(cfg.error().message);
      return;
    }
    auto* d = new Device{};
    d->config = *cfg;
    if (!cfg->service.empty()) {
      // Service mode: the device is the service's; its name comes from the service.
      auto conn = ServiceConnection::connect(cfg->service);
      if (!conn) {
        report(conn.error().message);
        delete d;
        return;
      }
      d->config.name = (*conn)->device_name();
    }
    d->node_type = IBV_NODE_CA;
    d->transport_type = IBV_TRANSPORT_IB;  // what RoCE devices report
    std::snprintf(d->name, sizeof d->name, "%s", d->config.name.c_str());
    std::snprintf(d->dev_name, sizeof d->dev_name, "roce_verbs_%s", d->config.name.c_str());
    g_device = d;  // one per process, never freed: ibv_device pointers must outlive every list
  });
  return g_device;
}

bool is_our_device(const ibv_device* d) { return d != nullptr && d == g_device; }

__be64 node_guid(const proto::MacAddr& mac) {
  std::uint8_t g[8] = {static_cast<std::uint8_t>(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
  __be64 out;
  std::memcpy(&out, g, 8);
  return out;
}

void fill_device_attr(Runtime& rt, ibv_device_attr& a) {
  const rdma::EngineConfig& e = rt.engine().config();
  a = ibv_device_attr{};
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "rocev2-dp %s", ROCE_VERBS_VERSION);
  a.node_guid = node_guid(rt.local().mac);
  a.sys_image_guid = a.node_guid;
  a.max_mr_size = ~0ull;
  a.page_size_cap = 0xfffff000;  // any 4 KiB multiple: regions are not pinned or translated
  a.vendor_id = kVendorId;
  a.vendor_part_id = 0;
  a.hw_ver = 0;
  a.max_qp = static_cast<int>(e.max_qps);
  a.max_qp_wr = static_cast<int>(e.max_qp_wr);
  a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_MEM_WINDOW |
                       IBV_DEVICE_MEM_WINDOW_TYPE_2B;
  a.max_mw = static_cast<int>(rt.memory().capacity());  // windows share the region table
  a.max_sge = static_cast<int>(e.max_sge);
  a.max_sge_rd = static_cast<int>(e.max_sge);
  a.max_cq = kMaxCq;
  a.max_cqe = static_cast<int>(e.max_cqe);
  a.max_mr = static_cast<int>(rt.memory().capacity());
  a.max_pd = kMaxPd;
  a.max_qp_rd_atom = e.max_rd_atomic;
  a.max_qp_init_rd_atom = e.max_rd_atomic;
  a.max_res_rd_atom = static_cast<int>(e.max_qps * e.max_rd_atomic);
  a.atomic_cap = IBV_ATOMIC_HCA;  // one worker applies every atomic of the device in turn
  a.max_ah = kMaxAh;
  a.max_srq = kMaxSrq;
  a.max_srq_wr = static_cast<int>(e.max_qp_wr);
  a.max_srq_sge = static_cast<int>(e.max_sge);
  a.max_pkeys = 1;
  a.local_ca_ack_delay = 15;
  a.phys_port_cnt = 1;
}

void fill_port_attr(Runtime& rt, ibv_port_attr& a) {
  a = ibv_port_attr{};
  const LinkState l = rt.link();
  a.state = l.up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = static_cast<ibv_mtu>(proto::mtu_from_bytes(rt.config().max_mtu).value_or(proto::PathMtu::Mtu4096));
  a.active_mtu = static_cast<ibv_mtu>(proto::mtu_from_bytes(rt.active_mtu()).value_or(proto::PathMtu::Mtu1024));
  a.gid_tbl_len = kGidTableLength;
  a.port_cap_flags = 0;  // no CM, SM or SNMP agents behind this port
  a.max_msg_sz = kMaxMessageBytes;
  a.bad_pkey_cntr = static_cast<std::uint32_t>(rt.engine().drops(rdma::EngineDrop::PkeyMismatch));
  a.qkey_viol_cntr = static_cast<std::uint32_t>(rt.engine().total_counters().get(rdma::Counter::QkeyViolations));
  a.pkey_tbl_len = 1;
  a.max_vl_num = 1;
  eth_speed(l.speed_mbps, a.active_width, a.active_speed);
  a.phys_state = l.up ? 5 : 3;  // LinkUp / Disabled
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  a.flags = IBV_QPF_GRH_REQUIRED;
}

}  // namespace roce::verbs
