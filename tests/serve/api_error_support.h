#pragma once
// Shared by the request tests: what a call answers a client with.
#include <functional>

#include "serve/api_requests.h"

namespace tfm::testing {

/// The HTTP status of the ApiError `call` throws; 0 when it accepts.
inline int status_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& error) {
    return error.status();
  }
  return 0;
}

}  // namespace tfm::testing
