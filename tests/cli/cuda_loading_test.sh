#!/usr/bin/env bash
# A CPU run maps no CUDA library; CUDA (libtorch_cuda) is opened only when there is a driver.
#   tests/cli/cuda_loading_test.sh TFM
set -uo pipefail
tfm=${1:?usage: $0 TFM}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# ld.so reports every library it loads with LD_DEBUG=libs (glibc).
loaded_libraries() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | grep -oE 'calling init: [^ ]+' | awk '{print $3}'; }

if [ -e /proc/driver/nvidia/version ]; then
  echo "SKIP: this machine has an NVIDIA driver; the CPU-only checks need one without"
  exit 77
fi
libs=$(loaded_libraries "$tfm" --version)
grep -q 'libtorch_cpu.so' <<< "$libs" || fail "tfm --version: libtorch_cpu not among the loaded libraries: $libs"
if grep -qE 'libtorch_cuda|libcublas|libcudnn|libnccl' <<< "$libs"; then
  fail "tfm --version on a machine without a driver loaded GPU libraries: $(grep -E 'cuda|cublas|cudnn|nccl' <<< "$libs" | xargs)"
fi
version=$("$tfm" --version)
grep -q '^CUDA: not usable here: no NVIDIA driver' <<< "$version" || fail "tfm --version: $version"
err=$("$tfm" translate --device cuda --model /nonexistent.pt < /dev/null 2>&1); code=$?
[ "$code" -eq 2 ] || fail "--device cuda without a driver: exit $code, expected 2"
grep -q 'CUDA is not usable here: no NVIDIA driver' <<< "$err" || fail "--device cuda without a driver: $err"

# With the CUDA toolkit's stub driver, libtorch_cuda is opened and registers its hooks (the stub
# has no device); a CPU-only LibTorch install says how to get the CUDA half instead.
stub=$(ls /usr/local/cuda/lib64/stubs/libcuda.so /usr/lib/x86_64-linux-gnu/stubs/libcuda.so 2>/dev/null | head -1)
if [ -n "$stub" ]; then
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
  ln -s "$stub" "$dir/libcuda.so.1"
  version=$(LD_LIBRARY_PATH="$dir" "$tfm" --version 2>/dev/null)
  if ! grep -qE '^CUDA: runtime [0-9]+\.[0-9]+; no usable device here' <<< "$version" &&
     ! grep -q 'a CPU-only LibTorch install' <<< "$version"; then
    fail "tfm --version with a stub driver: $version"
  fi
  if grep -q '^CUDA: runtime' <<< "$version"; then
    libs=$(LD_LIBRARY_PATH="$dir" loaded_libraries "$tfm" --version)
    grep -q 'libtorch_cuda.so' <<< "$libs" || fail "the stub driver did not make tfm load libtorch_cuda"
  fi
else
  echo "note: no CUDA stub driver here (CUDA toolkit absent); the loading path was not exercised"
fi

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
