#include <sstream>

#include "apps/replay/scenario.hpp"
#include "apps/replay/text_values.hpp"

namespace roce::replay {

namespace {

std::string qp_type_name(ibv_qp_type t) { return t == IBV_QPT_UC ? "uc" : t == IBV_QPT_UD ? "ud" : "rc"; }

}  // namespace

std::string to_text(const Scenario& s) {
  std::ostringstream o;
  o << "[replay]\n";
  if (s.start) o << "start = " << format_epoch(*s.start) << "\n";
  o << "tail_us = " << format_micros(s.tail) << "\n";
  o << "compare_timing = " << (s.compare.timing ? "yes" : "no") << "\n";
  o << "credits = " << (s.compare.credits ? "exact" : "ignore") << "\n";
  o << "ack_coalescing = " << (s.compare.coalesce_acks ? "allow" : "exact") << "\n";
  o << "max_diffs = " << s.compare.max_diffs << "\n";
  for (const auto& [qpn, off] : s.compare.msn_offset) o << "msn_offset = " << format_hex(qpn, 6) << ":" << off << "\n";
  o << "\n[local]\nmac = " << proto::mac_to_string(s.local.mac) << "\nip = " << to_string(s.local.ip) << "\n";
  if (s.dcqcn) {
    o << "\n[dcqcn]\nenabled = yes\nnp_interval_us = " << format_micros(s.np.interval)
      << "\nnp_mode = " << cc::to_string(s.np.mode) << "\n";
  }
  for (const QpSpec& q : s.qps) {
    o << "\n[qp " << q.name << "]\n"
      << "type = " << qp_type_name(q.type) << "\nqpn = " << format_hex(q.qpn) << "\nstate = " << (q.rts ? "rts" : "rtr")
      << "\npeer_qpn = " << format_hex(q.peer_qpn) << "\npeer_ip = " << to_string(q.peer_ip)
      << "\npeer_mac = " << proto::mac_to_string(q.peer_mac) << "\nrq_psn = " << format_hex(q.rq_psn)
      << "\nsq_psn = " << format_hex(q.sq_psn) << "\nmtu = " << q.mtu << "\naccess = " << access_text(q.access)
      << "\nmax_dest_rd_atomic = " << +q.max_dest_rd_atomic << "\nmax_rd_atomic = " << +q.max_rd_atomic
      << "\nmin_rnr_timer = " << +q.min_rnr_timer << "\ntimeout = " << +q.timeout << "\nretry_cnt = " << +q.retry_cnt
      << "\nrnr_retry = " << +q.rnr_retry << "\n";
    if (q.type == IBV_QPT_UD) o << "qkey = " << format_hex(q.qkey) << "\n";
    if (q.traffic_class) o << "traffic_class = " << +q.traffic_class << "\n";
  }
  for (const MrSpec& m : s.mrs) {
    o << "\n[mr " << m.name << "]\nsize = " << m.size << "\nfill = " << to_string(m.fill);
    if (m.fill == Fill::Byte) o << ":" << format_hex(m.fill_byte, 2);
    o << "\naccess = " << access_text(m.access) << "\n";
    if (m.rkey) o << "rkey = " << format_hex(*m.rkey) << "\n";
    o << "va = " << format_hex(m.va) << "\n";
    for (const auto& [off, data] : m.bytes) o << "bytes = " << off << " " << hex_string(data.data(), data.size()) << "\n";
  }
  for (const RecvSpec& r : s.recvs)
    o << "\n[recv]\nqp = " << r.qp << "\ncount = " << r.count << "\nsize = " << r.size << "\nat_us = " << format_micros(r.at)
      << "\n";
  for (const WrSpec& w : s.wrs) {
    o << "\n[wr " << w.name << "]\nqp = " << w.qp << "\nopcode = " << wr_opcode_name(w.opcode) << "\n";
    if (!w.mr.empty()) o << "mr = " << w.mr << "\noffset = " << w.offset << "\n";
    o << "length = " << w.length << "\nremote_va = " << format_hex(w.remote_va) << "\nrkey = " << format_hex(w.rkey) << "\n";
    if (w.opcode == IBV_WR_SEND_WITH_IMM || w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) o << "imm = " << format_hex(w.imm) << "\n";
    if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) o << "compare = " << format_hex(w.compare_add) << "\nswap = " << format_hex(w.swap) << "\n";
    if (w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) o << "add = " << format_hex(w.compare_add) << "\n";
    o << "signaled = " << (w.signaled ? "yes" : "no") << "\nat_us = " << format_micros(w.at) << "\n";
  }
  if (!s.expect.empty()) {
    o << "\n[expect]\n";
    for (const auto& [k, v] : s.expect) o << k << " = " << v << "\n";
  }
  return o.str();
}

}  // namespace roce::replay
