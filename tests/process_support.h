#pragma once
// Running the real `tfm` program from a GoogleTest: for tests of what only several processes show
// (data-parallel training). CMake passes the binary's path as TFM_BINARY.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace tfm::testing {

/// Starts `arguments` (argv[0] is the program) with `extra_environment` ("NAME=value") added to
/// this process's, stdout and stderr appended to `log`. Returns the child's pid.
inline pid_t spawn(const std::vector<std::string>& arguments, const std::vector<std::string>& extra_environment,
                   const std::string& log) {
  std::vector<char*> argv, envp;
  for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  for (char** variable = environ; *variable != nullptr; ++variable) envp.push_back(*variable);
  for (const auto& variable : extra_environment) envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error(arguments[0] + ": cannot start: " + std::strerror(error));
  return pid;
}

/// The child's exit code (128 + N when signal N ended it).
inline int wait_for(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Runs to the end; returns the exit code.
inline int run(const std::vector<std::string>& arguments, const std::string& log,
               const std::vector<std::string>& extra_environment = {}) {
  return wait_for(spawn(arguments, extra_environment, log));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace tfm::testing
