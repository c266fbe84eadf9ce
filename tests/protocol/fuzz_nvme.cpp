// libFuzzer target for the NVMe/RDMA capsule codec (scripts/fuzz.sh nvme): any byte string
// as a command capsule, a response capsule and rdma_cm private data; parsing and naming must
// never crash, and a parsed capsule keeps its bytes.
#include <cstdlib>
#include <cstring>

#include "protocol/nvme.hpp"
#include "protocol/nvme_rdma.hpp"

using namespace roce::proto;
using namespace roce::proto::nvme;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ByteSpan in(reinterpret_cast<const std::byte*>(data), size);
  CapsuleError why{};
  const auto cap = parse_command_capsule(in, &why);
  if (cap) {
    if (cap->data.size() != size - kSqeSize) std::abort();
    if (std::memcmp(static_cast<const void*>(&cap->sqe), data, kSqeSize) != 0) std::abort();
    for (QueueKind q : {QueueKind::Admin, QueueKind::Io, QueueKind::Unknown})
      if (describe_command(cap->sqe, q).rfind("NVMe ", 0) != 0) std::abort();
    (void)to_string(classify(cap->sqe.sgl1));
  } else if (size >= kSqeSize) {
    std::abort();
  }
  if (size >= kCqeSize) {
    const Cqe c = load_header<Cqe>(in, 0);
    const NvmeStatus s = NvmeStatus::from_field(c.status.get());
    if ((NvmeStatus::from_field(s.field()) != s)) std::abort();
    (void)describe_response(c);
  }
  (void)parse_cm_request(in);
  return 0;
}
