#include "app/error_report.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "app/command.h"
#include "app/exit_codes.h"
#include "runtime/errors.h"

namespace tfm {
namespace {

template <class Error>
ErrorReport report_of(const Error& error) {
  return report_error(std::make_exception_ptr(error));
}

TEST(ErrorReport, EachCauseHasItsExitCode) {
  EXPECT_EQ(report_of(std::invalid_argument("--beam 0: must be >= 1")).exit_code, kExitUsageError);
  EXPECT_EQ(report_of(std::runtime_error("train.de:3: invalid UTF-8")).exit_code, kExitInputError);
  EXPECT_EQ(report_of(Interrupted("interrupted")).exit_code, kExitInterrupted);
  // A declared bug is an internal error, whatever std::runtime_error-like text it carries.
  const auto bug = report_of(InternalError("update 7: the parameters of 1 rank(s) differ from rank 0's"));
  EXPECT_EQ(bug.exit_code, kExitInternalError);
  EXPECT_NE(bug.message.find("a bug in tfm"), std::string::npos) << bug.message;
  EXPECT_EQ(report_of(std::out_of_range("no such candidate")).exit_code, kExitInternalError);
  const c10::Error torch_error(c10::SourceLocation{"f", "file.cpp", 1}, "shape mismatch\nbacktrace...");
  const auto torch_report = report_of(torch_error);
  EXPECT_EQ(torch_report.exit_code, kExitInternalError);
  EXPECT_EQ(torch_report.message, "shape mismatch");  // one line, no backtrace
}

TEST(ErrorReport, OutOfMemoryIsOneLineNamingTheBatchAndTheFlag) {
  const auto named =
      report_of(OutOfMemory("out of memory on a batch of 512 sentences, 40 source x 38 target positions"));
  EXPECT_EQ(named.exit_code, kExitOutOfMemory);
  EXPECT_NE(named.message.find("a batch of 512 sentences"), std::string::npos) << named.message;
  EXPECT_NE(named.message.find("lower --max-tokens"), std::string::npos) << named.message;
  EXPECT_EQ(named.message.find('\n'), std::string::npos);
  // Outside a batch: LibTorch's CPU or CUDA allocator, or operator new.
  const c10::OutOfMemoryError cuda(c10::SourceLocation{"f", "file.cpp", 1}, "CUDA out of memory. Tried 2 GiB\nmore");
  for (const auto& report : {report_of(cuda), report_of(std::bad_alloc())}) {
    EXPECT_EQ(report.exit_code, kExitOutOfMemory) << report.message;
    EXPECT_NE(report.message.find("lower --max-tokens"), std::string::npos) << report.message;
    EXPECT_EQ(report.message.find('\n'), std::string::npos) << report.message;
  }
  const c10::Error cpu(c10::SourceLocation{"f", "file.cpp", 1},
                       "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes");
  EXPECT_EQ(report_of(cpu).exit_code, kExitOutOfMemory);
}

TEST(ErrorReport, NamingTheBatchTurnsAnAllocationFailureIntoOutOfMemory) {
  const auto batch = [] { return std::string("a batch of 3 sentences"); };
  EXPECT_EQ(naming_batch_on_out_of_memory(batch, [] { return 7; }), 7);
  try {
    naming_batch_on_out_of_memory(batch, []() -> int { throw std::bad_alloc(); });
    FAIL() << "no exception";
  } catch (const OutOfMemory& error) {
    EXPECT_STREQ(error.what(), "out of memory on a batch of 3 sentences");
  }
  // Other errors pass through as they are.
  EXPECT_THROW(naming_batch_on_out_of_memory(batch, []() -> int { throw std::invalid_argument("x"); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace tfm
