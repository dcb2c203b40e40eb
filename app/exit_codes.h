#pragma once

namespace tfm {

/// Exit codes of the `tfm` command (documented in README.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternalError = 1,  // a bug or an unexpected library failure
  kExitUsageError = 2,     // unknown flag, bad flag value, missing required flag
  kExitInputError = 3,     // a file that is missing, unreadable or malformed
  kExitOutOfMemory = 4,    // memory ran out on a batch: smaller batches (--max-tokens) may fit
  kExitInterrupted = 130,  // SIGINT/SIGTERM (work is saved first where there is work to save)
};

}  // namespace tfm
