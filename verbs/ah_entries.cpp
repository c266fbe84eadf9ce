// Address handles for UD: ibv_create_ah, ibv_destroy_ah, and building one from a received
// completion (ibv_init_ah_from_wc, ibv_create_ah_from_wc).
#include <arpa/inet.h>

#include <cstring>

#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

using namespace roce;
using namespace roce::verbs;

namespace {
constexpr Nanos kArpWait = 3 * kSecond;
}

ROCE_VERBS_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  Pd* p = to_pd(pd);
  Context* c = p ? to_context(p->context) : nullptr;
  if (c == nullptr || attr == nullptr) return fail<ibv_ah>(EINVAL);
  if (c->service) return service_create_ah(*c, *p, *attr);
  if (attr->port_num > 1) return fail<ibv_ah>(EINVAL);
  // RoCE address handles are global: the GID is the peer's IP address.
  if (!attr->is_global) return fail<ibv_ah>(EINVAL);
  const rdma::IpAddress peer = rdma::ip_from_gid(attr->grh.dgid);
  if (peer.version == c->rt->local().ip.version && !c->rt->resolve(peer, kArpWait)) return fail<ibv_ah>(EHOSTUNREACH);
  EngineGuard g(c->rt->lock());
  if (c->ahs.size() >= 65536) return fail<ibv_ah>(ENOMEM);
  auto ah = c->rt->engine().create_ah(p->handle, *attr);
  if (!ah) return fail<ibv_ah>(ah.error().code);
  rdma::AddressHandle* h = *ah;
  h->base.context = p->context;
  h->base.pd = pd;
  h->base.handle = static_cast<std::uint32_t>(c->ahs.size());
  ++p->users;
  c->ahs.insert(h);
  return &h->base;
}

namespace roce::verbs {
int destroy_ah_locked(Context& c, rdma::AddressHandle* ah) {
  ibv_pd* pd = ah->base.pd;
  if (Status s = c.rt->engine().destroy_ah(ah); !s) return s.code();
  --to_pd(pd)->users;
  c.ahs.erase(ah);
  return 0;
}
}  // namespace roce::verbs

ROCE_VERBS_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
  if (ah == nullptr) return EINVAL;
  Context* c = to_context(ah->context);
  if (c == nullptr) return EINVAL;
  if (c->service) return service_destroy_ah(*c, ah);
  EngineGuard g(c->rt->lock());
  auto* h = reinterpret_cast<rdma::AddressHandle*>(ah);
  if (!c->ahs.count(h)) return EINVAL;
  return destroy_ah_locked(*c, h);
}

// A UD receive starts with the 40-byte GRH slot; for an IPv4 packet its last 20 bytes hold the
// IPv4 header (as rxe and ConnectX place it), otherwise it is the IPv6 header.
ROCE_VERBS_EXPORT int ibv_init_ah_from_wc(ibv_context* context, std::uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                          ibv_ah_attr* ah_attr) {
  if (to_context(context) == nullptr || wc == nullptr || grh == nullptr || ah_attr == nullptr) return EINVAL;
  if (!(wc->wc_flags & IBV_WC_GRH)) return EINVAL;  // RoCE needs the GRH to answer
  *ah_attr = ibv_ah_attr{};
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  ah_attr->is_global = 1;
  ah_attr->grh.sgid_index = 0;
  ah_attr->grh.hop_limit = 0xFF;
  const auto* raw = reinterpret_cast<const std::uint8_t*>(grh);
  if ((raw[20] >> 4) == 4) {
    proto::Ipv4Addr src;
    std::memcpy(src.data(), raw + 20 + 12, 4);
    ah_attr->grh.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(src));
    ah_attr->grh.traffic_class = raw[20 + 1];
  } else {
    std::memcpy(ah_attr->grh.dgid.raw, grh->sgid.raw, 16);
    const std::uint32_t vtf = ntohl(grh->version_tclass_flow);
    ah_attr->grh.traffic_class = static_cast<std::uint8_t>(vtf >> 20);
    ah_attr->grh.flow_label = vtf & 0xFFFFF;
  }
  return 0;
}

ROCE_VERBS_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, std::uint8_t port_num) {
  if (to_pd(pd) == nullptr) return fail<ibv_ah>(EINVAL);
  ibv_ah_attr a{};
  if (int rc = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a); rc != 0) return fail<ibv_ah>(rc);
  return ibv_create_ah(pd, &a);
}

ROCE_VERBS_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, std::uint8_t eth_mac[6],
                                                  std::uint16_t* vid) {
  Context* c = to_context(context);
  if (c == nullptr || attr == nullptr || !attr->is_global) return EINVAL;
  if (not_served(*c, "ibv_resolve_eth_l2_from_gid")) return EOPNOTSUPP;
  const auto mac = c->rt->resolve(rdma::ip_from_gid(attr->grh.dgid), kArpWait);
  if (!mac) return EHOSTUNREACH;
  std::memcpy(eth_mac, mac->data(), 6);
  if (vid) *vid = 0xFFFF;  // no VLAN
  return 0;
}
