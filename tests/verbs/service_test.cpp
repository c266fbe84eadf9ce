// Service mode (docs/verbs.md, "2. Service mode"): this program is a client of a roce-verbsd it
// starts on a looped-back net_ring0 port (ROCE_VERBSD names the binary; libroce-verbs.so is
// preloaded by meson). Device list and queries answered by the service, the service's errnos
// for malformed records, and programs that exit or are SIGKILLed leaving nothing behind while
// another keeps working.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/verbs/service_harness.hpp"
#include "tests/verbs/window_binds.hpp"
#include "verbs/service_proto.hpp"
#include "verbs/service_rings.hpp"

namespace service_test {
namespace {

using verbs_test::bind_two_windows;

TEST_F(Service, TheDeviceIsTheServicesNamedByIt) {
  EXPECT_STREQ(ibv_get_device_name(list[0]), "svc0");
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_EQ(a.vendor_id, 0xFFFFFFu);
  EXPECT_EQ(a.phys_port_cnt, 1);
  EXPECT_EQ(a.max_qp, 1024);
  EXPECT_NE(a.node_guid, 0u);
  EXPECT_EQ(ibv_get_device_guid(list[0]), a.node_guid);
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &x), 0);
  EXPECT_EQ(x.orig_attr.max_qp, a.max_qp);
  EXPECT_EQ(x.phys_port_cnt_ex, 1u);
}

TEST_F(Service, PortAndGidAreTheServicesPort) {
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &p), 0);
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(p.gid_tbl_len, 1);
  EXPECT_EQ(ibv_query_port(ctx, 2, &p), EINVAL);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  in_addr ip{};
  ASSERT_EQ(::inet_pton(AF_INET, "10.99.0.3", &ip), 1);
  const std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  EXPECT_EQ(std::memcmp(gid.raw, mapped, 12), 0);
  EXPECT_EQ(std::memcmp(gid.raw + 12, &ip, 4), 0);
  ibv_gid_entry e{};
  EXPECT_EQ(ibv_query_gid_ex(ctx, 1, 1, &e, 0), ENODATA);
  ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
}

// Debian's ibv_devinfo, unmodified, through the service (this process's environment: the
// preloaded library and ROCE_VERBS_SERVICE).
TEST_F(Service, IbvDevinfoSeesTheServicesDevice) {
  REQUIRE_PROGRAM("ibv_devinfo");
  FILE* p = ::popen("ibv_devinfo -v 2>&1", "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  EXPECT_NE(out.find("hca_id:\tsvc0"), std::string::npos) << out;
  EXPECT_NE(out.find("PORT_ACTIVE"), std::string::npos) << out;
  EXPECT_NE(out.find("Ethernet"), std::string::npos) << out;
  EXPECT_NE(out.find("::ffff:10.99.0.3"), std::string::npos) << out;
}

TEST_F(Service, VerbsOfSlicesNotBuiltAnswerEopnotsupp) {
  ibv_cq_init_attr_ex cx{};
  cx.cqe = 16;
  errno = 0;
  EXPECT_EQ(ibv_create_cq_ex(ctx, &cx), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap = {1, 1, 1, 1, 0};
  ia.qp_type = IBV_QPT_RC;
  ibv_qp_init_attr_ex ix{};
  ix.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;  // the ibv_wr_* API
  ix.send_ops_flags = IBV_QP_EX_WITH_SEND;
  ix.pd = pd;
  ix.send_cq = ix.recv_cq = cq;
  ix.cap = ia.cap;
  ix.qp_type = IBV_QPT_RC;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx, &ix), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// The device a program of the service reads is what it is served: memory windows, SRQs not
// resized, the rings' limits (16 SGEs, 65536 CQ entries, 65536 queue and SRQ entries at most),
// where library mode reports its own.
TEST_F(Service, DeviceAttributesAreWhatTheServiceServes) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_GT(a.max_srq, 0);
  EXPECT_EQ(a.max_srq_wr, a.max_qp_wr);  // the engine's, within the rings' 65536
  EXPECT_EQ(a.max_srq_sge, 16);
  EXPECT_EQ(a.device_cap_flags & IBV_DEVICE_SRQ_RESIZE, 0u);
  EXPECT_GT(a.max_mw, 0);
  EXPECT_NE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B, 0u);
  EXPECT_EQ(a.max_sge, 16);
  EXPECT_EQ(a.max_cqe, 65536);
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &x), 0);
  EXPECT_EQ(x.orig_attr.max_srq_sge, 16);
  EXPECT_NE(x.device_cap_flags_ex & IBV_DEVICE_MEM_WINDOW, 0u);
  // The limits hold: the largest CQ and SGE count reported are made, one more is EINVAL.
  ibv_cq* cq = ibv_create_cq(ctx, a.max_cqe, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, a.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap = {4, 4, static_cast<std::uint32_t>(a.max_sge), static_cast<std::uint32_t>(a.max_sge), 0};
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  ASSERT_NE(qp, nullptr) << std::strerror(errno);
  ia.cap.max_send_sge = static_cast<std::uint32_t>(a.max_sge) + 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The largest SRQ reported is made, one more WR or SGE is EINVAL.
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = static_cast<std::uint32_t>(a.max_srq_wr);
  sa.attr.max_sge = static_cast<std::uint32_t>(a.max_srq_sge);
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr) << std::strerror(errno);
  for (const bool more_sge : {false, true}) {
    ibv_srq_init_attr too{};
    too.attr.max_wr = static_cast<std::uint32_t>(a.max_srq_wr) + (more_sge ? 0 : 1);
    too.attr.max_sge = static_cast<std::uint32_t>(a.max_srq_sge) + (more_sge ? 1 : 0);
    errno = 0;
    EXPECT_EQ(ibv_create_srq(pd, &too), nullptr);
    EXPECT_EQ(errno, EINVAL);
  }
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// --- slice 2: PDs and MRs, the registered buffer's pages shared with the service ---

using ProbeWrite = int (*)(ibv_pd*, std::uint64_t, std::uint32_t, std::uint32_t, std::uint8_t, std::uint32_t*);

// The service WRITEs `len` bytes of `pattern` at `at` through `mr` from a QP pair of its own.
int probe(ibv_pd* pd, ibv_mr* mr, const void* at, std::uint32_t len, std::uint8_t pattern,
          std::uint32_t* status = nullptr) {
  static const auto fn = reinterpret_cast<ProbeWrite>(::dlsym(RTLD_DEFAULT, "roce_verbs_probe_write"));
  if (fn == nullptr) return -1;
  std::uint32_t st = 0;
  const int rc = fn(pd, reinterpret_cast<std::uintptr_t>(at), mr->rkey, len, pattern, &st);
  if (status) *status = st;
  return rc;
}

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

