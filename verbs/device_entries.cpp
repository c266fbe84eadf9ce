// Device discovery, contexts and the queries: ibv_get_device_list .. ibv_query_pkey.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "verbs/device.hpp"
#include "verbs/export.hpp"
#include "verbs/objects.hpp"
#include "verbs/ops.hpp"
#include "verbs/service_verbs.hpp"

using namespace roce;
using namespace roce::verbs;

namespace {

Context* new_context(ibv_device* device) {
  auto* c = new Context{};
  ibv_context& ctx = c->context;
  ctx.device = device;
  ctx.cmd_fd = -1;
  c->async.owner = c;
  ctx.async_fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);  // one count per queued event (AsyncEvents)
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  c->sz = sizeof(verbs_context);
  install_ops(*c);
  return c;
}

// Service mode: a context is a connection to the service, which opens one of its own for it;
// everything the program makes on it belongs to that connection and is freed when it closes.
ibv_context* open_service_context(ibv_device* device, const DeviceConfig& cfg) {
  auto conn = ServiceConnection::connect(cfg.service);
  if (!conn) {
    report("cannot open " + std::string(device->name) + ": " + conn.error().message);
    return fail<ibv_context>(conn.error().code);
  }
  // The context's async_fd is the program's end of an event socket pair, the service's end goes with Open.
  int events = -1;
  const int service_end = service_event_socket(events);
  if (service_end < 0) return fail<ibv_context>(errno);
  const int rc = (*conn)->call(service::Op::Open, 0, 0, nullptr, 0, nullptr, 0, &service_end, 1);
  ::close(service_end);
  if (rc != 0) {
    ::close(events);
    report("cannot open " + std::string(device->name) + ": the service refused: " + std::strerror(rc));
    return fail<ibv_context>(rc);
  }
  Context* c = new_context(device);
  ::close(c->context.async_fd);
  c->context.async_fd = events;
  c->service = std::move(*conn);
  install_service_ops(*c);
  return &c->context;
}

}  // namespace

ROCE_VERBS_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
  Device* d = configured_device();
  auto** list = static_cast<ibv_device**>(std::calloc(2, sizeof(ibv_device*)));
  if (list == nullptr) return fail<ibv_device*>(ENOMEM);
  if (d) list[0] = d;
  if (num_devices) *num_devices = d ? 1 : 0;
  return list;
}

ROCE_VERBS_EXPORT void ibv_free_device_list(ibv_device** list) { std::free(list); }

ROCE_VERBS_EXPORT const char* ibv_get_device_name(ibv_device* device) {
  if (!is_our_device(device)) return fail<const char>(EINVAL);
  return device->name;
}

ROCE_VERBS_EXPORT int ibv_get_device_index(ibv_device* device) { return is_our_device(device) ? 0 : -1; }

ROCE_VERBS_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  if (!is_our_device(device)) return 0;
  if (const DeviceConfig& cfg = static_cast<Device*>(device)->config; !cfg.service.empty()) {
    auto conn = ServiceConnection::connect(cfg.service);
    ibv_device_attr a{};
    if (!conn || (*conn)->call(service::Op::QueryDevice, &a, sizeof a) != 0) return 0;
    return a.node_guid;
  }
  // The GUID comes from the port's MAC: the device must be up to know it.
  auto rt = Runtime::start(static_cast<Device*>(device)->config);
  if (!rt) {
    report(rt.error().message);
    return 0;
  }
  EngineGuard g((*rt)->lock());
  return node_guid((*rt)->local().mac);
}

ROCE_VERBS_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  if (!is_our_device(device)) return fail<ibv_context>(ENODEV);
  if (const DeviceConfig& cfg = static_cast<Device*>(device)->config; !cfg.service.empty()) return open_service_context(device, cfg);
  auto rt = Runtime::start(static_cast<Device*>(device)->config);
  if (!rt) {
    report("cannot open " + std::string(device->name) + ": " + rt.error().message);
    return fail<ibv_context>(rt.error().code);
  }
  auto* c = new_context(device);
  c->rt = *rt;
  return &c->context;
}

ROCE_VERBS_EXPORT int ibv_close_device(ibv_context* context) {
  Context* c = to_context(context);
  if (c == nullptr) return EINVAL;
  if (c->service) service_close(*c);  // the service frees its side when the connection closes
  else release_everything(*c);
  if (context->async_fd >= 0) ::close(context->async_fd);
  pthread_mutex_destroy(&context->mutex);
  retire(c);
  return 0;
}

ROCE_VERBS_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Context* c = to_context(context);
  if (c == nullptr || attr == nullptr) return EINVAL;
  if (c->service) return c->service->call(service::Op::QueryDevice, attr, sizeof *attr);
  EngineGuard g(c->rt->lock());
  fill_device_attr(*c->rt, *attr);
  return 0;
}

