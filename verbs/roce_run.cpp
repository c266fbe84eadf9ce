// roce-run: starts an unmodified verbs program with our device. It checks the device options,
// passes them to the library in ROCE_VERBS_ARGS and preloads libroce-verbs.so ahead of
// libibverbs, then execs the program:
//   roce-run --ip 10.0.0.1 --vdev net_af_packet0,iface=veth0 [options] [--] PROGRAM [ARGS...]
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "verbs/config.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: roce-run [device options] [--] PROGRAM [ARGS...]\n"
               "Runs a verbs program (ibv_devinfo, ib_write_bw, ibv_rc_pingpong, ...) on a RoCEv2 device backed by\n"
               "the rocev2-dp dataplane inside the program's own process (or, with --service, in roce-verbsd).\n"
               "  --service SOCKET  service mode: use the device of the roce-verbsd listening on SOCKET (no port\n"
               "                    options then; the service owns the port)\n"
               "  --ip ADDR         the device's IPv4 or IPv6 address (GID 0: ::ffff:ADDR, or ADDR)\n"
               "  --vdev SPEC       DPDK virtual device, e.g. net_af_packet0,iface=veth0 (repeatable)\n"
               "  --dev NAME        ethdev to use (default: the first --vdev)\n"
               "  --mtu BYTES       largest path MTU offered, 256..4096 (default 4096, capped by the link)\n"
               "  --name NAME       device name (default rocedp0)\n"
               "  --eal 'ARGS'      further EAL arguments\n"
               "  --cpu N           pin the dataplane thread to CPU N\n"
               "  --memory MB       DPDK memory (default 256)\n"
               "  --poll busy|adaptive   busy: never nap; adaptive (default): nap when idle for 1 ms\n"
               "  --config FILE     read options from FILE (\"key value\" lines)\n"
               "Environment: ROCE_VERBS_CONFIG (a config file), ROCE_VERBS_SERVICE (as --service), ROCE_VERBS_LIBRARY\n"
               "(the library to preload).\n");
}

std::string library_path() {
  if (const char* p = std::getenv("ROCE_VERBS_LIBRARY"); p && *p) return p;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "libroce-verbs.so";
  self[n] = '\0';
  std::string dir(self);
  dir.resize(dir.rfind('/'));
  return dir + "/libroce-verbs.so";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a.rfind("--", 0) != 0) break;
    words.push_back(a);
    if (a.find('=') == std::string::npos) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "roce-run: %s needs a value\n", a.c_str());
        return 2;
      }
      words.emplace_back(argv[++i]);
    }
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  // The options the library will see: a config file from the environment first, then ours.
  std::vector<std::string> all;
  if (auto env = roce::verbs::config_words_from_environment(); env) all = *env;
  all.insert(all.end(), words.begin(), words.end());
  if (auto cfg = roce::verbs::parse_config(all); !cfg) {
    std::fprintf(stderr, "roce-run: %s\n", cfg.error().message.c_str());
    return 2;
  }
  const std::string lib = library_path();
  if (::access(lib.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "roce-run: cannot read %s (set ROCE_VERBS_LIBRARY)\n", lib.c_str());
    return 2;
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!words.empty()) ::setenv("ROCE_VERBS_ARGS", roce::verbs::join_words(words).c_str(), 1);
  ::execvp(argv[i], argv + i);
  std::fprintf(stderr, "roce-run: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
