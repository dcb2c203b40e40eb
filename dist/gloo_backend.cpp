// Gloo's construction. ProcessGroupGloo.hpp includes <gloo/...> headers, which the torch wheel
// does not ship; Debian's libgloo-dev provides them for compiling only (libgloo.so is never
// linked: the Gloo that runs is the one inside libtorch_cpu). That is sound because this file
// calls nothing of Gloo's own: ProcessGroupGloo holds every Gloo object through a pointer, and
// only functions exported by libtorch_cpu run (Options::create_default, the constructor,
// createDeviceForInterface). tests/dist/no_debian_gloo_code_test.sh checks that this object file
// defines no Gloo symbol (which would otherwise stand in for the wheel's at run time).
#include <cstdlib>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "dist/backend_factory.h"

namespace tfm {

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  // As torch.distributed: GLOO_SOCKET_IFNAME names the network interface; otherwise Gloo binds to
  // the address this host's name resolves to (falling back to the loopback device).
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> options;
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface != nullptr && *interface != '\0') {
    options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  } else {
    options = c10d::ProcessGroupGloo::Options::create_default(timeout);
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

}  // namespace tfm
