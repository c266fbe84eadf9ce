// The memory-window binds the device tests make in library mode (datapath_test.cpp) and through
// the service (service_test.cpp): the same two binds, posted the two ways libibverbs offers.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbs_test {

// Binds `w1` (type 1, ibv_bind_mw, wr_id 11) over [base, base + length) and `w2` (type 2, an
// IBV_WR_BIND_MW work request, wr_id 12) over [base + 4096, base + 4096 + length) of `mr`, both
// on `qp`, signalled, for REMOTE_WRITE. Returns w2's new key, 0 if a post failed.
inline std::uint32_t bind_two_windows(ibv_qp* qp, ibv_mr* mr, std::uint64_t base, std::uint64_t length, ibv_mw* w1,
                                      ibv_mw* w2) {
  ibv_mw_bind bind{};
  bind.wr_id = 11;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = mr;
  bind.bind_info.addr = base;
  bind.bind_info.length = length;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_bind_mw(qp, w1, &bind) != 0) return 0;
  ibv_send_wr wr{};
  wr.wr_id = 12;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = w2;
  wr.bind_mw.rkey = ibv_inc_rkey(w2->rkey);
  wr.bind_mw.bind_info = bind.bind_info;
  wr.bind_mw.bind_info.addr = base + 4096;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad) == 0 ? wr.bind_mw.rkey : 0;
}

}  // namespace verbs_test
