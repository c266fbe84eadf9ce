// What post_send asks of a send work request, by its opcode: one row per ibv_wr_opcode value
// (the QP types that take it, and the opcode's own rules), looked up once per WR. The rules are
// the verbs ABI's and rxe's: an atomic moves 8 bytes, READ and atomics write local memory and
// carry no inline data, FLUSH, LOCAL_INV and BIND_MW have no local data.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib/rdma/verbs_ext.hpp"

namespace roce::rdma {

inline constexpr std::uint32_t kMaxSendMessage = 1u << 31;  // IBA: 2^31 bytes per message

// FLUSH (verbs_ext.hpp's layout): a known placement type, a selectivity level the IBA
// defines, a length a message may have.
inline bool flush_wr_valid(const ibv_send_wr& wr) {
  const std::uint64_t feth = wr.wr.atomic.swap;
  const std::uint64_t placement = feth & 0x0F;
  return feth <= 0x3F && placement != 0 && (placement & ~std::uint64_t{kFlushPlacementMask}) == 0 &&
         (feth >> 4) <= kFlushMr && wr.wr.atomic.compare_add <= kMaxSendMessage;
}

// BIND_MW: a window to bind (ibv_mw's rkey names it; a type 1 window is bound by ibv_bind_mw,
// a type 2 one by this work request) and, unless unbinding, the region (any ibv_mr whose lkey
// is the region's key: only that field is read).
inline bool bind_wr_valid(const ibv_send_wr& wr) {
  return wr.bind_mw.mw != nullptr && (wr.bind_mw.bind_info.length == 0 || wr.bind_mw.bind_info.mr != nullptr);
}

struct SendWrRule {
  // The QP types that take the opcode (a bit each); an opcode no row names has none.
  enum QpTypes : std::uint8_t { kRc = 1, kUc = 2, kUd = 4 };
  enum Check : std::uint8_t {
    kEightBytes = 1,       // exactly 8 bytes of local data (atomics, ATOMIC_WRITE)
    kNoLocalData = 2,      // no scatter list
    kNoInline = 4,         // IBV_SEND_INLINE refused
    kInlineAnyLength = 8,  // inline whatever max_inline_data (ATOMIC_WRITE keeps its 8 bytes in the WQE)
    kAligned8 = 16,        // remote address 8-byte aligned (ATOMIC_WRITE)
    kFlushArgs = 32,       // flush_wr_valid
    kBindArgs = 64,        // bind_wr_valid
    kWritesLocal = 128,    // the local segments need IBV_ACCESS_LOCAL_WRITE (READ, atomics)
  };
  // The checks a SEND or WRITE never needs, tested with one mask.
  static constexpr std::uint8_t kOwnChecks = kEightBytes | kNoLocalData | kAligned8 | kFlushArgs | kBindArgs;
  // Where the WQE's remote fields come from in the WR (post_send): wr.rdma for most opcodes,
  // one test instead of a compare per opcode with fields of its own.
  enum Fields : std::uint8_t { kRdmaFields = 0, kAtomicFields, kFlushFields, kBindFields };
  std::uint8_t qp_types = 0;
  std::uint8_t checks = 0;
  Fields fields = kRdmaFields;
};

inline constexpr std::array<SendWrRule, 16> kSendWrRules = [] {
  using R = SendWrRule;
  std::array<SendWrRule, 16> t{};
  t[IBV_WR_RDMA_WRITE] = {R::kRc | R::kUc, 0};
  t[IBV_WR_RDMA_WRITE_WITH_IMM] = {R::kRc | R::kUc, 0};
  t[IBV_WR_SEND] = {R::kRc | R::kUc | R::kUd, 0};
  t[IBV_WR_SEND_WITH_IMM] = {R::kRc | R::kUc | R::kUd, 0};
  t[IBV_WR_RDMA_READ] = {R::kRc, R::kNoInline | R::kWritesLocal};
  t[IBV_WR_ATOMIC_CMP_AND_SWP] = {R::kRc, R::kEightBytes | R::kNoInline | R::kWritesLocal, R::kAtomicFields};
  t[IBV_WR_ATOMIC_FETCH_AND_ADD] = {R::kRc, R::kEightBytes | R::kNoInline | R::kWritesLocal, R::kAtomicFields};
  t[IBV_WR_LOCAL_INV] = {R::kRc | R::kUc, R::kNoLocalData};
  t[IBV_WR_BIND_MW] = {R::kRc | R::kUc, R::kNoLocalData | R::kBindArgs, R::kBindFields};
  t[IBV_WR_SEND_WITH_INV] = {R::kRc, 0};
  t[kWrFlush] = {R::kRc, R::kNoLocalData | R::kFlushArgs, R::kFlushFields};
  t[IBV_WR_ATOMIC_WRITE] = {R::kRc, R::kEightBytes | R::kAligned8 | R::kInlineAnyLength};
  return t;
}();

// The WR's row. The opcode is read as the integer the application stored: a value no enumerator
// names is not a valid ibv_wr_opcode, and loading it as one is undefined behaviour (clang's
// -fsanitize=enum stops there); such a WR gets the empty row and fails with EINVAL.
inline SendWrRule send_wr_rule(const ibv_send_wr& wr) {
  std::underlying_type_t<ibv_wr_opcode> raw;
  std::memcpy(&raw, &wr.opcode, sizeof raw);
  const auto i = static_cast<unsigned>(raw);
  return i < kSendWrRules.size() ? kSendWrRules[i] : SendWrRule{};
}

// The QP type's bit in SendWrRule::qp_types (0 for a type that sends nothing).
constexpr std::uint8_t send_wr_type_bit(ibv_qp_type type) {
  switch (type) {
    case IBV_QPT_RC: return SendWrRule::kRc;
    case IBV_QPT_UC: return SendWrRule::kUc;
    case IBV_QPT_UD: return SendWrRule::kUd;
    default: return 0;
  }
}

// What a QP asks of every WR of a list besides its opcode's rules.
struct SendWrLimits {
  std::uint32_t max_inline = 0;
  std::uint32_t ud_max_length = 0;  // a UD QP's path MTU
  bool ud = false;
};

// The error (EINVAL) of a WR whose opcode the QP takes (`r` its row) and whose scatter list
// holds `total` bytes, or 0.
inline int send_wr_error(const ibv_send_wr& wr, SendWrRule r, std::uint64_t total, const SendWrLimits& lim) {
  using R = SendWrRule;
  if (total > kMaxSendMessage) return EINVAL;
  if (r.checks & R::kOwnChecks) {
    if ((r.checks & R::kEightBytes) && total != 8) return EINVAL;
    if ((r.checks & R::kNoLocalData) && wr.num_sge != 0) return EINVAL;
    if ((r.checks & R::kAligned8) && wr.wr.rdma.remote_addr % 8 != 0) return EINVAL;
    if ((r.checks & R::kFlushArgs) && !flush_wr_valid(wr)) return EINVAL;
    if ((r.checks & R::kBindArgs) && !bind_wr_valid(wr)) return EINVAL;
  }
  if (lim.ud && (total > lim.ud_max_length || wr.wr.ud.ah == nullptr)) return EINVAL;
  if ((wr.send_flags & IBV_SEND_INLINE) &&
      ((total > lim.max_inline && !(r.checks & R::kInlineAnyLength)) || (r.checks & R::kNoInline)))
    return EINVAL;
  return 0;
}

}  // namespace roce::rdma
