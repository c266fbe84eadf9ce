// NVMe structures carried by NVMe over Fabrics (shared/spec/nvmf-rdma.md sections 3, 4, 6-8):
// the 64-byte submission queue entry (SQE), the 16-byte completion queue entry (CQE), SGL
// descriptors, the Fabrics Connect / Property commands, Identify data, log pages. All fields
// little-endian (le.hpp); offsets are pinned with static_asserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "protocol/le.hpp"

namespace roce::proto::nvme {

using le::Le16;
using le::Le24;
using le::Le32;
using le::Le64;

inline constexpr std::size_t kSqeSize = 64;
inline constexpr std::size_t kCqeSize = 16;

// Admin opcodes.
enum class AdminOpcode : std::uint8_t {
  DeleteIoSq = 0x00,
  GetLogPage = 0x02,
  Identify = 0x06,
  Abort = 0x08,
  SetFeatures = 0x09,
  GetFeatures = 0x0A,
  AsyncEventRequest = 0x0C,
  KeepAlive = 0x18,
  Fabrics = 0x7F,
};
// NVM command set (I/O queue) opcodes.
enum class IoOpcode : std::uint8_t {
  Flush = 0x00,
  Write = 0x01,
  Read = 0x02,
  WriteZeroes = 0x08,
  DatasetManagement = 0x09,
  Fabrics = 0x7F,
};
enum class FabricsType : std::uint8_t {
  PropertySet = 0x00,
  Connect = 0x01,
  PropertyGet = 0x04,
  AuthSend = 0x05,
  AuthReceive = 0x06,
  Disconnect = 0x08,
};
std::string to_string(AdminOpcode o);
std::string to_string(IoOpcode o);
std::string to_string(FabricsType t);

// SGL descriptor identifier (byte 15): type in bits 7..4, subtype in bits 3..0.
enum class SglType : std::uint8_t {
  DataBlock = 0x0,
  BitBucket = 0x1,
  Segment = 0x2,
  LastSegment = 0x3,
  KeyedDataBlock = 0x4,
  TransportDataBlock = 0x5,
  Vendor = 0xF,
};
enum class SglSubtype : std::uint8_t { Address = 0x0, Offset = 0x1, Transport = 0xA, Invalidate = 0xF };
constexpr std::uint8_t sgl_id(SglType t, SglSubtype s) {
  return static_cast<std::uint8_t>(static_cast<std::uint8_t>(t) << 4 | static_cast<std::uint8_t>(s));
}

// A 16-byte SGL descriptor as it sits in the SQE; keyed() and offset() read it in the two
// layouts NVMe/RDMA uses.
struct SglDescriptor {
  Le64 addr;                        // keyed: host virtual address; offset: offset into capsule data
  std::array<std::uint8_t, 7> spec{};  // keyed: length u24 + key u32; offset: length u32 + 3 rsvd
  std::uint8_t id = 0;

  SglType type() const { return static_cast<SglType>(id >> 4); }
  SglSubtype subtype() const { return static_cast<SglSubtype>(id & 0xF); }
  std::uint32_t keyed_length() const {
    Le24 l;
    for (int i = 0; i < 3; ++i) l.bytes[i] = spec[i];
    return l.get();
  }
  std::uint32_t key() const {
    Le32 k;
    for (int i = 0; i < 4; ++i) k.bytes[i] = spec[3 + i];
    return k.get();
  }
  std::uint32_t offset_length() const {
    Le32 l;
    for (int i = 0; i < 4; ++i) l.bytes[i] = spec[i];
    return l.get();
  }
  static SglDescriptor keyed(std::uint64_t va, std::uint32_t len, std::uint32_t key, bool invalidate);
  static SglDescriptor in_capsule(std::uint64_t offset, std::uint32_t len);
};
static_assert(sizeof(SglDescriptor) == 16);

// Submission queue entry, generic layout.
struct Sqe {
  std::uint8_t opc = 0;
  std::uint8_t flags = 0;  // bits 1..0 FUSE, bits 7..6 PSDT (01b = SGL for fabrics)
  Le16 cid;
  Le32 nsid;               // Fabrics commands: byte 4 is FCTYPE
  std::array<std::uint8_t, 8> rsvd8{};
  Le64 mptr;
  SglDescriptor sgl1;
  Le32 cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;

