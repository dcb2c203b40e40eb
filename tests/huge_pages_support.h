#pragma once
// Shared by the tests of runtime/huge_pages.h and of the model's weights in 2 MiB pages.
#include <sys/utsname.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace tfm::testing {

/// Why this machine cannot collapse memory into 2 MiB pages, or "" where it can: Linux 6.1 or
/// later (MADV_COLLAPSE) with transparent huge pages not "never".
inline std::string why_memory_cannot_collapse() {
  utsname name{};
  int major = 0, minor = 0;
  if (uname(&name) != 0 || std::sscanf(name.release, "%d.%d", &major, &minor) != 2) return "no kernel version";
  if (major < 6 || (major == 6 && minor < 1)) return std::string("Linux ") + name.release + " has no MADV_COLLAPSE";
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  std::getline(enabled, setting);
  if (setting.empty() || setting.find("[never]") != std::string::npos) return "transparent huge pages are off";
  return "";
}

/// What a test says when the kernel had no free 2 MiB page for part of what it asked: other
/// processes held the memory, which is the machine's state, not a fault of the code under test.
inline std::string lacking_memory_note(int64_t bytes) {
  return "note: the kernel had no free 2 MiB page for " + std::to_string(bytes >> 20) +
         " MiB (memory held by other processes); those pages were checked as asked for, not as backed";
}

}  // namespace tfm::testing