TEST_F(Service, PdAndMrAreTheServicesAndCountedThere) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  void* buf = std::aligned_alloc(page(), 3 * page());
  ASSERT_NE(buf, nullptr);
  ibv_mr* mr = ibv_reg_mr(pd, buf, 3 * page(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  EXPECT_EQ(mr->addr, buf);
  EXPECT_EQ(mr->length, 3 * page());
  EXPECT_NE(mr->rkey, 0u);
  StatusReply s = status();
  EXPECT_EQ(s.pds, 1u);
  EXPECT_EQ(s.mrs, 1u);
  EXPECT_EQ(s.mapped_bytes, 3 * page());
  EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);  // the service's answer: an MR uses it
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  s = status();
  EXPECT_EQ(s.pds, 0u);
  EXPECT_EQ(s.mrs, 0u);
  EXPECT_EQ(s.mapped_bytes, 0u);
  std::free(buf);
}

// One program cannot take the device's tables from the others: past the service's
// --max-per-client (32 here) of a kind, the next is ENOMEM, and others are still served.
TEST_F(Service, PerProgramCapIsEnomem) {
  std::vector<ibv_pd*> pds;
  for (int i = 0; i < 32; ++i) {
    pds.push_back(ibv_alloc_pd(ctx));
    ASSERT_NE(pds.back(), nullptr) << i;
  }
  errno = 0;
  EXPECT_EQ(ibv_alloc_pd(ctx), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  // Another program (a second context is a second connection) still gets its own.
  ibv_context* other = ibv_open_device(list[0]);
  ASSERT_NE(other, nullptr);
  ibv_pd* p = ibv_alloc_pd(other);
  EXPECT_NE(p, nullptr);
  if (p) {
    EXPECT_EQ(ibv_dealloc_pd(p), 0);
  }
  EXPECT_EQ(ibv_close_device(other), 0);
  for (ibv_pd* q : pds) EXPECT_EQ(ibv_dealloc_pd(q), 0);
}

// Nor can it fill the service's address space: past --max-map-mb (64 MiB here) of its memory
// mapped into the service, a registration is ENOMEM; another program still registers, and
// deregistering makes room again.
TEST_F(Service, MappedBytesCapIsEnomem) {
  constexpr std::size_t kBytes = std::size_t{40} << 20;
  auto buffer = [] {
    void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  };
  void* a = buffer();
  void* b = buffer();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const int access = IBV_ACCESS_LOCAL_WRITE;
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_mr* first = ibv_reg_mr(pd, a, kBytes, access);
  ASSERT_NE(first, nullptr) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, b, kBytes, access), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_context* other = ibv_open_device(list[0]);
  ASSERT_NE(other, nullptr);
  ibv_pd* other_pd = ibv_alloc_pd(other);
  ASSERT_NE(other_pd, nullptr);
  ibv_mr* theirs = ibv_reg_mr(other_pd, b, kBytes, access);
  EXPECT_NE(theirs, nullptr) << std::strerror(errno);
  if (theirs) {
    EXPECT_EQ(ibv_dereg_mr(theirs), 0);
  }
  EXPECT_EQ(ibv_dealloc_pd(other_pd), 0);
  EXPECT_EQ(ibv_close_device(other), 0);
  EXPECT_EQ(ibv_dereg_mr(first), 0);
  ibv_mr* second = ibv_reg_mr(pd, b, kBytes, access);
  EXPECT_NE(second, nullptr) << std::strerror(errno);
  if (second) {
    EXPECT_EQ(ibv_dereg_mr(second), 0);
  }
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  ::munmap(a, kBytes);
  ::munmap(b, kBytes);
}

TEST_F(Service, RegistrationErrnosAreLibraryModes) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  std::vector<std::uint8_t> buf(8192);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), buf.size(), static_cast<int>(IBV_ACCESS_REMOTE_WRITE)), nullptr);  // no LOCAL_WRITE
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), buf.size(), 1 << 30), nullptr);  // not an access flag
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, buf.data(), 0, static_cast<int>(IBV_ACCESS_LOCAL_WRITE)), nullptr);
  EXPECT_EQ(errno, EINVAL);
  void* hole = ::mmap(nullptr, page(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  ASSERT_EQ(::munmap(hole, page()), 0);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd, hole, page(), static_cast<int>(IBV_ACCESS_LOCAL_WRITE)), nullptr);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(status().mrs, 0u);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// The slice's end-to-end check: the bytes of a WRITE that the service's engine places through
// the program's MR appear in the program's own buffer, at the program's own addresses, and the
// heap around the buffer (its pages were moved) keeps its contents.
TEST_F(Service, WriteFromTheServiceLandsInTheProgramsBuffer) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  std::vector<std::uint8_t> before(1000, 0x5A);  // likely heap neighbours of buf
  std::vector<std::uint8_t> buf(20000, 0x11);
  std::vector<std::uint8_t> after(1000, 0xA5);
  std::uint8_t* const data = buf.data();
  ibv_mr* mr = ibv_reg_mr(pd, data, buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr) << std::strerror(errno);
  ASSERT_EQ(probe(pd, mr, data + 100, 5000, 0xAB), 0);
  EXPECT_EQ(buf.data(), data);
  for (std::size_t i = 0; i < buf.size(); ++i)
    ASSERT_EQ(buf[i], (i >= 100 && i < 5100) ? 0xAB : 0x11) << "byte " << i;
  for (auto b : before) ASSERT_EQ(b, 0x5A);
  for (auto b : after) ASSERT_EQ(b, 0xA5);
  // The program's own writes are seen by the next WRITE's neighbours: one memory, not a copy.
  buf[6000] = 0x77;
  ASSERT_EQ(probe(pd, mr, data + 6001, 10, 0xCD), 0);
  EXPECT_EQ(buf[6000], 0x77);
  EXPECT_EQ(buf[6001], 0xCD);
  // Outside the region, or with a wrong rkey: the service's completion says so, nothing lands.
  std::uint32_t st = 0;
  EXPECT_EQ(probe(pd, mr, data + buf.size() - 4, 8, 0xEE, &st), EIO);
  EXPECT_EQ(st, static_cast<std::uint32_t>(IBV_WC_REM_ACCESS_ERR));
  EXPECT_EQ(buf[buf.size() - 4], 0x11);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// Two buffers in one page (registered one after the other) share its memfd: a WRITE through
