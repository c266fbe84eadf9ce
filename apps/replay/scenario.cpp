#include "apps/replay/scenario.hpp"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "apps/replay/counter_snapshot.hpp"
#include "apps/replay/text_values.hpp"
#include "protocol/mtu.hpp"
#include "protocol/psn.hpp"

namespace roce::replay {

namespace {

constexpr std::uint64_t kMaxRegionBytes = 1ull << 30;

struct AccessName {
  const char* name;
  int flag;
};
constexpr AccessName kAccessNames[] = {
    {"local_write", IBV_ACCESS_LOCAL_WRITE},
    {"remote_write", IBV_ACCESS_REMOTE_WRITE},
    {"remote_read", IBV_ACCESS_REMOTE_READ},
    {"remote_atomic", IBV_ACCESS_REMOTE_ATOMIC},
};

struct WrName {
  const char* name;
  ibv_wr_opcode op;
};
constexpr WrName kWrNames[] = {
    {"send", IBV_WR_SEND},           {"send_imm", IBV_WR_SEND_WITH_IMM},
    {"write", IBV_WR_RDMA_WRITE},    {"write_imm", IBV_WR_RDMA_WRITE_WITH_IMM},
    {"read", IBV_WR_RDMA_READ},      {"cmp_swap", IBV_WR_ATOMIC_CMP_AND_SWP},
    {"fetch_add", IBV_WR_ATOMIC_FETCH_AND_ADD},
};

std::optional<int> parse_access(std::string_view s) {
  int flags = 0;
  std::string item;
  std::istringstream in{std::string(s)};
  while (std::getline(in, item, ',')) {
    const std::string_view t = trim(item);
    if (t.empty() || t == "none") continue;
    bool found = false;
    for (const auto& a : kAccessNames)
      if (t == a.name) {
        flags |= a.flag;
        found = true;
      }
    if (!found) return std::nullopt;
  }
  return flags;
}

class Parser {
 public:
  Parser(const std::string& source) { s_.source = source; }