  std::uint8_t fctype() const { return nsid.bytes[0]; }
  void set_fctype(FabricsType t) { nsid = Le32::of(static_cast<std::uint8_t>(t)); }
};
static_assert(sizeof(Sqe) == kSqeSize);
static_assert(offsetof(Sqe, sgl1) == 24 && offsetof(Sqe, cdw10) == 40 && offsetof(Sqe, cdw15) == 60);
inline constexpr std::uint8_t kPsdtSgl = 0x40;

// Fabrics Connect command (FCTYPE 0x01).
struct ConnectCommand {
  std::uint8_t opc = 0x7F;
  std::uint8_t flags = kPsdtSgl;
  Le16 cid;
  std::uint8_t fctype = static_cast<std::uint8_t>(FabricsType::Connect);
  std::array<std::uint8_t, 19> rsvd5{};
  SglDescriptor sgl1;
  Le16 recfmt;
  Le16 qid;
  Le16 sqsize;  // 0's based
  std::uint8_t cattr = 0;
  std::uint8_t rsvd47 = 0;
  Le32 kato;    // ms
  std::array<std::uint8_t, 12> rsvd52{};
};
static_assert(sizeof(ConnectCommand) == kSqeSize);
static_assert(offsetof(ConnectCommand, recfmt) == 40 && offsetof(ConnectCommand, qid) == 42 &&
              offsetof(ConnectCommand, sqsize) == 44 && offsetof(ConnectCommand, cattr) == 46 &&
              offsetof(ConnectCommand, kato) == 48);

inline constexpr std::size_t kConnectDataSize = 1024;
inline constexpr std::uint16_t kDynamicCntlid = 0xFFFF;
struct ConnectData {
  std::array<std::uint8_t, 16> hostid{};
  Le16 cntlid;
  std::array<std::uint8_t, 238> rsvd18{};
  std::array<char, 256> subnqn{};
  std::array<char, 256> hostnqn{};
  std::array<std::uint8_t, 256> rsvd768{};
};
static_assert(sizeof(ConnectData) == kConnectDataSize);
static_assert(offsetof(ConnectData, cntlid) == 16 && offsetof(ConnectData, subnqn) == 256 &&
              offsetof(ConnectData, hostnqn) == 512);

// Property Get (0x04) / Set (0x00).
struct PropertyCommand {
  std::uint8_t opc = 0x7F;
  std::uint8_t flags = kPsdtSgl;
  Le16 cid;
  std::uint8_t fctype = 0;
  std::array<std::uint8_t, 35> rsvd5{};
  std::uint8_t attrib = 0;  // bits 2..0: 0 = 4 bytes, 1 = 8 bytes
  std::array<std::uint8_t, 3> rsvd41{};
  Le32 ofst;
  Le64 value;               // Set only
  std::array<std::uint8_t, 8> rsvd56{};
};
static_assert(sizeof(PropertyCommand) == kSqeSize);
static_assert(offsetof(PropertyCommand, attrib) == 40 && offsetof(PropertyCommand, ofst) == 44 &&
              offsetof(PropertyCommand, value) == 48);

// Controller properties (register offsets).
enum class Property : std::uint32_t { Cap = 0x00, Vs = 0x08, Cc = 0x14, Csts = 0x1C, Nssr = 0x20 };

// Completion queue entry.
struct Cqe {
  Le32 dw0;
  Le32 dw1;
  Le16 sqhd;
  Le16 sqid;
  Le16 cid;
  Le16 status;  // bit 0 phase, 8..1 SC, 11..9 SCT, 13..12 CRD, 14 M, 15 DNR
};
static_assert(sizeof(Cqe) == kCqeSize);

// Status code types and the codes this binding uses (spec section 8).
enum class StatusType : std::uint8_t { Generic = 0, CommandSpecific = 1, MediaError = 2, Path = 3 };
namespace sc {
inline constexpr std::uint8_t kSuccess = 0x00;
inline constexpr std::uint8_t kInvalidOpcode = 0x01;
inline constexpr std::uint8_t kInvalidField = 0x02;
inline constexpr std::uint8_t kDataTransferError = 0x04;
inline constexpr std::uint8_t kAbortRequested = 0x07;
inline constexpr std::uint8_t kInternalError = 0x06;
inline constexpr std::uint8_t kInvalidNamespace = 0x0B;
inline constexpr std::uint8_t kCommandSequenceError = 0x0C;
inline constexpr std::uint8_t kDataSglLengthInvalid = 0x0F;
inline constexpr std::uint8_t kSglDescriptorTypeInvalid = 0x11;
inline constexpr std::uint8_t kSglOffsetInvalid = 0x16;
inline constexpr std::uint8_t kLbaOutOfRange = 0x80;
inline constexpr std::uint8_t kCapacityExceeded = 0x81;
inline constexpr std::uint8_t kNamespaceNotReady = 0x82;
// Command specific (SCT 1).
inline constexpr std::uint8_t kInvalidQueueIdentifier = 0x01;
inline constexpr std::uint8_t kInvalidQueueSize = 0x02;
inline constexpr std::uint8_t kAsyncEventLimitExceeded = 0x05;
inline constexpr std::uint8_t kInvalidLogPage = 0x09;
inline constexpr std::uint8_t kFeatureNotSaveable = 0x0D;
inline constexpr std::uint8_t kConnectIncompatibleFormat = 0x80;
inline constexpr std::uint8_t kConnectControllerBusy = 0x81;
inline constexpr std::uint8_t kConnectInvalidParameters = 0x82;
inline constexpr std::uint8_t kConnectRestartDiscovery = 0x83;
inline constexpr std::uint8_t kConnectInvalidHost = 0x84;
}  // namespace sc

struct NvmeStatus {
  StatusType sct = StatusType::Generic;
  std::uint8_t sc = 0;
  bool dnr = false;

