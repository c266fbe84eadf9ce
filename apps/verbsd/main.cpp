// roce-verbsd: one process owns the port and serves several verbs programs (service mode of the
// verbs device, docs/verbs.md). Programs reach it with ROCE_VERBS_SERVICE=SOCKET (or
// `roce-run --service SOCKET`) instead of a port of their own:
//   roce-verbsd --ip 10.0.0.1 --vdev net_af_packet0,iface=eth1 [--socket PATH] [device options]
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "verbs/config.hpp"
#include "verbs/service.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

void usage(FILE* out) {
  std::fprintf(out,
               "usage: roce-verbsd [--socket PATH] [--max-clients N] DEVICE OPTIONS\n"
               "Owns a port and serves verbs programs started with ROCE_VERBS_SERVICE=PATH (or roce-run --service PATH).\n"
               "  --socket PATH     the UNIX socket programs connect to (default /run/rocedp/NAME.sock)\n"
               "  --max-clients N   programs (contexts) served at once (default 64)\n"
               "  --max-per-client N  PDs, MRs, CQs, QPs and AHs each one program may hold (default 256)\n"
               "  --max-map-mb N      MiB of its memory (registered buffers, rings) each program may have\n"
               "                      mapped into the service (default 65536)\n"
               "  --allow-probe     answer test probes (a WRITE from the service into a program's MR; tests only)\n"
               "Device options, as roce-run's: --ip ADDR --vdev SPEC [--dev NAME] [--mtu BYTES] [--name NAME]\n"
               "  [--eal 'ARGS'] [--cpu N] [--memory MB] [--mbufs N] [--poll busy|adaptive] [--max-qps N]\n"
               "  [--max-mrs N] [--max-rd-atomic N] [--config FILE]\n");
}

}  // namespace

int main(int argc, char** argv) {
  roce::verbs::ServiceOptions o;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    std::string key = a, value;
    const bool inline_value = a.find('=') != std::string::npos;
    if (inline_value) {
      key = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
    } else if (i + 1 < argc) {
      value = argv[i + 1];
    } else {
      std::fprintf(stderr, "roce-verbsd: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--allow-probe") {
      o.allow_probe = true;
      continue;
    }
    if (key == "--max-map-mb") {
      if (!inline_value) ++i;
      char* end = nullptr;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || v == 0 || v > (1ull << 27)) {
        std::fprintf(stderr, "roce-verbsd: bad --max-map-mb '%s' (1..134217728)\n", value.c_str());
        return 2;
      }
      o.max_map_bytes = static_cast<std::uint64_t>(v) << 20;
      continue;
    }
    if (key == "--socket" || key == "--max-clients" || key == "--max-per-client") {
      if (!inline_value) ++i;
      if (key == "--socket") {
        o.socket_path = value;
      } else {
        char* end = nullptr;
        const unsigned long v = std::strtoul(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || v == 0 || v > (1u << 20)) {
          std::fprintf(stderr, "roce-verbsd: bad %s '%s' (1..1048576)\n", key.c_str(), value.c_str());
          return 2;
        }
        (key == "--max-clients" ? o.max_clients : o.max_per_client) = static_cast<std::uint32_t>(v);
      }
      continue;
    }
    words.push_back(a);
    if (!inline_value) words.push_back(argv[++i]);
  }
  auto cfg = roce::verbs::parse_config(words);
  if (!cfg) {
    std::fprintf(stderr, "roce-verbsd: %s\n", cfg.error().message.c_str());
    return 2;
  }
  if (!cfg->service.empty()) {
    std::fprintf(stderr, "roce-verbsd: --service names another service; this one owns a port (--ip, --vdev)\n");
    return 2;
  }
  if (o.socket_path.empty()) o.socket_path = "/run/rocedp/" + cfg->name + ".sock";
  // The service's own device is libroce-verbs.so in library mode, configured like a program's.
  ::unsetenv("ROCE_VERBS_SERVICE");
  ::unsetenv("ROCE_VERBS_CONFIG");
  ::setenv("ROCE_VERBS_ARGS", roce::verbs::join_words(words).c_str(), 1);

  auto svc = roce::verbs::VerbsService::create(o);
  if (!svc) {
    std::fprintf(stderr, "roce-verbsd: %s\n", svc.error().message.c_str());
    return 2;
  }
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::printf("roce-verbsd: device %s serving on %s\n", (*svc)->device_name().c_str(), o.socket_path.c_str());
  std::fflush(stdout);
  (*svc)->run(g_stop);
  return 0;
}
