#include "lib/nvmf/cm_private_data.hpp"

#include <cstring>

namespace roce::nvmf {

namespace nv = proto::nvme;

namespace {
CmReject reject(nv::CmRejectStatus s) {
  CmReject r;
  r.status = s;
  r.reject.recfmt.set(nv::kRecfmt10);
  r.reject.sts.set(static_cast<std::uint16_t>(s));
  return r;
}
}  // namespace

std::variant<CmAccept, CmReject> decide_cm_request(const TargetConfig& t, proto::ByteSpan private_data) {
  const auto req = nv::parse_cm_request(private_data);
  if (!req) return reject(nv::CmRejectStatus::InvalidPrivateDataLength);
  if (req->recfmt.get() != nv::kRecfmt10) return reject(nv::CmRejectStatus::InvalidRecfmt);
  const std::uint16_t qid = req->qid.get();
  if (qid > t.max_io_queues) return reject(nv::CmRejectStatus::InvalidQid);
  const std::uint32_t depth = req->hsqsize.get() + 1u;
  const std::uint32_t limit = qid == 0 ? t.admin_queue_depth : t.max_queue_depth;
  if (req->hsqsize.get() == 0 || depth > limit) return reject(nv::CmRejectStatus::InvalidHsqsize);
  // The host must be able to take a response for every command it may send.
  if (req->hrqsize.get() == 0 || req->hrqsize.get() < depth) return reject(nv::CmRejectStatus::InvalidHrqsize);
  CmAccept a;
  a.reply.recfmt.set(nv::kRecfmt10);
  a.reply.crqsize.set(static_cast<std::uint16_t>(depth));
  a.queue = queue_config_for(t, qid, static_cast<std::uint16_t>(depth));
  a.send_depth = req->hrqsize.get();
  return a;
}

std::vector<std::byte> to_bytes(const nv::CmReplyData& r) {
  std::vector<std::byte> b(sizeof r);
  std::memcpy(b.data(), static_cast<const void*>(&r), sizeof r);
  return b;
}

std::vector<std::byte> to_bytes(const nv::CmRejectData& r) {
  std::vector<std::byte> b(sizeof r);
  std::memcpy(b.data(), static_cast<const void*>(&r), sizeof r);
  return b;
}

}  // namespace roce::nvmf
