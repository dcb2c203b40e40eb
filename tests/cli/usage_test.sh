#!/usr/bin/env bash
# The command's shape: help, version, exit codes, one-line errors, config files.
source "$(dirname "$0")/lib.sh"

run "$TFM" --help
expect_code 0 "--help"
for command in train translate eval tokenizer; do expect_contains "$out" "$command" "--help lists $command"; done

run "$TFM" --version
expect_code 0 "--version"
expect_contains "$out" "LibTorch" "--version"
expect_contains "$out" "CUDA" "--version"
expect_contains "$out" "bf16" "--version"

run "$TFM" tokenizer train --help
expect_code 0 "tokenizer train --help"
expect_contains "$out" "--vocab-size" "tokenizer train --help"

run "$TFM"
expect_code 2 "no subcommand"
expect_one_line_error "no subcommand"

run "$TFM" --no-such-flag tokenizer
expect_code 2 "unknown flag"
expect_one_line_error "unknown flag"

run "$TFM" tokenizer encode --model m.model --bogus
expect_code 2 "unknown subcommand flag"
expect_one_line_error "unknown subcommand flag"

# More threads than a process can start failed mid-run ("Resource temporarily unavailable").
run "$TFM" --threads 100000 tokenizer encode --model m.model
expect_code 2 "--threads 100000"
expect_one_line_error "--threads 100000"

run "$TFM" --log-level loud tokenizer encode --model m.model
expect_code 2 "bad --log-level"
expect_one_line_error "bad --log-level"

run "$TFM" tokenizer train --input "$WORK/none.txt" --output "$WORK/m.model" --vocab-size 2
expect_code 2 "bad --vocab-size"
expect_one_line_error "bad --vocab-size"
expect_contains "$err" "--vocab-size" "bad --vocab-size names the flag"

run "$TFM" tokenizer encode --model "$WORK/missing.model"
expect_code 3 "missing model file"
expect_one_line_error "missing model file"
expect_contains "$err" "$WORK/missing.model" "missing model names the file"

run "$TFM" tokenizer train --input "$WORK/missing.en" --output "$WORK/m.model"
expect_code 3 "missing corpus"
expect_one_line_error "missing corpus"
expect_contains "$err" "$WORK/missing.en" "missing corpus names the file"

# A config file supplies options; the command line overrides them.
printf 'log-level = "error"\n[tokenizer.encode]\nmodel = "%s/from-config.model"\n' "$WORK" > "$WORK/tfm.toml"
run "$TFM" --config "$WORK/tfm.toml" tokenizer encode
expect_code 3 "config file model"
expect_contains "$err" "from-config.model" "option read from the config file"
run "$TFM" --config "$WORK/tfm.toml" tokenizer encode --model "$WORK/from-flag.model"
expect_contains "$err" "from-flag.model" "flag overrides config"

# Bad model flags are rejected before any work: exit 2, one line, no save directory created.
printf 'a b\n' > "$WORK/tiny.en"
# A negative or NaN override is checked, not taken for "unset" (the preset's value).
for flags in "--preset huge" "--d-model 30 --heads 4" "--dropout -0.1" "--relu-dropout nan" "--heads -4" \
  "--adam-beta1 1" "--adam-eps nan" "--lr-factor inf" "--sub-batches 9223372036854775807" \
  "--valid-max-sentences -1" "--dist-timeout inf" "--valid-beam 2000"; do
  # shellcheck disable=SC2086
  run "$TFM" train --train-src "$WORK/tiny.en" --train-tgt "$WORK/tiny.en" --save-dir "$WORK/never" $flags
  expect_code 2 "train $flags"
  expect_one_line_error "train $flags"
  [ ! -e "$WORK/never" ] || fail "train $flags created its save directory before rejecting the flags"
done

finish
