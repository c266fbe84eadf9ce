#include "apps/replay/engine_run.hpp"

#include "apps/replay/timeline.hpp"

namespace roce::replay {

namespace {

// A run that keeps transmitting without end (a timer that re-arms forever) stops here.
constexpr std::size_t kMaxOutputFrames = 1'000'000;
constexpr std::uint32_t kFrameBytes = 16384;
constexpr std::size_t kBurst = 32;

class EngineRun {
 public:
  EngineRun(const Scenario& s, const std::vector<Frame>& input)
      : s_(s), input_(input), mrs_(1024), engine_(engine_config(s), mrs_) {}

  Result<RunResult> run() {
    auto setup = ReplaySetup::create(engine_, s_);
    if (!setup) return setup.error();
    setup_ = std::move(*setup);
    out_.start = start_time(s_.start, input_);
    if (Status st = run_timeline(input_, out_.start, setup_->actions(), s_.tail, *this); !st) return st.error();
    setup_->poll_completions();
    out_.counters = snapshot(engine_, setup_->completions());
    return std::move(out_);
  }

  // The timeline's host (timeline.hpp).
  Nanos next_deadline() const { return engine_.next_deadline(); }
  Status apply(const Action& a) { return setup_->apply(a); }
  Status deliver(std::size_t k, Nanos now) {
    std::vector<std::byte> bytes = input_[k].bytes;
    const Rewrite r = setup_->keys().rewrite(bytes, engine_.config().tuning.crc);
    out_.keys_mapped += r == Rewrite::Mapped;
    out_.keys_unmapped += r == Rewrite::Unmapped;
    engine_.receive(bytes, now);
    ++out_.frames_in;
    return step(now);
  }
  // What the dataplane's worker does after its RX burst: timers, then everything owed goes out.
  Status step(Nanos now) {
    engine_.advance(now);
    setup_->poll_completions();
    std::vector<rdma::TxFrame> frames(kBurst);
    for (;;) {
      for (std::size_t i = 0; i < kBurst; ++i) frames[i] = rdma::TxFrame{buffers_[i].data(), kFrameBytes, 0};
      const std::size_t n = engine_.transmit(frames, now);
      for (std::size_t i = 0; i < n; ++i)
        out_.sent.push_back(
            Frame{out_.start + now, {frames[i].data, frames[i].data + frames[i].length}, out_.sent.size() + 1});
      if (out_.sent.size() > kMaxOutputFrames)
        return make_error(E2BIG, "the engine sent more than " + std::to_string(kMaxOutputFrames) + " frames; stopped");
      if (n < kBurst) return {};
    }
  }

 private:
  const Scenario& s_;
  const std::vector<Frame>& input_;
  rdma::MrTable mrs_;
  rdma::Engine engine_;
  std::unique_ptr<ReplaySetup> setup_;
  RunResult out_;
  std::vector<std::vector<std::byte>> buffers_ = std::vector<std::vector<std::byte>>(kBurst, std::vector<std::byte>(kFrameBytes));
};

}  // namespace

Nanos start_time(const std::optional<Nanos>& scenario_start, const std::vector<Frame>& input) {
  if (scenario_start) return *scenario_start;
  return input.empty() ? 0 : input.front().ts;
}

Result<RunResult> run_on_engine(const Scenario& s, const std::vector<Frame>& input) {
  EngineRun r(s, input);
  return r.run();
}

}  // namespace roce::replay
