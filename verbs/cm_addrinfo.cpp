// rdma_getaddrinfo / rdma_freeaddrinfo: a name and service turned into the addresses an
// rdma_cm_id binds to (RAI_PASSIVE) or connects to, with the port space and QP type. The
// device has an IPv4 address, so IPv4 only (other families: EAI_FAMILY); no route or connect
// data (ai_route, ai_connect), which librdmacm asks an IB ACM service for and which IP
// addresses never have.
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "verbs/cm_objects.hpp"
#include "verbs/device.hpp"
#include "verbs/export.hpp"

namespace {

sockaddr* copy_addr(const sockaddr* a, socklen_t len) {
  auto* out = static_cast<sockaddr*>(std::malloc(len));
  if (out) std::memcpy(out, a, len);
  return out;
}

// The answer to use: the first of the device's family, else the first (the later calls then
// say why it cannot be reached).
const addrinfo* pick(const addrinfo* found) {
  const roce::verbs::Device* d = roce::verbs::configured_device();
  if (d == nullptr || !d->config.ip) return found;
  const int family = d->config.ip->version == roce::proto::IpVersion::V4 ? AF_INET : AF_INET6;
  for (const addrinfo* a = found; a; a = a->ai_next)
    if (a->ai_family == family) return a;
  return found;
}

}  // namespace

ROCE_VERBS_EXPORT void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

ROCE_VERBS_EXPORT int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** res) {
  if (res == nullptr) {
    errno = EINVAL;
    return -1;
  }
  const int flags = hints ? hints->ai_flags : 0;
  const bool passive = (flags & RAI_PASSIVE) != 0;
  const int family = hints ? hints->ai_family : AF_UNSPEC;
  if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6) return EAI_FAMILY;
  if (node == nullptr && !passive) return EAI_NONAME;
  int ps = hints ? hints->ai_port_space : 0;
  if (ps == 0) ps = hints && hints->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IPOIB) return EAI_SERVICE;

  addrinfo want{};
  want.ai_family = family;
  want.ai_socktype = SOCK_STREAM;
  want.ai_flags = (passive ? AI_PASSIVE : 0) | ((flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(node, service, &want, &found)) return rc;

  auto* r = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (r == nullptr) {
    ::freeaddrinfo(found);
    errno = ENOMEM;
    return -1;
  }
  const addrinfo* a = pick(found);
  r->ai_flags = flags;
  r->ai_family = a->ai_family;
  r->ai_port_space = ps;
  r->ai_qp_type = ps == RDMA_PS_TCP ? IBV_QPT_RC : IBV_QPT_UD;
  bool ok = true;
  if (passive) {
    r->ai_src_len = a->ai_addrlen;
    ok = (r->ai_src_addr = copy_addr(a->ai_addr, a->ai_addrlen)) != nullptr;
  } else {
    r->ai_dst_len = a->ai_addrlen;
    ok = (r->ai_dst_addr = copy_addr(a->ai_addr, a->ai_addrlen)) != nullptr;
    if (ok && hints && hints->ai_src_addr && hints->ai_src_len) {
      r->ai_src_len = hints->ai_src_len;
      ok = (r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len)) != nullptr;
    }
  }
  ::freeaddrinfo(found);
  if (!ok) {
    rdma_freeaddrinfo(r);
    errno = ENOMEM;
    return -1;
  }
  *res = r;
  return 0;
}