// The exported ibv_query_port takes the old, shorter port attribute struct (programs built
// against verbs.h reach query_port_op through the macro instead).
struct CompatPortAttr {
  ibv_port_state state;
  ibv_mtu max_mtu, active_mtu;
  int gid_tbl_len;
  std::uint32_t port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;
  std::uint16_t pkey_tbl_len, lid, sm_lid;
  std::uint8_t lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed, phys_state,
      link_layer, flags;
};

ROCE_VERBS_EXPORT int ibv_query_port(ibv_context* context, std::uint8_t port_num, _compat_ibv_port_attr* attr) {
  ibv_port_attr full{};
  if (int rc = query_port_op(context, port_num, &full, sizeof full); rc != 0) return rc;
  std::memcpy(attr, &full, sizeof(CompatPortAttr));
  return 0;
}

ROCE_VERBS_EXPORT int _ibv_query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index,
                                        ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size) {
  Context* c = to_context(context);
  if (c == nullptr || entry == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  if (port_num != 1) return EINVAL;
  if (gid_index >= static_cast<std::uint32_t>(kGidTableLength)) return ENODATA;
  if (c->service) return c->service->call(service::Op::QueryGid, entry, sizeof *entry, gid_index);
  *entry = ibv_gid_entry{};
  entry->gid = rdma::gid_from_ip(*c->rt->config().ip);
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = static_cast<std::uint32_t>(c->rt->ifindex());
  return 0;
}

ROCE_VERBS_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                                               std::uint32_t flags, std::size_t entry_size) {
  Context* c = to_context(context);
  if (c == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < static_cast<std::size_t>(kGidTableLength)) return -EINVAL;
  for (int i = 0; i < kGidTableLength; ++i) {
    auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + i * entry_size);
    if (int rc = _ibv_query_gid_ex(context, 1, static_cast<std::uint32_t>(i), e, 0, entry_size); rc != 0) return -rc;
  }
  return kGidTableLength;
}

ROCE_VERBS_EXPORT int ibv_query_gid(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) {
  ibv_gid_entry e{};
  if (index < 0 || gid == nullptr) return -1;
  if (_ibv_query_gid_ex(context, port_num, static_cast<std::uint32_t>(index), &e, 0, sizeof e) != 0) return -1;
  *gid = e.gid;
  return 0;
}

// libibverbs' private form of the GID type (0: IB / RoCE v1, 1: RoCE v2), used by ibv_devinfo
// and perftest's GID selection.
ROCE_VERBS_EXPORT int ibv_query_gid_type(ibv_context* context, std::uint8_t port_num, unsigned index, int* type) {
  ibv_gid_entry e{};
  const int rc = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof e);
  if (rc == ENODATA) {
    *type = 0;
    return 0;
  }
  if (rc != 0) return -1;
  *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
  return 0;
}

ROCE_VERBS_EXPORT int ibv_query_pkey(ibv_context* context, std::uint8_t port_num, int index, __be16* pkey) {
  if (to_context(context) == nullptr || port_num != 1 || index != 0 || pkey == nullptr) return -1;
  *pkey = 0xFFFF;  // the default partition, full membership (the same in either byte order)
  return 0;
}

ROCE_VERBS_EXPORT int ibv_get_pkey_index(ibv_context* context, std::uint8_t port_num, __be16 pkey) {
  if (to_context(context) == nullptr || port_num != 1) return -EINVAL;
  return pkey == 0xFFFF ? 0 : -ENOENT;
}

ROCE_VERBS_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  Context* c = to_context(context);
  if (c == nullptr || event == nullptr) return -1;
  if (c->service) return service_get_async_event(*c, *event);
  // Blocks (unless the program made the fd non-blocking) until an event is queued.
  std::uint64_t v;
  if (::read(context->async_fd, &v, sizeof v) != sizeof v) return -1;
  std::lock_guard<std::mutex> l(c->async.mutex);
  if (c->async.queue.empty()) {  // its object was destroyed after the event was raised
    errno = EAGAIN;
    return -1;
  }
  *event = c->async.queue.front();
  c->async.queue.pop_front();
  return 0;
}

// libibverbs counts acknowledged events on the object, which destroy may wait for.
ROCE_VERBS_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
  if (event == nullptr) return;
  if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED && to_srq(event->element.srq)) {
    ibv_srq* s = event->element.srq;
    pthread_mutex_lock(&s->mutex);
    ++s->events_completed;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mutex);
  } else if (event->event_type == IBV_EVENT_QP_LAST_WQE_REACHED && to_qp(event->element.qp)) {
    ibv_qp* q = event->element.qp;
    pthread_mutex_lock(&q->mutex);
    ++q->events_completed;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->mutex);
  }
}

ROCE_VERBS_EXPORT ibv_context* ibv_import_device(int) { return fail<ibv_context>(EOPNOTSUPP); }
