#pragma once
#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include <c10/util/Exception.h>

namespace tfm {

// What went wrong, as a type: app/ turns each into its exit code and says which flag to change.
// Library code throws std::invalid_argument for what the user asked (a usage error) and
// std::runtime_error for files and input; these are the causes those two do not cover.

/// A bug in tfm: an invariant that should hold did not (exit 1; the message asks for a report).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what)
      : std::logic_error(what + " (a bug in tfm: please report it with the command line)") {}
};

/// Memory ran out (a CPU allocation or CUDA) while working on one batch, which `what()` names.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The first line of an exception's message, without the backtrace LibTorch appends.
std::string message_of(const std::exception& error);

/// Whether `error` is LibTorch's report of an allocation that failed (CPU or CUDA).
bool is_out_of_memory(const c10::Error& error);

/// Runs `work` and returns what it returns; an allocation failure inside it becomes OutOfMemory
/// with the text "out of memory on <describe_batch()>". Anything else passes through unchanged.
template <class Work>
auto naming_batch_on_out_of_memory(const std::function<std::string()>& describe_batch, Work&& work)
    -> decltype(work()) {
  try {
    return work();
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("out of memory on " + describe_batch());
  } catch (const c10::Error& error) {
    if (!is_out_of_memory(error)) throw;
    throw OutOfMemory("out of memory on " + describe_batch());
  }
}

}  // namespace tfm
