#pragma once
#include <exception>
#include <string>

namespace tfm {

/// What `tfm` says and returns when a command fails: one line, and the documented exit code
/// (app/exit_codes.h) of the error's type. Flag advice that the libraries leave to the front end
/// (which flag makes a batch smaller) is added here.
struct ErrorReport {
  int exit_code = 1;
  std::string message;
};
ErrorReport report_error(const std::exception_ptr& error);

}  // namespace tfm