  bool ok() const { return sct == StatusType::Generic && sc == sc::kSuccess; }
  // The CQE's 16-bit status field (phase bit 0).
  std::uint16_t field() const {
    return static_cast<std::uint16_t>(sc << 1 | static_cast<unsigned>(sct) << 9 | (dnr ? 0x8000u : 0u));
  }
  static NvmeStatus from_field(std::uint16_t f) {
    return {static_cast<StatusType>((f >> 9) & 7), static_cast<std::uint8_t>((f >> 1) & 0xFF), (f & 0x8000) != 0};
  }
  friend bool operator==(const NvmeStatus&, const NvmeStatus&) = default;
};
inline constexpr NvmeStatus kOk{};
inline constexpr NvmeStatus generic_error(std::uint8_t code, bool dnr = true) { return {StatusType::Generic, code, dnr}; }
inline constexpr NvmeStatus specific_error(std::uint8_t code, bool dnr = true) {
  return {StatusType::CommandSpecific, code, dnr};
}
std::string to_string(const NvmeStatus& s);

// Identify CNS values.
enum class Cns : std::uint8_t { Namespace = 0x00, Controller = 0x01, ActiveNsList = 0x02, NsDescriptors = 0x03 };
inline constexpr std::size_t kIdentifySize = 4096;

struct IdentifyController {
  Le16 vid;
  Le16 ssvid;
  std::array<char, 20> sn{};
  std::array<char, 40> mn{};
  std::array<char, 8> fr{};
  std::uint8_t rab = 0;
  std::array<std::uint8_t, 3> ieee{};
  std::uint8_t cmic = 0;
  std::uint8_t mdts = 0;
  Le16 cntlid;
  Le32 ver;
  Le32 rtd3r;
  Le32 rtd3e;
  Le32 oaes;
  Le32 ctratt;
  std::array<std::uint8_t, 11> rsvd100{};
  std::uint8_t cntrltype = 0;
  std::array<std::uint8_t, 144> rsvd112{};
  Le16 oacs;
  std::uint8_t acl = 0;
  std::uint8_t aerl = 0;
  std::uint8_t frmw = 0;
  std::uint8_t lpa = 0;
  std::uint8_t elpe = 0;
  std::uint8_t npss = 0;
  std::array<std::uint8_t, 56> rsvd264{};
  Le16 kas;
  std::array<std::uint8_t, 190> rsvd322{};
  std::uint8_t sqes = 0;
  std::uint8_t cqes = 0;
  Le16 maxcmd;
  Le32 nn;
  Le16 oncs;
  Le16 fuses;
  std::uint8_t fna = 0;
  std::uint8_t vwc = 0;
  Le16 awun;
  Le16 awupf;
  std::uint8_t nvscc = 0;
  std::uint8_t nwpc = 0;
  Le16 acwu;
  std::array<std::uint8_t, 2> rsvd534{};
  Le32 sgls;
  std::array<std::uint8_t, 228> rsvd540{};
  std::array<char, 256> subnqn{};
  std::array<std::uint8_t, 768> rsvd1024{};
  Le32 ioccsz;
  Le32 iorcsz;
  Le16 icdoff;
  std::uint8_t fcatt = 0;
  std::uint8_t msdbd = 0;
  std::array<std::uint8_t, 244> rsvd1804{};
  std::array<std::uint8_t, 1024> psd{};
  std::array<std::uint8_t, 1024> vs{};
};
static_assert(sizeof(IdentifyController) == kIdentifySize);
static_assert(offsetof(IdentifyController, mdts) == 77 && offsetof(IdentifyController, cntlid) == 78 &&
              offsetof(IdentifyController, ver) == 80 && offsetof(IdentifyController, oaes) == 92 &&
              offsetof(IdentifyController, cntrltype) == 111 && offsetof(IdentifyController, oacs) == 256 &&
              offsetof(IdentifyController, aerl) == 259 && offsetof(IdentifyController, lpa) == 261 &&
              offsetof(IdentifyController, kas) == 320 && offsetof(IdentifyController, sqes) == 512 &&
              offsetof(IdentifyController, maxcmd) == 514 && offsetof(IdentifyController, nn) == 516 &&
              offsetof(IdentifyController, oncs) == 520 && offsetof(IdentifyController, vwc) == 525 &&
              offsetof(IdentifyController, sgls) == 536 && offsetof(IdentifyController, subnqn) == 768 &&
              offsetof(IdentifyController, ioccsz) == 1792 && offsetof(IdentifyController, iorcsz) == 1796 &&
              offsetof(IdentifyController, icdoff) == 1800 && offsetof(IdentifyController, msdbd) == 1803 &&
              offsetof(IdentifyController, psd) == 2048);
inline constexpr std::uint32_t kSglsSupported = 1u << 0;
inline constexpr std::uint32_t kSglsKeyed = 1u << 2;
inline constexpr std::uint32_t kSglsInCapsuleOffset = 1u << 20;
inline constexpr std::uint16_t kOncsDsm = 1u << 2;
inline constexpr std::uint16_t kOncsWriteZeroes = 1u << 3;

struct LbaFormat {
  Le16 ms;
  std::uint8_t lbads = 0;  // log2 of the LBA size
  std::uint8_t rp = 0;
};
static_assert(sizeof(LbaFormat) == 4);

struct IdentifyNamespace {
  Le64 nsze;
  Le64 ncap;
  Le64 nuse;
  std::uint8_t nsfeat = 0;
  std::uint8_t nlbaf = 0;  // 0's based
  std::uint8_t flbas = 0;
  std::uint8_t mc = 0;
  std::uint8_t dpc = 0;
  std::uint8_t dps = 0;
  std::uint8_t nmic = 0;
  std::uint8_t rescap = 0;
  std::uint8_t fpi = 0;
  std::uint8_t dlfeat = 0;  // bits 2..0 = 1: a deallocated block reads as zeros
  std::array<std::uint8_t, 70> rsvd34{};
  std::array<std::uint8_t, 16> nguid{};
  std::array<std::uint8_t, 8> eui64{};
  std::array<LbaFormat, 16> lbaf{};
  std::array<std::uint8_t, 3904> rsvd192{};
};
static_assert(sizeof(IdentifyNamespace) == kIdentifySize);
static_assert(offsetof(IdentifyNamespace, nsfeat) == 24 && offsetof(IdentifyNamespace, flbas) == 26 &&
              offsetof(IdentifyNamespace, nmic) == 30 && offsetof(IdentifyNamespace, dlfeat) == 33 && offsetof(IdentifyNamespace, nguid) == 104 &&
              offsetof(IdentifyNamespace, eui64) == 120 && offsetof(IdentifyNamespace, lbaf) == 128);
inline constexpr std::uint8_t kNsfeatDeallocatedOrUnwrittenError = 1u << 2;

// Namespace identification descriptor (CNS 0x03).
enum class NidType : std::uint8_t { Eui64 = 1, Nguid = 2, Uuid = 3 };
struct NsIdDescriptorHeader {
  std::uint8_t nidt = 0;
  std::uint8_t nidl = 0;
  std::array<std::uint8_t, 2> rsvd{};
};

// Feature identifiers.
enum class FeatureId : std::uint8_t {
  Arbitration = 0x01,
  VolatileWriteCache = 0x06,
  NumberOfQueues = 0x07,
  AsyncEventConfig = 0x0B,
  KeepAliveTimer = 0x0F,
};

// Log page identifiers.
enum class LogPage : std::uint8_t {
  Error = 0x01,
  Smart = 0x02,
  FirmwareSlot = 0x03,
  ChangedNamespaces = 0x04,
  Discovery = 0x70,
};

struct ErrorLogEntry {
  Le64 error_count;
  Le16 sqid;
  Le16 cid;
  Le16 status;  // status field as in the CQE (phase bit included)
  Le16 param_location;
  Le64 lba;
  Le32 nsid;
  std::uint8_t vs = 0;
  std::uint8_t trtype = 0;
  std::array<std::uint8_t, 2> rsvd30{};
  Le64 cs;
  Le16 trtype_specific;
  std::array<std::uint8_t, 22> rsvd42{};
};
static_assert(sizeof(ErrorLogEntry) == 64);

// SMART / health information; the 128-bit counters are kept as two Le64.
struct SmartLog {
  std::uint8_t critical_warning = 0;
  Le16 composite_temperature;  // kelvin
  std::uint8_t available_spare = 0;
  std::uint8_t available_spare_threshold = 0;
  std::uint8_t percentage_used = 0;
  std::array<std::uint8_t, 26> rsvd6{};
  std::array<Le64, 2> data_units_read{};     // 1000 x 512 bytes
  std::array<Le64, 2> data_units_written{};
  std::array<Le64, 2> host_read_commands{};
  std::array<Le64, 2> host_write_commands{};
  std::array<Le64, 2> controller_busy_time{};
  std::array<Le64, 2> power_cycles{};
  std::array<Le64, 2> power_on_hours{};
  std::array<Le64, 2> unsafe_shutdowns{};
  std::array<Le64, 2> media_errors{};
  std::array<Le64, 2> error_log_entries{};
  std::array<std::uint8_t, 320> rsvd192{};
};
static_assert(sizeof(SmartLog) == 512);
static_assert(offsetof(SmartLog, data_units_read) == 32 && offsetof(SmartLog, host_read_commands) == 64 &&
              offsetof(SmartLog, media_errors) == 160 && offsetof(SmartLog, error_log_entries) == 176);

struct DiscoveryLogHeader {
  Le64 genctr;
  Le64 numrec;
  Le16 recfmt;
  std::array<std::uint8_t, 1006> rsvd18{};
};
static_assert(sizeof(DiscoveryLogHeader) == 1024);

enum class TrType : std::uint8_t { Rdma = 1, Fc = 2, Tcp = 3, Loop = 0xFE };
enum class AdrFam : std::uint8_t { Ipv4 = 1, Ipv6 = 2, Ib = 3, Fc = 4 };
enum class DiscoverySubtype : std::uint8_t { Referral = 1, Nvm = 2, CurrentDiscovery = 3 };
struct DiscoveryLogEntry {
  std::uint8_t trtype = 0;
  std::uint8_t adrfam = 0;
  std::uint8_t subtype = 0;
  std::uint8_t treq = 0;
  Le16 portid;
  Le16 cntlid;
  Le16 asqsz;
  Le16 eflags;
  std::array<std::uint8_t, 20> rsvd12{};
  std::array<char, 32> trsvcid{};
  std::array<std::uint8_t, 192> rsvd64{};
  std::array<char, 256> subnqn{};
  std::array<char, 256> traddr{};
  std::uint8_t rdma_qptype = 0;  // TSAS for RDMA: 1 = RC
  std::uint8_t rdma_prtype = 0;  // 1 none, 2 IB, 3 RoCE, 4 RoCEv2, 5 iWARP
  std::uint8_t rdma_cms = 0;     // 1 = RDMA_CM
  std::array<std::uint8_t, 5> rsvd771{};
  Le16 rdma_pkey;
  std::array<std::uint8_t, 246> rsvd778{};
};
static_assert(sizeof(DiscoveryLogEntry) == 1024);
static_assert(offsetof(DiscoveryLogEntry, trsvcid) == 32 && offsetof(DiscoveryLogEntry, subnqn) == 256 &&
              offsetof(DiscoveryLogEntry, traddr) == 512 && offsetof(DiscoveryLogEntry, rdma_qptype) == 768 &&
              offsetof(DiscoveryLogEntry, rdma_pkey) == 776);
inline constexpr char kDiscoveryNqn[] = "nqn.2014-08.org.nvmexpress.discovery";

// Dataset Management range.
struct DsmRange {
  Le32 attributes;
  Le32 nlb;  // LBAs (not 0's based)
  Le64 slba;
};
static_assert(sizeof(DsmRange) == 16);

// Reads one 64-byte command layout as another (an SQE as a Connect or Property command).
template <typename To, typename From>
To overlay(const From& f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(static_cast<void*>(&t), static_cast<const void*>(&f), sizeof t);
  return t;
}

// Copies a NUL-terminated string out of a fixed field (no terminator: the whole field).
template <std::size_t N>
std::string fixed_string(const std::array<char, N>& a) {
  std::size_t n = 0;
  while (n < N && a[n] != '\0') ++n;
  return std::string(a.data(), n);
}
// Fills a fixed field; `pad` is ' ' for ASCII fields (SN, MN, TRSVCID) and '\0' for NQNs.
template <std::size_t N>
void set_fixed_string(std::array<char, N>& a, const std::string& s, char pad) {
  for (std::size_t i = 0; i < N; ++i) a[i] = i < s.size() ? s[i] : pad;
}

}  // namespace roce::proto::nvme
