// Runs a program with arguments (no shell), collecting its exit status, stdout and stderr:
// for tests of the command-line tools.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace roce::test {

struct CommandResult {
  int exit_code = -1;  // -1 when the program did not exit normally (killed by a signal)
  int signal = 0;
  pid_t pid = 0;  // the process it was (DPDK's default runtime folders are named after it)
  std::string out;
  std::string err;
};

// `stdin_path`: a file to read standard input from (default /dev/null).
inline CommandResult run_command(const std::string& program, const std::vector<std::string>& args,
                                 const std::string& stdin_path = "/dev/null") {
  TempDir dir;
  const std::string out_path = (dir / "stdout").string();
  const std::string err_path = (dir / "stderr").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot run " + program);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed for " + program);
  CommandResult r;
  r.pid = pid;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  const auto out = read_file(out_path);
  const auto err = read_file(err_path);
  r.out.assign(out.begin(), out.end());
  r.err.assign(err.begin(), err.end());
  return r;
}

}  // namespace roce::test
