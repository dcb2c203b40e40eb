#include "app/error_report.h"

#include <new>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "app/command.h"
#include "app/exit_codes.h"
#include "runtime/errors.h"

namespace tfm {
namespace {

constexpr const char* kSmallerBatches = "; lower --max-tokens (or --batch-size) for smaller batches";

}  // namespace

ErrorReport report_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Interrupted& e) {
    return {kExitInterrupted, message_of(e)};
  } catch (const OutOfMemory& e) {
    return {kExitOutOfMemory, message_of(e) + kSmallerBatches};
  } catch (const std::bad_alloc&) {
    return {kExitOutOfMemory, std::string("out of memory") + kSmallerBatches};
  } catch (const c10::Error& e) {
    if (is_out_of_memory(e)) return {kExitOutOfMemory, "out of memory (" + message_of(e) + ")" + kSmallerBatches};
    return {kExitInternalError, message_of(e)};
  } catch (const std::invalid_argument& e) {
    return {kExitUsageError, message_of(e)};
  } catch (const std::logic_error& e) {  // InternalError and other broken invariants
    return {kExitInternalError, message_of(e)};
  } catch (const std::runtime_error& e) {
    return {kExitInputError, message_of(e)};
  } catch (const std::exception& e) {
    return {kExitInternalError, message_of(e)};
  } catch (...) {
    return {kExitInternalError, "an exception of unknown type"};
  }
}

}  // namespace tfm
