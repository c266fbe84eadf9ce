// libFuzzer target for lib/nvmf's command handling (scripts/fuzz.sh nvmf): a target with a
// memory namespace, an admin queue connected and enabled and an I/O queue connected; the input
// is a stream of capsules (2-byte length, then the bytes) sent to either queue, with the bytes
// after each capsule serving as the data an RDMA READ would fetch. Whatever the capsules,
// nothing crashes, no response claims more data than its buffer holds, a held command is never
// answered, and the namespace keeps its size.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lib/nvmf/queue.hpp"

using namespace roce;
using namespace roce::nvmf;
namespace nv = roce::proto::nvme;

namespace {

struct World {
  Target target;
  Subsystem* sub = nullptr;
  std::unique_ptr<NvmfQueue> admin, io;

  World() : target(config()) {
    sub = *target.add_subsystem("nqn.2026-12.io.rocev2-dp:fuzz", "FUZZ");
    (void)sub->add_namespace(1, std::move(*NamespaceStore::memory(64, 512)));
    admin = std::make_unique<NvmfQueue>(target, queue_config_for(target.config(), 0, 4));
    io = std::make_unique<NvmfQueue>(target, queue_config_for(target.config(), 1, 4));
    const std::uint16_t cntlid = connect(*admin, 0, nv::kDynamicCntlid);
    nv::PropertyCommand cc;
    cc.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertySet);
    cc.ofst.set(static_cast<std::uint32_t>(nv::Property::Cc));
    cc.value.set(1u | 6u << 16 | 4u << 20);
    run(*admin, nv::overlay<nv::Sqe>(cc), {});
    connect(*io, 1, cntlid);
    // The world the inputs meet must be the connected one, or the fuzzer only sees refusals.
    if (!admin->controller() || !admin->controller()->ready() || io->controller() != admin->controller()) std::abort();
  }
  static TargetConfig config() {
    TargetConfig c;
    c.max_io_queues = 2;
    c.max_queue_depth = 8;
    c.mdts = 1;
    c.inline_data_size = 1024;
    return c;
  }
  static std::vector<std::byte> bytes(const nv::Sqe& s) {
    std::vector<std::byte> b(sizeof s);
    std::memcpy(b.data(), static_cast<const void*>(&s), sizeof s);
    return b;
  }
  void run(NvmfQueue& q, const nv::Sqe& s, std::span<const std::byte> data) {
    auto b = bytes(s);
    Step st = q.on_capsule(b, 0);
    if (st.next == NextStep::FetchData) {
      std::memset(st.slot->data.data(), 0, st.slot->length);
      std::memcpy(st.slot->data.data(), data.data(), std::min<std::size_t>(data.size(), st.slot->length));
      st = q.on_data_fetched(*st.slot, true, 0);
    }
    if (st.next == NextStep::Respond) q.on_response_sent(*st.slot);
  }
  std::uint16_t connect(NvmfQueue& q, std::uint16_t qid, std::uint16_t cntlid) {
    nv::ConnectCommand c;
    c.qid.set(qid);
    c.sqsize.set(3);
    c.sgl1 = nv::SglDescriptor::keyed(0x1000, nv::kConnectDataSize, 1, false);
    nv::ConnectData d;
    d.cntlid.set(cntlid);
    nv::set_fixed_string(d.subnqn, sub->nqn(), '\0');
    nv::set_fixed_string(d.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:fuzz", '\0');
    std::vector<std::byte> data(sizeof d);
    std::memcpy(data.data(), static_cast<const void*>(&d), sizeof d);
    run(q, nv::overlay<nv::Sqe>(c), data);
    return q.controller() ? q.controller()->cntlid : 0;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World w;  // fresh per input: an input's effects never leak into the next
  std::size_t off = 0;
  while (off + 3 <= size) {
    const bool to_admin = data[off] & 1;
    const std::size_t len = std::min<std::size_t>(data[off + 1] | std::size_t{data[off + 2]} << 8, size - off - 3);
    off += 3;
    const roce::proto::ByteSpan capsule(reinterpret_cast<const std::byte*>(data + off), len);
    off += len;
    const roce::proto::ByteSpan rest(reinterpret_cast<const std::byte*>(data + off), size - off);
    NvmfQueue& q = to_admin ? *w.admin : *w.io;
    if (q.failed()) continue;
    Step st = q.on_capsule(capsule, 0);
    if (st.next == NextStep::FetchData) {
      if (st.slot->length > st.slot->data.size()) std::abort();
      std::memset(st.slot->data.data(), 0, st.slot->length);
      std::memcpy(st.slot->data.data(), rest.data(), std::min<std::size_t>(rest.size(), st.slot->length));
      st = q.on_data_fetched(*st.slot, (size & 1) == 0 || st.slot->length < 512, 0);
    }
    if (st.next == NextStep::Respond) {
      if (st.slot->to_host_length > st.slot->data.size()) std::abort();
      q.on_response_sent(*st.slot);
    }
    if (st.next == NextStep::Hold && st.slot->state != SlotState::Held && st.slot->state != SlotState::Waiting) std::abort();
    if (NamespaceStore* ns = w.sub->find_namespace(1); ns && ns->blocks() != 64) std::abort();
  }
  return 0;
}
