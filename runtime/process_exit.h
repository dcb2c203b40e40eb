#pragma once
#include <string>

namespace tfm {

/// Ends the process with `code` once the command's work is done: every C stream and the C++
/// standard streams flushed, then _Exit, skipping the exit handlers and static destructors. Those
/// are LibTorch's unregistering of its thousands of operators and kernels (~60 ms of a one-sentence
/// `tfm translate`: BENCHMARKS.md); the kernel reclaims memory, threads and files either way.
/// Whatever else must happen at exit happens before the call: a caller closes its files, flushes
/// its loggers and runs finish_kernel_libraries(). Builds with AddressSanitizer leave through
/// std::exit instead, so that LeakSanitizer's check at exit still runs.
[[noreturn]] void exit_without_teardown(int code);

/// Removes the file at `path` unless another process holds a POSIX lock on it: what a library's
/// exit handler does with the lock file that marks its one process per user (LIBXSMM's), done by
/// a process about to skip that handler. Returns whether the file was removed. Takes the lock in
/// passing, and closing its descriptor drops this process's locks on the file: only for the end.
bool remove_unless_locked_elsewhere(const std::string& path);

}  // namespace tfm