  Result<Scenario> run(std::string_view text) {
    std::size_t pos = 0;
    while (pos <= text.size() && error_.empty()) {
      const auto nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      ++line_;
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      line = trim(line);
      if (line.empty()) continue;
      if (line.front() == '[') {
        section(line);
        continue;
      }
      const auto eq = line.find('=');
      if (eq == std::string_view::npos) {
        fail("expected 'key = value' or '[section]', got '" + std::string(line) + "'");
        break;
      }
      key_value(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
    }
    if (error_.empty()) validate();
    if (!error_.empty()) return make_error(EINVAL, error_);
    return std::move(s_);
  }

 private:
  enum class Section { None, Replay, Local, Dcqcn, Qp, Mr, Recv, Wr, Expect };

  void fail(const std::string& what) {
    if (error_.empty()) error_ = s_.source + ":" + std::to_string(line_) + ": " + what;
  }
  void fail_at(int line, const std::string& what) {
    if (error_.empty()) error_ = s_.source + ":" + std::to_string(line) + ": " + what;
  }

  void section(std::string_view line) {
    if (line.back() != ']') return fail("section header must end with ']'");
    const std::string_view inner = trim(line.substr(1, line.size() - 2));
    const auto sp = inner.find_first_of(" \t");
    const std::string_view kind = inner.substr(0, sp);
    const std::string name(sp == std::string_view::npos ? std::string_view{} : trim(inner.substr(sp)));
    auto need_name = [&](const char* what) {
      if (name.empty()) fail(std::string("[") + what + " NAME]: the section needs a name");
    };
    auto no_name = [&](const char* what) {
      if (!name.empty()) fail(std::string("[") + what + "] takes no name");
    };
    if (kind == "replay") {
      no_name("replay");
      cur_ = Section::Replay;
    } else if (kind == "local") {
      no_name("local");
      cur_ = Section::Local;
      local_line_ = line_;
    } else if (kind == "dcqcn") {
      no_name("dcqcn");
      cur_ = Section::Dcqcn;
    } else if (kind == "qp") {
      need_name("qp");
      cur_ = Section::Qp;
      s_.qps.push_back(QpSpec{});
      s_.qps.back().name = name;
      s_.qps.back().line = line_;
    } else if (kind == "mr") {
      need_name("mr");
      cur_ = Section::Mr;
      s_.mrs.push_back(MrSpec{});
      s_.mrs.back().name = name;
      s_.mrs.back().line = line_;
    } else if (kind == "recv") {
      no_name("recv");
      cur_ = Section::Recv;
      s_.recvs.push_back(RecvSpec{});
      s_.recvs.back().line = line_;
    } else if (kind == "wr") {
      need_name("wr");
      cur_ = Section::Wr;
      s_.wrs.push_back(WrSpec{});
      s_.wrs.back().name = name;
      s_.wrs.back().line = line_;
    } else if (kind == "expect") {
      no_name("expect");
      cur_ = Section::Expect;
    } else {
      fail("unknown section [" + std::string(kind) + "] (replay, local, dcqcn, qp, mr, recv, wr, expect)");
    }
  }

  template <typename T>
  void number(std::string_view v, T& out, std::uint64_t max, const char* key) {
    const auto n = parse_u64(v);
    if (!n || *n > max) return fail(std::string(key) + ": '" + std::string(v) + "' is not a number in 0.." + std::to_string(max));
    out = static_cast<T>(*n);
  }
  void boolean(std::string_view v, bool& out, const char* key) {
    const auto b = parse_bool(v);
    if (!b) return fail(std::string(key) + ": '" + std::string(v) + "' is not yes or no");
    out = *b;
  }
  void micros(std::string_view v, Nanos& out, const char* key) {
    const auto t = parse_micros(v);
    if (!t) return fail(std::string(key) + ": '" + std::string(v) + "' is not a time in microseconds");
    out = *t;
  }

  void key_value(std::string_view k, std::string_view v) {
    const std::string key(k);
    switch (cur_) {
      case Section::None: return fail("'" + key + "' outside any section");
      case Section::Replay: return replay_key(key, v);
      case Section::Local: return local_key(key, v);
      case Section::Dcqcn: return dcqcn_key(key, v);
      case Section::Qp: return qp_key(s_.qps.back(), key, v);
      case Section::Mr: return mr_key(s_.mrs.back(), key, v);
      case Section::Recv: return recv_key(s_.recvs.back(), key, v);
      case Section::Wr: return wr_key(s_.wrs.back(), key, v);
      case Section::Expect: {
        if (!is_counter_name(key))
          return fail("[expect]: unknown counter '" + key + "' (counter.<rxe name>, drop.<reason>, parse.<reason>, wc.ok, wc.error)");
        std::uint64_t n = 0;
        number(v, n, UINT64_MAX, key.c_str());
        s_.expect.emplace_back(key, n);
        return;
      }
    }
  }

  void replay_key(const std::string& k, std::string_view v) {
    if (k == "start") {
      const auto t = parse_epoch(v);
      if (!t) return fail("start: '" + std::string(v) + "' is not SECONDS.FRACTION since the epoch");
      s_.start = *t;
    } else if (k == "tail_us") {
      micros(v, s_.tail, "tail_us");
    } else if (k == "compare_timing") {
      boolean(v, s_.compare.timing, "compare_timing");
    } else if (k == "credits") {
      if (v == "exact") s_.compare.credits = true;
      else if (v == "ignore") s_.compare.credits = false;
      else fail("credits: '" + std::string(v) + "' is not exact or ignore");
    } else if (k == "ack_coalescing") {
      if (v == "exact") s_.compare.coalesce_acks = false;
      else if (v == "allow") s_.compare.coalesce_acks = true;
      else fail("ack_coalescing: '" + std::string(v) + "' is not exact or allow");
    } else if (k == "max_diffs") {
      number(v, s_.compare.max_diffs, 100000, "max_diffs");
    } else if (k == "msn_offset") {
      // QPN:OFFSET, repeatable: responses to that QP carry our MSN plus OFFSET.
      const auto colon = v.find(':');
      const auto qpn = colon == std::string_view::npos ? std::nullopt : parse_u64(v.substr(0, colon));
      const auto off = colon == std::string_view::npos ? std::nullopt : parse_u64(v.substr(colon + 1));
      if (!qpn || !off || *qpn > 0xFFFFFF || *off > 0xFFFFFF)
        return fail("msn_offset: '" + std::string(v) + "' is not QPN:OFFSET (two 24-bit numbers)");
      s_.compare.msn_offset[static_cast<std::uint32_t>(*qpn)] = static_cast<std::uint32_t>(*off);
    } else {
      fail("[replay]: unknown key '" + k + "' (start, tail_us, compare_timing, credits, ack_coalescing, max_diffs, msn_offset)");
    }
  }

  void local_key(const std::string& k, std::string_view v) {
    if (k == "mac") {
      const auto m = parse_mac(v);
      if (!m) return fail("mac: '" + std::string(v) + "' is not aa:bb:cc:dd:ee:ff");
      s_.local.mac = *m;
      have_mac_ = true;
    } else if (k == "ip") {
      const auto ip = parse_ip(v);
      if (!ip) return fail("ip: '" + std::string(v) + "' is not an IPv4 or IPv6 address");
      s_.local.ip = *ip;
      have_ip_ = true;
    } else {
      fail("[local]: unknown key '" + k + "' (mac, ip)");
    }
  }

  void dcqcn_key(const std::string& k, std::string_view v) {
    if (k == "enabled") {
      boolean(v, s_.dcqcn, "enabled");
    } else if (k == "np_interval_us") {
      micros(v, s_.np.interval, "np_interval_us");
    } else if (k == "np_mode") {
      const auto m = cc::np_mode_from_string(v);
      if (!m) return fail("np_mode: '" + std::string(v) + "' is not a notification point mode");
      s_.np.mode = *m;
    } else {
      fail("[dcqcn]: unknown key '" + k + "' (enabled, np_interval_us, np_mode)");
    }
  }

  void qp_key(QpSpec& q, const std::string& k, std::string_view v) {
    if (k == "type") {
      if (v == "rc") q.type = IBV_QPT_RC;
      else if (v == "uc") q.type = IBV_QPT_UC;
      else if (v == "ud") q.type = IBV_QPT_UD;
      else fail("type: '" + std::string(v) + "' is not rc, uc or ud");
    } else if (k == "qpn") {
      number(v, q.qpn, proto::kPsnMask, "qpn");
    } else if (k == "state") {
      if (v == "rts") q.rts = true;
      else if (v == "rtr") q.rts = false;
      else fail("state: '" + std::string(v) + "' is not rtr or rts");
    } else if (k == "peer_qpn") {
      number(v, q.peer_qpn, proto::kPsnMask, "peer_qpn");
    } else if (k == "peer_ip") {
      const auto ip = parse_ip(v);
      if (!ip) return fail("peer_ip: '" + std::string(v) + "' is not an IP address");
      q.peer_ip = *ip;
    } else if (k == "peer_mac") {
      const auto m = parse_mac(v);
      if (!m) return fail("peer_mac: '" + std::string(v) + "' is not aa:bb:cc:dd:ee:ff");
      q.peer_mac = *m;
    } else if (k == "rq_psn") {
      number(v, q.rq_psn, proto::kPsnMask, "rq_psn");
    } else if (k == "sq_psn") {
      number(v, q.sq_psn, proto::kPsnMask, "sq_psn");
    } else if (k == "mtu") {
      number(v, q.mtu, 4096, "mtu");
      if (!proto::mtu_from_bytes(q.mtu)) fail("mtu: " + std::string(v) + " is not 256, 512, 1024, 2048 or 4096");
    } else if (k == "access") {
      const auto a = parse_access(v);
      if (!a) return fail("access: '" + std::string(v) + "' is not a list of remote_write, remote_read, remote_atomic");
      q.access = *a & ~IBV_ACCESS_LOCAL_WRITE;
    } else if (k == "max_dest_rd_atomic") {
      number(v, q.max_dest_rd_atomic, 255, "max_dest_rd_atomic");
    } else if (k == "max_rd_atomic") {
      number(v, q.max_rd_atomic, 255, "max_rd_atomic");
    } else if (k == "min_rnr_timer") {
      number(v, q.min_rnr_timer, 31, "min_rnr_timer");
    } else if (k == "timeout") {
      number(v, q.timeout, 31, "timeout");
    } else if (k == "retry_cnt") {
      number(v, q.retry_cnt, 7, "retry_cnt");
    } else if (k == "rnr_retry") {
      number(v, q.rnr_retry, 7, "rnr_retry");
    } else if (k == "qkey") {
      number(v, q.qkey, UINT32_MAX, "qkey");
    } else if (k == "traffic_class") {
      number(v, q.traffic_class, 255, "traffic_class");
    } else {
      fail("[qp]: unknown key '" + k +
           "' (type, qpn, state, peer_qpn, peer_ip, peer_mac, rq_psn, sq_psn, mtu, access, max_dest_rd_atomic, "
           "max_rd_atomic, min_rnr_timer, timeout, retry_cnt, rnr_retry, qkey, traffic_class)");
    }
  }

  void mr_key(MrSpec& m, const std::string& k, std::string_view v) {
    if (k == "size") {
      number(v, m.size, kMaxRegionBytes, "size");
    } else if (k == "fill") {
      if (v == "zero") m.fill = Fill::Zero;
      else if (v == "pattern") m.fill = Fill::Pattern;
      else if (v.starts_with("byte:")) {
        m.fill = Fill::Byte;
        number(v.substr(5), m.fill_byte, 255, "fill");
      } else fail("fill: '" + std::string(v) + "' is not zero, pattern or byte:N");
    } else if (k == "bytes") {
      const auto sp = v.find_first_of(" \t");
      const auto off = parse_u64(v.substr(0, sp));
      const auto data = sp == std::string_view::npos ? std::nullopt : parse_hex(v.substr(sp));
      if (!off || !data) return fail("bytes: expected 'OFFSET HEXBYTES', got '" + std::string(v) + "'");
      m.bytes.emplace_back(*off, *data);
    } else if (k == "access") {
      const auto a = parse_access(v);
      if (!a) return fail("access: '" + std::string(v) + "' is not a list of local_write, remote_write, remote_read, remote_atomic");
      m.access = *a;
    } else if (k == "rkey") {
      std::uint32_t key = 0;
      number(v, key, UINT32_MAX, "rkey");
      m.rkey = key;
    } else if (k == "va") {
      number(v, m.va, UINT64_MAX, "va");
    } else {
      fail("[mr]: unknown key '" + k + "' (size, fill, bytes, access, rkey, va)");
    }
  }

  void recv_key(RecvSpec& r, const std::string& k, std::string_view v) {
    if (k == "qp") r.qp = std::string(v);
    else if (k == "count") number(v, r.count, 65536, "count");
    else if (k == "size") number(v, r.size, kMaxRegionBytes, "size");
    else if (k == "at_us") micros(v, r.at, "at_us");
    else fail("[recv]: unknown key '" + k + "' (qp, count, size, at_us)");
  }

  void wr_key(WrSpec& w, const std::string& k, std::string_view v) {
    if (k == "qp") {
      w.qp = std::string(v);
    } else if (k == "opcode") {
      for (const auto& n : kWrNames)
        if (v == n.name) {
          w.opcode = n.op;
          return;
        }
      fail("opcode: '" + std::string(v) + "' is not send, send_imm, write, write_imm, read, cmp_swap or fetch_add");
    } else if (k == "mr") {
      w.mr = std::string(v);
    } else if (k == "offset") {
      number(v, w.offset, kMaxRegionBytes, "offset");
    } else if (k == "length") {
      number(v, w.length, kMaxRegionBytes, "length");
    } else if (k == "remote_va") {
      number(v, w.remote_va, UINT64_MAX, "remote_va");
    } else if (k == "rkey") {
      number(v, w.rkey, UINT32_MAX, "rkey");
    } else if (k == "imm") {
      number(v, w.imm, UINT32_MAX, "imm");
    } else if (k == "compare" || k == "add") {
      number(v, w.compare_add, UINT64_MAX, k.c_str());
    } else if (k == "swap") {
      number(v, w.swap, UINT64_MAX, "swap");
    } else if (k == "signaled") {
      boolean(v, w.signaled, "signaled");
    } else if (k == "at_us") {
      micros(v, w.at, "at_us");
    } else {
      fail("[wr]: unknown key '" + k + "' (qp, opcode, mr, offset, length, remote_va, rkey, imm, compare, add, swap, signaled, at_us)");
    }
  }

  void validate() {
    if (!s_.qps.empty() && (!have_ip_ || !have_mac_))
      return fail_at(local_line_ ? local_line_ : 1, "[local] needs mac and ip when the scenario has QPs");
    std::set<std::string> names;
    std::set<std::uint32_t> qpns;
    for (const QpSpec& q : s_.qps) {
      if (!names.insert(q.name).second) return fail_at(q.line, "a second [qp " + q.name + "]");
      if (q.qpn < 2) return fail_at(q.line, "qpn must be at least 2 (QPs 0 and 1 are special)");
      if (!qpns.insert(q.qpn).second) return fail_at(q.line, "QPN " + format_hex(q.qpn) + " is used twice");
      if (q.type != IBV_QPT_UD && q.peer_ip.version != s_.local.ip.version)
        return fail_at(q.line, "peer_ip is not of the local address family");
    }
    if (!qpns.empty() && *qpns.rbegin() - *qpns.begin() >= 65536)
      return fail_at(s_.qps.front().line, "QPNs more than 65535 apart cannot share one engine");
    names.clear();
    std::set<std::uint32_t> rkeys;
    for (const MrSpec& m : s_.mrs) {
      if (!names.insert(m.name).second) return fail_at(m.line, "a second [mr " + m.name + "]");
      if (m.size == 0) return fail_at(m.line, "size must be at least 1");
      if (m.rkey && !rkeys.insert(*m.rkey).second) return fail_at(m.line, "rkey " + format_hex(*m.rkey) + " is used twice");
      for (const auto& [off, data] : m.bytes)
        if (off > m.size || data.size() > m.size - off)
          return fail_at(m.line, "bytes at offset " + std::to_string(off) + " run past the region's " + std::to_string(m.size) + " bytes");
    }
    for (const RecvSpec& r : s_.recvs)
      if (!s_.find_qp(r.qp)) return fail_at(r.line, "[recv]: no [qp " + r.qp + "]");
    names.clear();
    for (const WrSpec& w : s_.wrs) {
      if (!names.insert(w.name).second) return fail_at(w.line, "a second [wr " + w.name + "]");
      const QpSpec* q = s_.find_qp(w.qp);
      if (!q) return fail_at(w.line, "[wr " + w.name + "]: no [qp " + w.qp + "]");
      if (!q->rts) return fail_at(w.line, "[wr " + w.name + "]: QP " + w.qp + " is left in RTR and cannot send");
      const bool atomic = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
      if (atomic && w.length != 8) return fail_at(w.line, "[wr " + w.name + "]: an atomic has length 8");
      if (w.length == 0) continue;
      const MrSpec* m = s_.find_mr(w.mr);
      if (!m) return fail_at(w.line, "[wr " + w.name + "]: no [mr " + w.mr + "] for its " + std::to_string(w.length) + " bytes");
      if (w.offset > m->size || w.length > m->size - w.offset)
        return fail_at(w.line, "[wr " + w.name + "]: offset+length run past [mr " + w.mr + "]");
    }
  }

  Scenario s_;
  Section cur_ = Section::None;
  int line_ = 0;
  int local_line_ = 0;
  bool have_mac_ = false;
  bool have_ip_ = false;
  std::string error_;
};


}  // namespace

const QpSpec* Scenario::find_qp(std::string_view name) const {
  for (const QpSpec& q : qps)
    if (q.name == name) return &q;
  return nullptr;
}

const MrSpec* Scenario::find_mr(std::string_view name) const {
  for (const MrSpec& m : mrs)
    if (m.name == name) return &m;
  return nullptr;
}

Result<Scenario> parse_scenario(std::string_view text, const std::string& source) { return Parser(source).run(text); }

Result<Scenario> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ENOENT, path + ": cannot open scenario file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

std::string to_string(Fill f) {
  switch (f) {
    case Fill::Zero: return "zero";
    case Fill::Pattern: return "pattern";
    case Fill::Byte: return "byte";
  }
  return "unknown";
}

std::string wr_opcode_name(ibv_wr_opcode op) {
  for (const auto& n : kWrNames)
    if (n.op == op) return n.name;
  return "unknown";
}

std::string access_text(int flags) {
  std::string s;
  for (const auto& a : kAccessNames)
    if (flags & a.flag) s += (s.empty() ? "" : ",") + std::string(a.name);
  return s.empty() ? "none" : s;
}

}  // namespace roce::replay
