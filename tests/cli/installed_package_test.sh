#!/usr/bin/env bash
# tfm as a library: `cmake --install` this build into a prefix, build examples/ against it with
# find_package(tfm), and check that the example translates a file exactly as `tfm translate` does
# (same model, the same defaults: beam 4, float32). Paths stay the same from run to run (inside
# the build tree), so a second run rebuilds nothing.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$(dirname "$TFM")" && pwd)
cache="$build/CMakeCache.txt"
[ -f "$cache" ] || { echo "SKIP: $build is not a CMake build tree"; exit 77; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }

prefix="$build/installed-package/prefix"
examples="$build/installed-package/examples"
run cmake --install "$build" --prefix "$prefix"
expect_code 0 "cmake --install"
for f in include/tfm/translator.h include/tfm/model_file.h include/tfm/translation/translator.h \
  lib/libtfm_translation.a lib/cmake/tfm/tfmConfig.cmake lib/cmake/tfm/tfmTargets.cmake; do
  [ -f "$prefix/$f" ] || fail "cmake --install did not install $f"
done

# An instrumented build's libraries need the sanitizer runtime in the program that links them.
flags=()
[ "$(cache_value TFM_SANITIZE)" = ON ] && flags=(-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined)
[ "$(cache_value TFM_SANITIZE_THREAD)" = ON ] && flags=(-DCMAKE_CXX_FLAGS=-fsanitize=thread)
launcher=$(cache_value CMAKE_CXX_COMPILER_LAUNCHER)
run cmake -S "$root/examples" -B "$examples" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$(cache_value CMAKE_CXX_COMPILER)" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
  "${flags[@]}"
expect_code 0 "configure examples/ with find_package(tfm)"
run cmake --build "$examples"
expect_code 0 "build examples/translate_lines.cpp against the installed package"
example="$examples/translate_lines"

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 300 --valid 10 --test 12
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/model" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 --max-updates 8
expect_code 0 "train a tiny model"
model="$WORK/model/checkpoint_last.pt"
"$TFM" translate --model "$model" --dtype float32 --device cpu < "$WORK/data/test.en" > "$WORK/cli.out" 2> "$WORK/cli.err"
code=$?
expect_code 0 "tfm translate"
"$example" "$model" < "$WORK/data/test.en" > "$WORK/api.out" 2> "$WORK/api.err"
code=$?
expect_code 0 "translate_lines ($(cat "$WORK/api.err"))"
[ "$(wc -l < "$WORK/api.out")" = 12 ] || fail "translate_lines: 12 lines in, $(wc -l < "$WORK/api.out") out"
cmp -s "$WORK/api.out" "$WORK/cli.out" ||
  fail "translate_lines and tfm translate differ: $(diff "$WORK/api.out" "$WORK/cli.out" | head -5)"

run "$example" "$WORK/missing.pt" < /dev/null
expect_code 1 "translate_lines on a missing model"
expect_contains "$err" "missing.pt" "the API's error names the file"
finish