// either MR is seen by the program. And a buffer the program unmapped and mapped again at the
// same address is moved again, not served from the stale memfd.
TEST_F(Service, SharedPagesAndRemappedBuffers) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  auto* page_buf = static_cast<std::uint8_t*>(std::aligned_alloc(page(), page()));
  ASSERT_NE(page_buf, nullptr);
  std::memset(page_buf, 0, page());
  const std::uint32_t half = static_cast<std::uint32_t>(page() / 2);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* a = ibv_reg_mr(pd, page_buf, half, access);
  ibv_mr* b = ibv_reg_mr(pd, page_buf + half, half, access);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(probe(pd, a, page_buf, 16, 0x01), 0);
  ASSERT_EQ(probe(pd, b, page_buf + half, 16, 0x02), 0);
  EXPECT_EQ(page_buf[0], 0x01);
  EXPECT_EQ(page_buf[half], 0x02);
  EXPECT_EQ(ibv_dereg_mr(a), 0);
  EXPECT_EQ(ibv_dereg_mr(b), 0);
  std::free(page_buf);

  const std::size_t len = 2 * page();
  void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  ibv_mr* first = ibv_reg_mr(pd, m, len, access);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ibv_dereg_mr(first), 0);
  ASSERT_EQ(::munmap(m, len), 0);
  void* again = ::mmap(m, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(again, m);
  ibv_mr* second = ibv_reg_mr(pd, m, len, access);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(probe(pd, second, static_cast<std::uint8_t*>(m) + 10, 4, 0x3C), 0);
  EXPECT_EQ(static_cast<std::uint8_t*>(m)[10], 0x3C);
  EXPECT_EQ(ibv_dereg_mr(second), 0);
  ::munmap(m, len);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// fork() after registering: the moved pages are MAP_SHARED, yet the child gets a private copy
// (as fork promises), so neither process's writes (its heap included) reach the other.
TEST_F(Service, ForkedChildGetsAPrivateCopyOfMovedPages) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  std::vector<std::uint8_t> buf(3 * page(), 0x42);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr);
  int done[2];
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool saw = buf[0] == 0x42;
    std::memset(buf.data(), 0x99, buf.size());
    ::_exit(saw && ::write(done[1], "d", 1) == 1 ? 0 : 1);
  }
  char d;
  ASSERT_EQ(::read(done[0], &d, 1), 1);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (auto b : buf) ASSERT_EQ(b, 0x42);
  // The parent's registration still works on the parent's pages.
  ASSERT_EQ(probe(pd, mr, buf.data() + 1, 2, 0x07), 0);
  EXPECT_EQ(buf[1], 0x07);
  ::close(done[0]);
  ::close(done[1]);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// --- slice 3: CQs and QPs through the shared rings ---

class ServiceQps : public Service {
 protected:
  void SetUp() override {
    Service::SetUp();
    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(pd, nullptr);
    ch = ibv_create_comp_channel(ctx);
    ASSERT_NE(ch, nullptr);
    cq_a = ibv_create_cq(ctx, 64, this, ch, 0);
    cq_b = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq_a, nullptr);
    ASSERT_NE(cq_b, nullptr);
    ibv_qp_init_attr ia{};
    ia.qp_type = IBV_QPT_RC;
    ia.cap = {16, 16, 2, 2, 64};
    ia.send_cq = ia.recv_cq = cq_a;
    a = ibv_create_qp(pd, &ia);
    ia.send_cq = ia.recv_cq = cq_b;
    b = ibv_create_qp(pd, &ia);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_GE(ia.cap.max_send_wr, 16u);
    ibv_gid gid{};
    ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
    ASSERT_EQ(to_rts(a, b->qp_num, gid), 0);
    ASSERT_EQ(to_rts(b, a->qp_num, gid), 0);
    for (auto& m : mem) {
      m.assign(8192, 0);
      const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      mrs.push_back(ibv_reg_mr(pd, m.data(), m.size(), access));
      ASSERT_NE(mrs.back(), nullptr);
    }
  }
  void TearDown() override {
    if (a) {
      EXPECT_EQ(ibv_destroy_qp(a), 0);
    }
    if (b) {
      EXPECT_EQ(ibv_destroy_qp(b), 0);
    }
    for (ibv_mr* m : mrs) EXPECT_EQ(ibv_dereg_mr(m), 0);
    if (cq_a) {
      EXPECT_EQ(ibv_destroy_cq(cq_a), 0);
    }
    if (cq_b) {
      EXPECT_EQ(ibv_destroy_cq(cq_b), 0);
    }
    if (ch) {
      EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    }
    if (pd) {
      EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    }
    Service::TearDown();
  }
  int post(ibv_qp* qp, ibv_wr_opcode op, ibv_mr* mr, std::size_t off, std::uint32_t len, ibv_mr* remote = nullptr,
           std::size_t roff = 0, unsigned flags = IBV_SEND_SIGNALED) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(mr->addr) + off, len, mr->lkey};
    ibv_send_wr w{};
    ibv_send_wr* bad = nullptr;
    w.wr_id = 0x5150 + off;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = op;
    w.send_flags = flags;
    if (remote) {
      w.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(remote->addr) + roff;
      w.wr.rdma.rkey = remote->rkey;
    }
    return ibv_post_send(qp, &w, &bad);
  }
  int post_recv(ibv_qp* qp, ibv_mr* mr, std::size_t off, std::uint32_t len) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(mr->addr) + off, len, mr->lkey};
    ibv_recv_wr w{};
    ibv_recv_wr* bad = nullptr;
    w.wr_id = 0x7000 + off;
    w.sg_list = &s;
    w.num_sge = 1;
    return ibv_post_recv(qp, &w, &bad);
  }

  ibv_pd* pd = nullptr;
  ibv_comp_channel* ch = nullptr;
  ibv_cq* cq_a = nullptr;
  ibv_cq* cq_b = nullptr;
  ibv_qp* a = nullptr;
  ibv_qp* b = nullptr;
  std::vector<std::uint8_t> mem[2];
  std::vector<ibv_mr*> mrs;
};

TEST_F(ServiceQps, SendWriteReadMoveEveryByte) {
  for (std::size_t i = 0; i < 4096; ++i) mem[0][i] = static_cast<std::uint8_t>(i * 7 + 1);
  ASSERT_EQ(post_recv(b, mrs[1], 0, 4096), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, mrs[0], 0, 3000), 0);
  ibv_wc wc{};
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  EXPECT_EQ(wc.wr_id, 0x5150u);
  EXPECT_EQ(wc.qp_num, a->qp_num);
  ASSERT_EQ(poll_one(cq_b, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 3000u);
  EXPECT_EQ(wc.wr_id, 0x7000u);
  EXPECT_EQ(std::memcmp(mem[1].data(), mem[0].data(), 3000), 0);
  // WRITE into b's buffer at an offset; READ it back into a's second half.
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 100, 2000, mrs[1], 5000), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(mem[1].data() + 5000, mem[0].data() + 100, 2000), 0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_READ, mrs[0], 4096, 2000, mrs[1], 5000), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(mem[0].data() + 4096, mem[0].data() + 100, 2000), 0);
  // Inline: the bytes travel in the WQE.
  mem[0][10] = 0xEE;
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 10, 1, mrs[1], 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  mem[0][10] = 0;  // after the post: the WQE already holds the byte
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(mem[1][0], 0xEE);
  StatusReply s = status();
  EXPECT_EQ(s.cqs, 2u);
  EXPECT_EQ(s.qps, 2u);
}

