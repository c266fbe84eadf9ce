#include "client/duplex_server.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/perftest_client.hpp"
#include "client/traffic/perftest_text.hpp"

namespace roce::client {

namespace {
constexpr int kLocalAccess = IBV_ACCESS_LOCAL_WRITE;
constexpr std::size_t kUdGrh = kUdGrhBytes;  // perftest's UD_ADDITION
}  // namespace

void DuplexCursor::skip_local() {
  while (pos_ < flow_.size() && flow_[pos_].step == FlowStep::Connect) ++pos_;
}

Error DuplexCursor::astray(const std::string& got) const {
  return make_error(EPROTO, "the client sent " + got + " where perftest's -b client sends " +
                                describe_step(flow_, pos_) + ": it does not run -b as this server was told (" +
                                "the same test, -a and -b on both sides)");
}

Result<std::optional<std::uint32_t>> DuplexCursor::record(bool new_qp) {
  skip_local();
  if (pos_ >= flow_.size()) return astray("a QP record");
  if (qps_ == 0) {
    // The first round: every record names a new QP until QP 0 comes round again.
    if (new_qp) {
      ++in_round_;
      return std::optional<std::uint32_t>{};
    }
    qps_ = in_round_;
    in_round_ = 0;
    ++pos_;
    skip_local();
  } else if (new_qp) {
    return make_error(EPROTO, "the client named a new QP after its first round of records: it runs more QPs than it "
                              "announced, or another test");
  }
  if (pos_ >= flow_.size()) return astray("a QP record");
  switch (flow_[pos_].step) {
    case FlowStep::RecordsAll:
      if (++in_round_ < qps_) return std::optional<std::uint32_t>{};
      in_round_ = 0;
      break;
    case FlowStep::RecordFirst: break;
    default: return astray("a QP record");
  }
  ++pos_;
  skip_local();
  if (pos_ < flow_.size() && flow_[pos_].step == FlowStep::Traffic) return std::optional<std::uint32_t>{flow_[pos_++].size_index};
  return std::optional<std::uint32_t>{};
}

Status DuplexCursor::results() {
  skip_local();
  if (pos_ >= flow_.size() || flow_[pos_].step != FlowStep::Results) return astray("its results");
  ++pos_;
  return {};
}

DuplexTraffic::~DuplexTraffic() {
  stop();
  if (mr_) conn_.dataplane().memory().deregister(mr_->rkey());
}

void DuplexTraffic::stop() {
  for (std::size_t i = 0; i < ids_.size(); ++i) drivers_.remove(qps_[i].local.worker, ids_[i]);
  ids_.clear();
  bw_.clear();
}

Status DuplexTraffic::ensure_buffer(std::size_t per_qp, std::size_t qps) {
  per_qp = (per_qp + 63) / 64 * 64;
  if (mr_ && per_qp <= per_qp_ && per_qp_ * qps <= buffer_.size()) return {};
  if (mr_) conn_.dataplane().memory().deregister(mr_->rkey());
  mr_ = nullptr;
  auto b = MappedBuffer::anonymous(per_qp * qps);
  if (!b) return b.error();
  buffer_ = std::move(*b);
  auto mr = conn_.register_memory(buffer_.data(), buffer_.size(), kLocalAccess);
  if (!mr) return mr.error();
  mr_ = *mr;
  per_qp_ = per_qp;
  return {};
}

Status DuplexTraffic::start(const std::vector<DuplexQp>& qps, const TrafficSpec& spec, std::uint32_t recv_depth, bool ud) {
  stop();
  // Per QP: what we send (or where READ responses land), then where the client's SENDs land.
  const std::size_t size = std::max<std::size_t>(op_bytes(spec), 8);
  const std::size_t landing = size + (ud ? kUdGrh : 0);
  if (Status s = ensure_buffer(size + landing, qps.size()); !s) return s;
  qps_ = qps;
  spec_ = spec;
  for (std::size_t i = 0; i < qps.size(); ++i) {
    std::byte* base = buffer_.data() + i * per_qp_;
    auto d = std::make_unique<BwClient>(qps[i].local, spec, LocalBuffer{base, size, mr_->lkey()}, qps[i].remote);
    // Under -D the client sends until its own deadline (0: receive until ours).
    if (spec.verb == Verb::Send && recv_depth == 0) d->expect_sends_on_srq(spec.duration > 0 ? 0 : spec.iters);
    else if (spec.verb == Verb::Send)
      d->expect_sends(LocalBuffer{base + size, landing, mr_->lkey()}, recv_depth, spec.duration > 0 ? 0 : spec.iters);
    BwClient* raw = d.get();
    bw_.push_back(std::move(d));
    ids_.push_back(drivers_.add(qps[i].local.worker, [raw](rdma::Engine& e, Nanos now) { raw->poll(e, now); }));
  }
  // The first poll posts the receives (and the first operations): wait for it on every QP.
  for (std::size_t i = 0; i < qps.size(); ++i) {
    BwClient* raw = bw_[i].get();
    while (drivers_.inspect(qps[i].local.worker, [raw] { return raw->first_post(); }) < 0)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return {};
}

Result<PerftestResults> DuplexTraffic::finish(Nanos stall) {
  auto last_progress = std::chrono::steady_clock::now();
  std::uint64_t last_seen = 0;
  for (;;) {
    bool all = true;
    std::uint64_t seen = 0, errors = 0;
    ibv_wc_status first_error = IBV_WC_SUCCESS;
    for (std::size_t i = 0; i < bw_.size(); ++i) {
      BwClient* raw = bw_[i].get();
      const auto st = drivers_.inspect(qps_[i].local.worker, [raw] {
        // SEND -b is done once the client's SENDs came too (run_iter_bi).
        return std::pair{raw->status(), raw->received()};
      });
      all = all && st.first.done;
      seen += st.first.completed + st.second;
      if (st.first.errors && !errors) first_error = st.first.first_error;
      errors += st.first.errors;
    }
    if (errors)
      return make_error(EIO, std::to_string(errors) + " of the server's own -b operation(s) completed with an error (first: " +
                                 ibv_wc_status_str(first_error) + ")");
    if (all) break;
    const auto now = std::chrono::steady_clock::now();
    if (seen != last_seen) {
      last_seen = seen;
      last_progress = now;
    } else if (now - last_progress > std::chrono::nanoseconds(stall)) {
      return make_error(ETIMEDOUT, "the server's own -b traffic made no progress for " + std::to_string(stall / kSecond) +
                                       " s (" + std::to_string(seen) + " operations and receives done): is the "
                                       "client's " + (spec_.duration > 0 ? std::string("-D") : "-n " + std::to_string(spec_.iters)) +
                                       " and -s " + std::to_string(spec_.size) + " too?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (std::size_t i = 0; i < ids_.size(); ++i) drivers_.remove(qps_[i].local.worker, ids_[i]);
  ids_.clear();
  const BwFigures f = bw_figures(spec_, bw_);
  for (const auto& d : bw_) {
    received_messages_ += d->received();
    received_bytes_ += d->received() * spec_.size;
  }
  bw_.clear();
  return PerftestResults{f.size, f.iterations, perftest_bw_units(f.bw_peak_bps, false),
                         perftest_bw_units(f.bw_avg_bps, false), f.msg_rate_mpps};
}

}  // namespace roce::client
