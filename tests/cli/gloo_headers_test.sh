#!/usr/bin/env bash
# dist/gloo_backend.cpp compiles against Debian's Gloo headers (libgloo-dev), an older Gloo than the
# one inside libtorch_cpu. That is sound only while our code defines none of Gloo's code: every
# Gloo function that runs must be the wheel's. A Gloo symbol defined in our objects (an inline
# function or vtable instantiated from Debian's headers) could stand in for the wheel's at run
# time, so its appearance fails this test; so does linking Debian's libgloo.
source "$(dirname "$0")/lib.sh"
build=$(dirname "$TFM")
archive="$build/libtfm_dist.a"
[ -f "$archive" ] || { echo "SKIP: no $archive (not a CMake build tree)"; exit 77; }

# Itanium-mangled names of anything in namespace gloo (functions, vtables, typeinfo) and of the
# GlooStore adaptor, whose vtable layout depends on the Gloo headers' version.
defined=$(nm --defined-only "$archive" 2>/dev/null | awk '{print $NF}' |
  grep -E '^_Z(T[VIS])?N4gloo|4c10d16ProcessGroupGloo9GlooStore' || true)
[ -z "$defined" ] || fail "libtfm_dist.a defines Gloo code from Debian's headers: $(echo "$defined" | head -3)"
nm --undefined-only "$archive" | grep -q 'ProcessGroupGloo' ||
  fail "libtfm_dist.a does not call libtorch_cpu's ProcessGroupGloo (stale test?)"
ldd "$TFM" | grep -q 'libgloo' && fail "tfm links Debian's libgloo; the Gloo that runs must be libtorch_cpu's"
finish