// UD through an address handle of the service: a datagram to our own GID, received with its
// 40-byte GRH slot ahead of the payload.
TEST_F(ServiceQps, UdDatagramThroughAnAddressHandle) {
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_UD;
  ia.cap = {4, 4, 1, 1, 0};
  ia.send_cq = ia.recv_cq = cq_b;
  ibv_qp* u1 = ibv_create_qp(pd, &ia);
  ibv_qp* u2 = ibv_create_qp(pd, &ia);
  ASSERT_NE(u1, nullptr);
  ASSERT_NE(u2, nullptr);
  for (ibv_qp* u : {u1, u2}) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x11111111;
    ASSERT_EQ(ibv_modify_qp(u, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(ibv_modify_qp(u, &a, IBV_QP_STATE), 0);
    a.qp_state = IBV_QPS_RTS;
    ASSERT_EQ(ibv_modify_qp(u, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  }
  ibv_ah_attr aa{};
  aa.is_global = 1;
  aa.port_num = 1;
  aa.grh.hop_limit = 64;
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid), 0);
  ibv_ah* ah = ibv_create_ah(pd, &aa);
  ASSERT_NE(ah, nullptr) << std::strerror(errno);
  for (std::size_t i = 0; i < 100; ++i) mem[0][i] = static_cast<std::uint8_t>(0xA0 + i);
  ASSERT_EQ(post_recv(u2, mrs[1], 0, 40 + 100), 0);
  ibv_sge s{reinterpret_cast<std::uintptr_t>(mem[0].data()), 100, mrs[0]->lkey};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.wr_id = 9;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.ud.ah = ah;
  w.wr.ud.remote_qpn = u2->qp_num;
  w.wr.ud.remote_qkey = 0x11111111;
  ASSERT_EQ(ibv_post_send(u1, &w, &bad), 0);
  ibv_wc wc[2]{};
  int got = 0;
  for (int i = 0; i < 2 && got < 2; ++i) {
    ASSERT_EQ(poll_one(cq_b, wc[got]), 1);
    ++got;
  }
  for (const ibv_wc& c : wc) {
    EXPECT_EQ(c.status, IBV_WC_SUCCESS);
    if (c.opcode == IBV_WC_RECV) {
      EXPECT_EQ(c.byte_len, 140u);
      EXPECT_EQ(c.src_qp, u1->qp_num);
      EXPECT_TRUE(c.wc_flags & IBV_WC_GRH);
    }
  }
  EXPECT_EQ(std::memcmp(mem[1].data() + 40, mem[0].data(), 100), 0);
  // An AH of no one (a pointer the context never made) is refused at post time.
  ibv_ah fake{};
  fake.context = ctx;
  w.wr.ud.ah = &fake;
  EXPECT_EQ(ibv_post_send(u1, &w, &bad), EINVAL);
  EXPECT_EQ(ibv_destroy_ah(&fake), EINVAL);
  EXPECT_EQ(ibv_destroy_qp(u1), 0);
  EXPECT_EQ(ibv_destroy_qp(u2), 0);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(ServiceQps, CompletionChannelRaisesOneEventPerArming) {
  ASSERT_EQ(ibv_req_notify_cq(cq_a, 0), 0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 0, 64, mrs[1], 0), 0);
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);  // blocks until the service raised it
  EXPECT_EQ(ev_cq, cq_a);
  EXPECT_EQ(ev_ctx, this);
  ibv_wc wc{};
  ASSERT_EQ(ibv_poll_cq(cq_a, 1, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ibv_ack_cq_events(cq_a, 1);
  // Arming with an entry already waiting raises the event at once.
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 0, 64, mrs[1], 0), 0);
  ASSERT_EQ(poll_one(cq_a, wc) == 1 ? 0 : -1, 0);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 0, 64, mrs[1], 0), 0);
  // Wait for its completion to reach the ring without taking it, then arm.
  const auto until = std::chrono::steady_clock::now() + kEventBound;
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi), 0);  // a request round trip: gives the service time
    ASSERT_EQ(ibv_req_notify_cq(cq_a, 0), 0);
    pollfd p{ch->fd, POLLIN, 0};
    if (::poll(&p, 1, 10) == 1) break;
  }
  ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
  EXPECT_EQ(ev_cq, cq_a);
  ibv_ack_cq_events(cq_a, 1);
  ASSERT_EQ(ibv_poll_cq(cq_a, 1, &wc), 1);
}

TEST_F(ServiceQps, BadWorkRequestsAnswerAsLibraryMode) {
  ibv_wc wc{};
  // A bad lkey: the error completion, the QP in error, and what follows flushes.
  ibv_sge s{reinterpret_cast<std::uintptr_t>(mem[0].data()), 16, mrs[0]->lkey + 0x100};
  ibv_send_wr w{};
  ibv_send_wr* bad = nullptr;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(mem[1].data());
  w.wr.rdma.rkey = mrs[1]->rkey;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, mrs[0], 0, 8, mrs[1], 0), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
  EXPECT_EQ(qi.send_cq, cq_a);
  // Refused at post time, as in library mode: more SGEs than the caps, too much inline data.
  ibv_sge three[3] = {s, s, s};
  w.sg_list = three;
  w.num_sge = 3;
  EXPECT_EQ(ibv_post_send(b, &w, &bad), EINVAL);
  EXPECT_EQ(bad, &w);
  w.sg_list = &s;
  w.num_sge = 1;
  s.length = 65;
  w.send_flags = IBV_SEND_INLINE;
  EXPECT_EQ(ibv_post_send(b, &w, &bad), EINVAL);
}

