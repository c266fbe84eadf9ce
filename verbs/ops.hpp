// The op tables of our contexts (ibv_context_ops and verbs_context): what the verbs.h inlines
// (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq, ibv_query_port,
// ibv_query_device_ex, ibv_create_qp_ex, ibv_create_cq_ex) call, and the teardown of a context.
#pragma once

#include "verbs/objects.hpp"

namespace roce::verbs {

void install_ops(Context& c);
// Destroys every object the program left on the context (ibv_close_device).
void release_everything(Context& c);

int query_port_op(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr, std::size_t attr_len);
int query_device_ex_op(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       std::size_t attr_size);
int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int post_srq_recv_op(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
int poll_cq_op(ibv_cq* cq, int num_entries, ibv_wc* wc);
// Takes up to n completions; when there are none and `may_step`, runs one dataplane iteration
// on the calling thread and looks again (runtime.hpp: a polling program drives the engine).
int poll_or_step(Cq& c, int n, ibv_wc* wc, bool may_step);
int req_notify_cq_op(ibv_cq* cq, int solicited_only);
ibv_qp* create_qp_ex_op(ibv_context* context, ibv_qp_init_attr_ex* attr);
ibv_cq_ex* create_cq_ex_op(ibv_context* context, ibv_cq_init_attr_ex* attr);

// Object teardown shared by the destroy verbs and release_everything (engine lock held).
int destroy_qp_locked(Context& c, Qp* q);
int destroy_srq_locked(Context& c, Srq* s);
int dealloc_mw_locked(Context& c, Mw* w);
ibv_mw* alloc_mw_op(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw_op(ibv_mw* mw);
int bind_mw_op(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);
int destroy_ah_locked(Context& c, rdma::AddressHandle* ah);
int dereg_mr_locked(Context& c, Mr* m);
// CQs and channels wait for event acknowledgements, so they take the lock themselves.
int destroy_cq_unlocked(Context& c, Cq* q);
int destroy_channel(Context& c, Channel* ch);

// The extended send API (ibv_wr_*), installed on QPs made with send_ops_flags.
void install_wr_api(Qp& q);

}  // namespace roce::verbs
