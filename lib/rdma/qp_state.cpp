#include "lib/rdma/qp_state.hpp"

#include <array>
#include <utility>

namespace roce::rdma {
namespace {

struct Rule {
  QpState from;
  QpState to;
  int rc_required, rc_optional;
  int uc_required, uc_optional;
  int ud_required, ud_optional;
};

constexpr int kAv = IBV_QP_AV;
constexpr int kRtrOptRc = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
constexpr int kRtsOpt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;

// Required/optional attribute masks of each legal transition (state itself excluded).
constexpr std::array kRules{
    Rule{QpState::Reset, QpState::Init,
         IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
         IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
         IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    Rule{QpState::Init, QpState::Init,
         0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
         0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
         0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    Rule{QpState::Init, QpState::Rtr,
         kAv | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
         kRtrOptRc,
         kAv | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
         0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    Rule{QpState::Rtr, QpState::Rts,
         IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
         kRtsOpt | IBV_QP_MIN_RNR_TIMER,
         IBV_QP_SQ_PSN, kRtsOpt,
         IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    Rule{QpState::Rts, QpState::Rts,
         0, kRtsOpt | IBV_QP_MIN_RNR_TIMER,
         0, kRtsOpt,
         0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    Rule{QpState::Rts, QpState::Sqd, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0,
         IBV_QP_EN_SQD_ASYNC_NOTIFY},
    Rule{QpState::Sqd, QpState::Rts, 0, kRtsOpt | IBV_QP_MIN_RNR_TIMER, 0, kRtsOpt, 0,
         IBV_QP_CUR_STATE | IBV_QP_QKEY},
    Rule{QpState::Sqd, QpState::Sqd, 0,
         kAv | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
             IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
             IBV_QP_RNR_RETRY | IBV_QP_PATH_MIG_STATE,
         0, kAv | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE, 0,
         IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    Rule{QpState::Sqe, QpState::Rts, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, 0,
         IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

constexpr std::pair<int, const char*> kAttrNames[] = {
    {IBV_QP_CUR_STATE, "IBV_QP_CUR_STATE"},
    {IBV_QP_EN_SQD_ASYNC_NOTIFY, "IBV_QP_EN_SQD_ASYNC_NOTIFY"},
    {IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS"},
    {IBV_QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX"},
    {IBV_QP_PORT, "IBV_QP_PORT"},
    {IBV_QP_QKEY, "IBV_QP_QKEY"},
    {IBV_QP_AV, "IBV_QP_AV"},
    {IBV_QP_PATH_MTU, "IBV_QP_PATH_MTU"},
    {IBV_QP_TIMEOUT, "IBV_QP_TIMEOUT"},
    {IBV_QP_RETRY_CNT, "IBV_QP_RETRY_CNT"},
    {IBV_QP_RNR_RETRY, "IBV_QP_RNR_RETRY"},
    {IBV_QP_RQ_PSN, "IBV_QP_RQ_PSN"},
    {IBV_QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC"},
    {IBV_QP_ALT_PATH, "IBV_QP_ALT_PATH"},
    {IBV_QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER"},
    {IBV_QP_SQ_PSN, "IBV_QP_SQ_PSN"},
    {IBV_QP_MAX_DEST_RD_ATOMIC, "IBV_QP_MAX_DEST_RD_ATOMIC"},
    {IBV_QP_PATH_MIG_STATE, "IBV_QP_PATH_MIG_STATE"},
    {IBV_QP_CAP, "IBV_QP_CAP"},
    {IBV_QP_DEST_QPN, "IBV_QP_DEST_QPN"},
};

std::string attr_list(int mask) {
  std::string s;
  for (const auto& [bit, name] : kAttrNames)
    if (mask & bit) s += (s.empty() ? "" : "|") + std::string(name);
  return s;
}

}  // namespace

QpState from_ibv(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return QpState::Reset;
    case IBV_QPS_INIT: return QpState::Init;
    case IBV_QPS_RTR: return QpState::Rtr;
    case IBV_QPS_RTS: return QpState::Rts;
    case IBV_QPS_SQD: return QpState::Sqd;
    case IBV_QPS_SQE: return QpState::Sqe;
    default: return QpState::Err;
  }
}

ibv_qp_state to_ibv(QpState s) {
  switch (s) {
    case QpState::Reset: return IBV_QPS_RESET;
    case QpState::Init: return IBV_QPS_INIT;
    case QpState::Rtr: return IBV_QPS_RTR;
    case QpState::Rts: return IBV_QPS_RTS;
    case QpState::Sqd: return IBV_QPS_SQD;
    case QpState::Sqe: return IBV_QPS_SQE;
    case QpState::Err: return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

std::string to_string(QpState s) {
  switch (s) {
    case QpState::Reset: return "RESET";
    case QpState::Init: return "INIT";
    case QpState::Rtr: return "RTR";
    case QpState::Rts: return "RTS";
    case QpState::Sqd: return "SQD";
    case QpState::Sqe: return "SQE";
    case QpState::Err: return "ERR";
  }
  return "UNKNOWN";
}

TransitionCheck check_transition(ibv_qp_type type, QpState from, QpState to, int attr_mask) {
  const int mask = attr_mask & ~IBV_QP_STATE;
  // Any state may go to RESET or ERR, with no other attribute.
  if (to == QpState::Reset || to == QpState::Err) {
    if (mask & ~IBV_QP_CUR_STATE) return {false, "moving to " + to_string(to) + " takes no attributes, got " + attr_list(mask)};
    return {true, {}};
  }
  for (const Rule& r : kRules) {
    if (r.from != from || r.to != to) continue;
    int required = 0, optional = 0;
    switch (type) {
      case IBV_QPT_RC: required = r.rc_required; optional = r.rc_optional; break;
      case IBV_QPT_UC: required = r.uc_required; optional = r.uc_optional; break;
      case IBV_QPT_UD: required = r.ud_required; optional = r.ud_optional; break;
      default: return {false, "unsupported QP type"};
    }
    if ((mask & required) != required)
      return {false, to_string(from) + "->" + to_string(to) + " requires " + attr_list(required & ~mask)};
    if (mask & ~(required | optional))
      return {false, to_string(from) + "->" + to_string(to) + " does not take " + attr_list(mask & ~(required | optional))};
    return {true, {}};
  }
  return {false, "illegal transition " + to_string(from) + "->" + to_string(to)};
}

}  // namespace roce::rdma
