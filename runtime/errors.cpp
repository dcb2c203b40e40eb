#include "runtime/errors.h"

namespace tfm {

std::string message_of(const std::exception& error) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&error);
  const std::string text = c10 != nullptr ? c10->what_without_backtrace() : error.what();
  return text.substr(0, text.find('\n'));
}

bool is_out_of_memory(const c10::Error& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr) return true;
  // LibTorch builds that raise a plain c10::Error for the CPU allocator's failure.
  const std::string message = error.what_without_backtrace();
  return message.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos ||
         message.find("DefaultCPUAllocator: not enough memory") != std::string::npos;
}

}  // namespace tfm
