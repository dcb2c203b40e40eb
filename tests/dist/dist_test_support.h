#pragma once
// Several ranks inside one test process, one thread each, joined over 127.0.0.1.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dist/distributed_group.h"

namespace tfm::testing {

/// A TCP port that was free a moment ago (the kernel's pick for port 0).
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    throw std::runtime_error("free_port: cannot bind a socket");
  }
  close(fd);
  return ntohs(address.sin_port);
}

inline TorchrunEnv local_env(int port, int world_size, int rank) {
  TorchrunEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  env.world_size = world_size;
  env.rank = rank;
  env.local_rank = rank;
  env.local_world_size = world_size;
  return env;
}

/// Runs body(rank) on `world_size` threads; rethrows the first exception any of them threw.
inline void run_ranks(int world_size, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(world_size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace tfm::testing
