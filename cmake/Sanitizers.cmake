# Sanitized and fuzzing builds (off by default; each wants its own build directory).
#
# TFM_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on all of our code, tests included
#   (scripts/test --sanitize). Any UB report aborts the program, so a test with UB fails. LibTorch
#   itself is not instrumented; ASan still sees every heap access our code makes, including into
#   tensors' storage. jemalloc is left out: ASan brings its own allocator.
# TFM_FUZZ: our code compiled with clang's -fsanitize=fuzzer-no-link (coverage for libFuzzer),
#   plus ASan and UBSan; the targets in fuzz/ link -fsanitize=fuzzer (scripts/fuzz).
# TFM_SANITIZE_THREAD: ThreadSanitizer on all of our code (scripts/test --tsan), for the threads
#   tfm starts itself (the server's connections, queue and decoding workers, translate's batch
#   workers, the data loaders) and the shares of its parallel loops. LibTorch and libgomp are not
#   instrumented: runtime/parallel_for.h tells TSan what a loop's fork and join order, and
#   scripts/sanitizer/tsan.supp leaves out what TSan cannot judge there. No jemalloc: TSan brings
#   its own allocator.
if(TFM_SANITIZE AND TFM_SANITIZE_THREAD)
  message(FATAL_ERROR "TFM_SANITIZE and TFM_SANITIZE_THREAD cannot be combined: each wants its own build directory")
endif()
if(TFM_SANITIZE_THREAD)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(TFM_SANITIZE OR TFM_FUZZ)
  set(TFM_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options(${TFM_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
endif()
if(TFM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TFM_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