// One of rdma-core's pingpong examples, both ends: `common` started as the server, then as the
// client of 127.0.0.1 (again while the server is not listening yet).
struct PairRun {
  int client_rc = -1, server_rc = -1;
  std::string client_out, server_out;
};
std::string read_all(FILE* f) {
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  return out;
}
PairRun run_both_ends(const std::string& common) {
  PairRun run;
  FILE* server = ::popen((common + " 2>&1").c_str(), "r");
  if (server == nullptr) return run;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server listens on TCP first
  for (int attempt = 0; attempt < 20 && run.client_rc != 0; ++attempt) {
    FILE* client = ::popen((common + " 127.0.0.1 2>&1").c_str(), "r");
    if (client == nullptr) break;
    run.client_out = read_all(client);
    run.client_rc = ::pclose(client);
    if (run.client_rc != 0 && run.client_out.find("Couldn't connect") == std::string::npos) break;  // a real failure
    if (run.client_rc != 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  run.server_out = read_all(server);
  run.server_rc = ::pclose(server);
  return run;
}

// Debian's ibv_rc_pingpong, unmodified, both ends through this one service: with completion
// events (-e, 200 iterations) and busy-polling (20: three spinning processes on a loaded
// machine take their time slices in turn).
class Pingpong : public Service, public ::testing::WithParamInterface<const char*> {};

TEST_P(Pingpong, IbvRcPingpongThroughOneService) {
  REQUIRE_PROGRAM("ibv_rc_pingpong");
  REQUIRE_PROGRAM("ibv_ud_pingpong");
  const std::string mode = GetParam();
  const bool events = mode == "events" || mode == "ud";
  const std::string port =
      std::to_string(20000 + ::getpid() % 20000 + (mode == "events" ? 1 : 0) + (mode == "ud" ? 2 : 0));
  const std::string iters = events ? "200" : "20";
  const std::string program = mode == "ud" ? "ibv_ud_pingpong -s 1024 " : "ibv_rc_pingpong -s 4096 ";
  const std::string common = program + (events ? "-e " : "") + "-d svc0 -g 0 -n " + iters + " -p " + port;
  const PairRun run = run_both_ends(common);
  EXPECT_EQ(run.client_rc, 0) << run.client_out;
  EXPECT_EQ(run.server_rc, 0) << run.server_out;
  EXPECT_NE(run.client_out.find(iters + " iters"), std::string::npos) << run.client_out;
  EXPECT_TRUE(wait_for_contexts(1));
}

INSTANTIATE_TEST_SUITE_P(Modes, Pingpong, ::testing::Values("events", "busy", "ud"));

// --- shared receive queues through a ring of their own ---

// SENDs to a QP on an SRQ land in the buffers posted to the SRQ, in order, with the SRQ's
// wr_ids; what library mode refuses at post time or at modify is refused here too. (The limit:
// service_async_test.cpp.)
TEST_F(ServiceQps, SendsLandInTheSrqsBuffers) {
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 2;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr) << std::strerror(errno);
  EXPECT_GE(sa.attr.max_wr, 8u);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq, &q), 0);
  EXPECT_EQ(q.max_wr, sa.attr.max_wr);
  EXPECT_EQ(q.max_sge, sa.attr.max_sge);
  ibv_srq_attr m{};
  m.srq_limit = q.max_wr + 1;
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_LIMIT), EINVAL);  // above max_wr (library mode's answer)
  m.max_wr = 64;
  EXPECT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR), EINVAL);  // not resized (library mode's answer)

  // x -> y, y's receives from the SRQ.
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.cap = {8, 8, 1, 1, 0};
  ia.send_cq = ia.recv_cq = cq_a;
  ibv_qp* x = ibv_create_qp(pd, &ia);
  ia.send_cq = ia.recv_cq = cq_b;
  ia.srq = srq;
  ibv_qp* y = ibv_create_qp(pd, &ia);
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr) << std::strerror(errno);
  EXPECT_EQ(y->srq, srq);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
  ASSERT_EQ(to_rts(x, y->qp_num, gid), 0);
  ASSERT_EQ(to_rts(y, x->qp_num, gid), 0);
  EXPECT_EQ(post_recv(y, mrs[1], 0, 64), EINVAL);  // a QP on an SRQ takes no receives of its own

  ibv_sge three[3];
  for (auto& g : three) g = {reinterpret_cast<std::uintptr_t>(mrs[1]->addr), 16, mrs[1]->lkey};
  ibv_recv_wr r{};
  ibv_recv_wr* bad = nullptr;
  r.sg_list = three;
  r.num_sge = 3;  // above the SRQ's max_sge
  EXPECT_EQ(ibv_post_srq_recv(srq, &r, &bad), EINVAL);
  EXPECT_EQ(bad, &r);
  // Two receives, each 1000 bytes at its own offset (2 SGEs for the second).
  ibv_sge s1{reinterpret_cast<std::uintptr_t>(mrs[1]->addr), 1000, mrs[1]->lkey};
  ibv_sge s2[2] = {{reinterpret_cast<std::uintptr_t>(mrs[1]->addr) + 2000, 500, mrs[1]->lkey},
                   {reinterpret_cast<std::uintptr_t>(mrs[1]->addr) + 3000, 500, mrs[1]->lkey}};
  ibv_recv_wr r2{};
  r2.wr_id = 0x52;
  r2.sg_list = s2;
  r2.num_sge = 2;
  ibv_recv_wr r1{};
  r1.wr_id = 0x51;
  r1.sg_list = &s1;
  r1.num_sge = 1;
  r1.next = &r2;
  ASSERT_EQ(ibv_post_srq_recv(srq, &r1, &bad), 0);
  for (std::size_t i = 0; i < 2000; ++i) mem[0][i] = static_cast<std::uint8_t>(i * 13 + 5);
  ASSERT_EQ(post(x, IBV_WR_SEND, mrs[0], 0, 1000), 0);
  ASSERT_EQ(post(x, IBV_WR_SEND, mrs[0], 1000, 1000), 0);
  ibv_wc wc{};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(poll_one(cq_a, wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  }
  for (std::uint64_t want : {0x51u, 0x52u}) {
    ASSERT_EQ(poll_one(cq_b, wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.wr_id, want);
    EXPECT_EQ(wc.byte_len, 1000u);
    EXPECT_EQ(wc.qp_num, y->qp_num);
  }
  EXPECT_EQ(std::memcmp(mem[1].data(), mem[0].data(), 1000), 0);
  EXPECT_EQ(std::memcmp(mem[1].data() + 2000, mem[0].data() + 1000, 500), 0);
  EXPECT_EQ(std::memcmp(mem[1].data() + 3000, mem[0].data() + 1500, 500), 0);

  EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);  // y still uses it
  EXPECT_EQ(ibv_destroy_qp(x), 0);
  EXPECT_EQ(ibv_destroy_qp(y), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// Memory windows through the service: a type 1 window bound with ibv_bind_mw and a type 2
// window bound by a BIND_MW work request in the send ring give the peer WRITE access through
// their keys only; the peer's SEND_WITH_INVALIDATE ends the type 2 window, and a WRITE
// through it then fails with IBV_WC_REM_ACCESS_ERR. A window or region of another context is
// EINVAL at post time.
TEST_F(ServiceQps, WritesThroughBoundWindows) {
  ibv_device_attr da{};
  ASSERT_EQ(ibv_query_device(ctx, &da), 0);
  EXPECT_GT(da.max_mw, 0);
  EXPECT_NE(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW, 0u);
  ibv_mr* wmr = ibv_reg_mr(pd, mem[1].data(), mem[1].size(),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
  ASSERT_NE(wmr, nullptr) << std::strerror(errno);
  ibv_mw* w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  ibv_mw* w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  ASSERT_NE(w1, nullptr) << std::strerror(errno);
  ASSERT_NE(w2, nullptr) << std::strerror(errno);
  const auto base = reinterpret_cast<std::uint64_t>(mem[1].data());
  const std::uint32_t before = w1->rkey;
  const std::uint32_t k2 = bind_two_windows(b, wmr, base, 2048, w1, w2);
  ASSERT_NE(k2, 0u);
  EXPECT_EQ(w1->rkey, ibv_inc_rkey(before));
  ibv_send_wr* bad = nullptr;
  ibv_wc wc{};
  for (std::uint64_t id : {11u, 12u}) {
    ASSERT_EQ(poll_one(cq_b, wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.opcode, IBV_WC_BIND_MW);
    EXPECT_EQ(wc.wr_id, id);
  }
  auto write = [&](std::uint64_t to, std::uint32_t rkey) {
    ibv_sge sg{reinterpret_cast<std::uintptr_t>(mem[0].data()), 100, mrs[0]->lkey};
    ibv_send_wr w{};
    w.sg_list = &sg;
    w.num_sge = 1;
    w.opcode = IBV_WR_RDMA_WRITE;
    w.send_flags = IBV_SEND_SIGNALED;
    w.wr.rdma.remote_addr = to;
    w.wr.rdma.rkey = rkey;
    ibv_send_wr* b2 = nullptr;
    return ibv_post_send(a, &w, &b2);
  };
  std::memset(mem[0].data(), 0x5A, 100);
  ASSERT_EQ(write(base + 10, w1->rkey), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  ASSERT_EQ(write(base + 4096 + 10, k2), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(mem[1][10], 0x5A);
  EXPECT_EQ(mem[1][4096 + 10], 0x5A);
  EXPECT_EQ(mem[1][9], 0);
  // The peer invalidates the type 2 window with its SEND.
  ASSERT_EQ(post_recv(b, mrs[1], 6000, 64), 0);
  ibv_sge sg{reinterpret_cast<std::uintptr_t>(mem[0].data()), 8, mrs[0]->lkey};
  ibv_send_wr inv{};
  inv.sg_list = &sg;
  inv.num_sge = 1;
  inv.opcode = IBV_WR_SEND_WITH_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = k2;
  ASSERT_EQ(ibv_post_send(a, &inv, &bad), 0);
  ASSERT_EQ(poll_one(cq_b, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(wc.invalidated_rkey, k2);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  ASSERT_EQ(write(base + 4096 + 200, k2), 0);
  ASSERT_EQ(poll_one(cq_a, wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(mem[1][4096 + 200], 0);
  // A window of no context of ours is refused before it reaches the ring.
  struct {
    ibv_mw mw;
    std::uint64_t beyond[8];  // where our windows keep their magic word: zero here
  } foreign{};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = &foreign.mw;
  EXPECT_EQ(ibv_post_send(b, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(ibv_dealloc_mw(w1), 0);
  EXPECT_EQ(ibv_dealloc_mw(w2), 0);
  EXPECT_EQ(ibv_dereg_mr(wmr), 0);
}

// Debian's ibv_srq_pingpong, unmodified, both ends through this one service: 16 QPs on one
// SRQ on each end.
TEST_F(Service, IbvSrqPingpongThroughOneService) {
  REQUIRE_PROGRAM("ibv_srq_pingpong");
  const std::string port = std::to_string(20000 + ::getpid() % 20000 + 3);
  const std::string common = "ibv_srq_pingpong -d svc0 -g 0 -n 100 -p " + port;
  const PairRun run = run_both_ends(common);
  EXPECT_EQ(run.client_rc, 0) << run.client_out;
  EXPECT_EQ(run.server_rc, 0) << run.server_out;
  EXPECT_NE(run.client_out.find("100 iters"), std::string::npos) << run.client_out;
  EXPECT_TRUE(wait_for_contexts(1));
}

// --- slice 4: several programs moving data through one service at once ---


// Two ib_write_bw pairs (Debian's perftest, unmodified) through this one service at once; the
// client of the second is SIGKILLed mid-transfer. The first pair finishes with its own verdict,
// and the service frees every object of the killed program (and of its server, killed after).
TEST_F(Service, TwoPerftestPairsOneClientKilledMidTransfer) {
  REQUIRE_PROGRAM("ib_write_bw");
  REQUIRE_PROGRAM("stdbuf");
  const std::string dir = "/tmp/roce-verbs-service-test-" + std::to_string(::getpid());
  const std::string p1 = std::to_string(21000 + ::getpid() % 20000), p2 = std::to_string(21001 + ::getpid() % 20000);
  // stdbuf: perftest's progress lines reach the files as they are printed (line-buffered).
  const std::vector<std::string> bw = {"stdbuf", "-oL", "ib_write_bw", "-d", "svc0", "-x", "0", "-s", "16384"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = bw;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  Program server1 = spawn(with({"-p", p1, "-n", "1000"}), dir + ".s1");
  Program server2 = spawn(with({"-p", p2, "-D", "60"}), dir + ".s2");
  Program client1, client2;
  // Whatever happens below, no program of this test outlives it.
  struct Reaper {
    std::vector<Program*> all;
    ~Reaper() {
      for (Program* p : all)
        if (p->pid > 0 && ::kill(p->pid, SIGKILL) == 0) ::waitpid(p->pid, nullptr, 0);
    }
  } reaper{{&server1, &server2, &client1, &client2}};
  ASSERT_TRUE(wait_for_output(server1, "Waiting for client")) << slurp(server1.out);
  ASSERT_TRUE(wait_for_output(server2, "Waiting for client")) << slurp(server2.out);
  client2 = spawn(with({"-p", p2, "-D", "60", "127.0.0.1"}), dir + ".c2");
  ASSERT_TRUE(wait_for_output(client2, "#bytes")) << slurp(client2.out);  // its transfer has begun
  client1 = spawn(with({"-p", p1, "-n", "1000", "127.0.0.1"}), dir + ".c1");
  ASSERT_TRUE(wait_for_output(client1, "#bytes")) << slurp(client1.out);
  EXPECT_GE(status().qps, 4u);
  ASSERT_EQ(::kill(client2.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(client2, std::chrono::seconds(30)), 128 + SIGKILL);
  EXPECT_EQ(wait_exit(client1, std::chrono::seconds(90)), 0) << slurp(client1.out);
  EXPECT_EQ(wait_exit(server1, std::chrono::seconds(30)), 0) << slurp(server1.out);
  EXPECT_NE(slurp(client1.out).find(" 16384      1000"), std::string::npos) << slurp(client1.out);
  ::kill(server2.pid, SIGKILL);  // it waits for a client that is gone
  wait_exit(server2, std::chrono::seconds(30));
  EXPECT_TRUE(wait_for_contexts(1));
  const StatusReply s = status();
  EXPECT_EQ(s.qps, 0u);
  EXPECT_EQ(s.cqs, 0u);
  EXPECT_EQ(s.mrs, 0u);
  for (const char* f : {".s1", ".s2", ".c1", ".c2"}) ::unlink((dir + f).c_str());
}

// A program that writes nonsense into its rings (a WQE with 1000 SGEs, a tail a million
// entries ahead, a CQ head past the tail) gets error completions and a QP in error; the
// service reads nothing outside the rings and goes on serving.
TEST_F(Service, CorruptRingsHurtOnlyTheirProgram) {
  using namespace roce::verbs::service;
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  auto call = [&](Op op, std::uint32_t handle, const void* body, std::size_t len, int file, Reply& rep) {
    Request rq;
    rq.op = op;
    rq.handle = handle;
    std::memcpy(rq.body, body, len);
    iovec iov{&rq, kRequestHeader + len};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (file >= 0) {
      h.msg_control = control;
      h.msg_controllen = sizeof control;
      cmsghdr* cm = CMSG_FIRSTHDR(&h);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cm), &file, sizeof file);
    }
    if (::sendmsg(fd, &h, MSG_NOSIGNAL) < 0) return -1;
    return ::recv(fd, &rep, sizeof rep, 0) > 0 ? rep.err : -1;
  };
  auto sealed_file = [](std::size_t bytes) {
    const int f = ::memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (::ftruncate(f, static_cast<off_t>(bytes)) != 0 || ::fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK) != 0) return -1;
    return f;
  };
  Reply rep;
  ASSERT_EQ(call(Op::Open, 0, nullptr, 0, -1, rep), 0);
  ASSERT_EQ(call(Op::AllocPd, 0, nullptr, 0, -1, rep), 0);
  std::uint32_t pd;
  std::memcpy(&pd, rep.body, sizeof pd);
  const std::size_t cq_bytes = cq_ring_bytes(16);
  const int cq_file = sealed_file(cq_bytes);
  ASSERT_GE(cq_file, 0);
  CreateCqRequest cr{16, 16, 0};
  ASSERT_EQ(call(Op::CreateCq, 0, &cr, sizeof cr, cq_file, rep), 0);
  CreateCqReply cq;
  std::memcpy(&cq, rep.body, sizeof cq);
  const auto layout = qp_ring_layout(16, 16);
  const int qp_file = sealed_file(layout.bytes);
  ASSERT_GE(qp_file, 0);
  CreateQpRequest qr;
  qr.send_cq = qr.recv_cq = cq.handle;
  qr.qp_type = IBV_QPT_RC;
  qr.cap = {4, 4, 1, 1, 0};
  qr.sq_size = qr.rq_size = 16;
  ASSERT_EQ(call(Op::CreateQp, pd, &qr, sizeof qr, qp_file, rep), 0);
  CreateQpReply qp;
  std::memcpy(&qp, rep.body, sizeof qp);
  auto* cq_map = static_cast<char*>(::mmap(nullptr, cq_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, cq_file, 0));
  auto* qp_map = static_cast<char*>(::mmap(nullptr, layout.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, qp_file, 0));
  ASSERT_NE(cq_map, MAP_FAILED);
  ASSERT_NE(qp_map, MAP_FAILED);
  auto* cq_ring = reinterpret_cast<RingHeader*>(cq_map);
  auto* cq_entries = reinterpret_cast<ibv_wc*>(cq_map + sizeof(RingHeader));
  auto* sq = reinterpret_cast<RingHeader*>(qp_map + layout.sq_header);
  auto* sq_entries = reinterpret_cast<SendWqe*>(qp_map + layout.sq_entries);
  auto wait_entries = [&](std::uint32_t n) {
    const auto until = std::chrono::steady_clock::now() + kEventBound;
    while (cq_ring->tail.load() < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return cq_ring->tail.load() >= n;
  };
  sq_entries[0].wr_id = 41;
  sq_entries[0].num_sge = 1000;
  sq_entries[0].opcode = IBV_WR_SEND;
  sq->tail.store(1);
  ASSERT_TRUE(wait_entries(1));
  EXPECT_EQ(cq_entries[0].wr_id, 41u);
  EXPECT_EQ(cq_entries[0].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(cq_entries[0].qp_num, qp.qp_num);
  sq->tail.store(1000000);  // a tail a million entries ahead of the service's head
  ASSERT_TRUE(wait_entries(2));
  EXPECT_EQ(cq_entries[1].status, IBV_WC_LOC_QP_OP_ERR);
  ModifyQpRequest mr;
  mr.attr.qp_state = IBV_QPS_INIT;
  mr.mask = IBV_QP_STATE;
  EXPECT_EQ(call(Op::ModifyQp, qp.handle, &mr, sizeof mr, -1, rep), EINVAL);  // its rings are not read again
  cq_ring->head.store(cq_ring->tail.load() + 12345);  // a consumer index past the producer's
  StatusReply s = status();
  EXPECT_EQ(s.qps, 1u);
  EXPECT_EQ(s.cqs, 1u);
  // Files where none belong, and a ring file too small for its sizes, are refused.
  EXPECT_EQ(call(Op::DestroyQp, qp.handle, nullptr, 0, qp_file, rep), EINVAL);
  const int small = sealed_file(4096);
  qr.sq_size = qr.rq_size = 1024;
  EXPECT_EQ(call(Op::CreateQp, pd, &qr, sizeof qr, small, rep), EINVAL);
  EXPECT_EQ(call(Op::DestroyQp, qp.handle, nullptr, 0, -1, rep), 0);
  EXPECT_EQ(call(Op::DestroyCq, cq.handle, nullptr, 0, -1, rep), 0);
  ::munmap(cq_map, cq_bytes);
  ::munmap(qp_map, layout.bytes);
  for (int f : {cq_file, qp_file, small, fd}) ::close(f);
  EXPECT_TRUE(wait_for_contexts(1));
}

// A program that hands the service a file it could shrink, too small, or where none belongs.
TEST_F(Service, BadMemoryFilesAreRefused) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  Request q;
  q.op = Op::Open;
  ASSERT_EQ(exchange(fd, &q, sizeof q), 0);
  q.op = Op::AllocPd;
  Reply r;
  ASSERT_EQ(exchange(fd, &q, sizeof q, &r), 0);
  std::uint32_t pd;
  std::memcpy(&pd, r.body, sizeof pd);
  auto reg = [&](int memfd, std::uint64_t seg_len, Op op = Op::RegMr) {
    roce::verbs::service::RegMrRequest m{};
    m.addr = 0x10000000;
    m.length = page();
    m.iova = m.addr;
    m.access = IBV_ACCESS_LOCAL_WRITE;
    m.segments = 1;
    m.segment[0] = {0, seg_len};
    Request rq;
    rq.op = op;
    rq.handle = pd;
    std::memcpy(rq.body, &m, sizeof m);
    iovec iov{&rq, sizeof rq};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&h);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &memfd, sizeof memfd);
    if (::sendmsg(fd, &h, MSG_NOSIGNAL) < 0) return -1;
    Reply rep;
    return ::recv(fd, &rep, sizeof rep, 0) > 0 ? rep.err : -1;
  };
  const int unsealed = ::memfd_create("t", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(unsealed, static_cast<off_t>(page())), 0);
  EXPECT_EQ(reg(unsealed, page()), EINVAL);  // could shrink under the service's mapping
  const int sealed = ::memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(::ftruncate(sealed, static_cast<off_t>(page())), 0);
  ASSERT_EQ(::fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  EXPECT_EQ(reg(sealed, 2 * page()), EINVAL);  // the file is smaller than its segment
  EXPECT_EQ(reg(sealed, page() / 2), EINVAL);  // not whole pages
  EXPECT_EQ(reg(sealed, page(), Op::AllocPd), EINVAL);  // a file where none belongs
  EXPECT_EQ(reg(sealed, page()), 0);  // well-formed: accepted
  EXPECT_EQ(status().mrs, 1u);
  ::close(unsealed);
  ::close(sealed);
  ::close(fd);
  EXPECT_TRUE(wait_for_contexts(1));
  EXPECT_EQ(status().mrs, 0u);  // freed with the connection
}

TEST_F(Service, MalformedRecordsGetAnErrnoAndTheServiceGoesOn) {
  const int fd = raw_connect();
  ASSERT_GE(fd, 0);
  const char junk[3] = {1, 2, 3};
  EXPECT_EQ(exchange(fd, junk, sizeof junk), EINVAL);  // shorter than a request header
  std::vector<char> big(sizeof(Request) + 100, 0);
  EXPECT_EQ(exchange(fd, big.data(), big.size()), EINVAL);  // longer than any request
  Request q;
  q.version = 99;
  q.op = Op::Hello;
  EXPECT_EQ(exchange(fd, &q, roce::verbs::service::kRequestHeader), EPROTO);
  q.version = roce::verbs::service::kProtocolVersion;
  q.op = static_cast<Op>(999);
  EXPECT_EQ(exchange(fd, &q, sizeof q), EOPNOTSUPP);
  q.op = Op::QueryPort;
  q.arg = 300;
  EXPECT_EQ(exchange(fd, &q, sizeof q), EINVAL);
  q.arg = 1;
  EXPECT_EQ(exchange(fd, &q, sizeof q), 0);
  q.op = Op::Open;
  EXPECT_EQ(exchange(fd, &q, sizeof q), 0);
  EXPECT_EQ(exchange(fd, &q, sizeof q), EBUSY);  // one context per connection
  ::close(fd);
  // This fixture's context is still served.
  ibv_port_attr p{};
  EXPECT_EQ(ibv_query_port(ctx, 1, &p), 0);
  EXPECT_TRUE(wait_for_contexts(1));
}

// Two programs on one service; one is SIGKILLed holding its context: the service frees it and
// the other program's context keeps being served until it exits normally.
TEST_F(Service, KilledProgramIsFreedAndTheOtherGoesOn) {
  ASSERT_TRUE(wait_for_contexts(1));  // this fixture's
  int opened[2], go[2];
  ASSERT_EQ(::pipe(opened), 0);
  ASSERT_EQ(::pipe(go), 0);
  auto client = [&](bool survivor) -> pid_t {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    int n = 0;
    ibv_device** l = ibv_get_device_list(&n);
    ibv_context* c = n == 1 ? ibv_open_device(l[0]) : nullptr;
    ibv_pd* pd = c ? ibv_alloc_pd(c) : nullptr;
    static std::uint8_t mem[3 * 4096];
    ibv_mr* mr = pd ? ibv_reg_mr(pd, mem, sizeof mem, static_cast<int>(IBV_ACCESS_LOCAL_WRITE)) : nullptr;
    // The one killed also holds an SRQ (its ring mapped in the service) and a memory window.
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    const bool more = survivor || (ibv_create_srq(pd, &sa) != nullptr && ibv_alloc_mw(pd, IBV_MW_TYPE_1) != nullptr);
    const char byte = mr && more ? 'o' : 'x';
    if (::write(opened[1], &byte, 1) != 1) ::_exit(3);
    if (!survivor) {
      for (;;) ::pause();  // until SIGKILL
    }
    char g;
    if (::read(go[0], &g, 1) != 1) ::_exit(4);
    ibv_port_attr p{};
    if (ibv_query_port(c, 1, &p) != 0 || p.state != IBV_PORT_ACTIVE) ::_exit(5);
    ::_exit(0);  // exits without closing its context: the service frees it too
  };
  const pid_t survivor = client(true);
  const pid_t victim = client(false);
  ASSERT_GT(survivor, 0);
  ASSERT_GT(victim, 0);
  for (int i = 0; i < 2; ++i) {
    char b = 0;
    ASSERT_EQ(::read(opened[0], &b, 1), 1);
    EXPECT_EQ(b, 'o');
  }
  StatusReply s = status();
  EXPECT_EQ(s.contexts, 3u);
  EXPECT_EQ(s.pds, 2u);
  EXPECT_EQ(s.mrs, 2u);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(victim, &st, 0), victim);
  EXPECT_TRUE(wait_for_contexts(2)) << "the killed program's context was not freed";
  s = status();
  EXPECT_EQ(s.pds, 1u);
  EXPECT_EQ(s.mrs, 1u);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(::waitpid(survivor, &st, 0), survivor);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "survivor status " << st;
  EXPECT_TRUE(wait_for_contexts(1));
  s = status();
  EXPECT_EQ(s.pds, 0u);
  EXPECT_EQ(s.mrs, 0u);
  EXPECT_EQ(s.mapped_bytes, 0u);
  for (int fd : {opened[0], opened[1], go[0], go[1]}) ::close(fd);
  ibv_port_attr p{};
  EXPECT_EQ(ibv_query_port(ctx, 1, &p), 0);
}

}  // namespace
}  // namespace service_test
