#include "apps/replay/engine_run.hpp"

#include <algorithm>

#include "apps/replay/setup.hpp"

namespace roce::replay {

namespace {

// A run that keeps transmitting without end (a timer that re-arms forever) stops here.
constexpr std::size_t kMaxOutputFrames = 1'000'000;
constexpr std::uint32_t kFrameBytes = 16384;

class EngineRun {
 public:
  EngineRun(const Scenario& s, const std::vector<Frame>& input)
      : s_(s), input_(input), mrs_(1024), engine_(engine_config(s), mrs_) {}

  Result<RunResult> run() {
    auto setup = ReplaySetup::create(engine_, s_);
    if (!setup) return setup.error();
    setup_ = std::move(*setup);
    out_.start = start_time(s_.start, input_);
    const auto& actions = setup_->actions();
    std::size_t next_action = 0;
    Nanos last = 0;
    // Actions at a time come before frames at the same time: a receive posted "at 0" is
    // there for a frame at 0.
    for (const Frame& f : input_) {
      const Nanos t = std::max(last, f.ts - out_.start);
      for (; next_action < actions.size() && actions[next_action].at <= t; ++next_action)
        if (Status st = act(actions[next_action]); !st) return st.error();
      if (Status st = run_timers_until(t); !st) return st.error();
      std::vector<std::byte> bytes = f.bytes;
      count(setup_->keys().rewrite(bytes, engine_.config().tuning.crc));
      engine_.receive(bytes, t);
      ++out_.frames_in;
      if (Status st = settle(t); !st) return st.error();
      last = t;
    }
    for (; next_action < actions.size(); ++next_action) {
      last = std::max(last, actions[next_action].at);
      if (Status st = act(actions[next_action]); !st) return st.error();
    }
    if (Status st = run_timers_until(last + s_.tail); !st) return st.error();
    setup_->poll_completions();
    out_.counters = snapshot(engine_, setup_->completions());
    return std::move(out_);
  }

 private:
  void count(Rewrite r) {
    out_.keys_mapped += r == Rewrite::Mapped;
    out_.keys_unmapped += r == Rewrite::Unmapped;
  }

  Status act(const Action& a) {
    if (Status st = run_timers_until(a.at); !st) return st;
    if (Status st = setup_->apply(a); !st) return st;
    return settle(a.at);
  }

  // Timers due up to `t`, each at its own deadline, with what each one sends.
  Status run_timers_until(Nanos t) {
    while (engine_.next_deadline() <= t) {
      const Nanos d = std::max(now_, engine_.next_deadline());
      if (Status st = settle(d); !st) return st;
    }
    return {};
  }

  // Runs what is due at `t` and collects what goes out.
  Status settle(Nanos t) {
    now_ = std::max(now_, t);
    engine_.advance(now_);
    setup_->poll_completions();
    std::vector<TxFrame> frames(32);
    for (;;) {
      for (std::size_t i = 0; i < frames.size(); ++i) frames[i] = TxFrame{buffers_[i].data(), kFrameBytes, 0};
      const std::size_t n = engine_.transmit(frames, now_);
      for (std::size_t i = 0; i < n; ++i)
        out_.sent.push_back(Frame{out_.start + now_, {frames[i].data, frames[i].data + frames[i].length}, out_.sent.size() + 1});
      if (out_.sent.size() > kMaxOutputFrames)
        return make_error(E2BIG, "the engine sent more than " + std::to_string(kMaxOutputFrames) + " frames; stopped");
      if (n < frames.size()) return {};
    }
  }

  const Scenario& s_;
  const std::vector<Frame>& input_;
  MrTable mrs_;
  Engine engine_;
  std::unique_ptr<ReplaySetup> setup_;
  RunResult out_;
  Nanos now_ = 0;
  std::vector<std::vector<std::byte>> buffers_ = std::vector<std::vector<std::byte>>(32, std::vector<std::byte>(kFrameBytes));
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
