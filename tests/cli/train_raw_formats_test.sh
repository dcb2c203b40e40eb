#!/usr/bin/env bash
# `tfm train` straight from a TSV corpus and from WMT SGML sets, with no --spm: the joint
# tokenizer is trained on the sentences alone (no tabs, no <seg> markup) and training runs.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 300 --valid 20 --test 20
paste "$WORK/data/train.en" "$WORK/data/train.de" > "$WORK/train.tsv"
to_sgml() {  # to_sgml TEXT SGM: one <seg> per line, inside the usual srcset/doc wrapper
  { echo '<srcset setid="numbers" srclang="any">'; echo '<doc docid="d1" genre="news">'
    awk '{ printf "<seg id=\"%d\">%s</seg>\n", NR, $0 }' "$1"
    echo '</doc>'; echo '</srcset>'; } > "$2"
}
to_sgml "$WORK/data/train.en" "$WORK/train.en.sgm"
to_sgml "$WORK/data/train.de" "$WORK/train.de.sgm"

train() {
  run "$TFM" train "$@" --preset tiny --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 \
    --max-updates 3 --log-interval 1 --keep-last 0
}
vocabulary() { spm_export_vocab --model="$1/prepared/spm.model" | cut -f1 | tail -n +5; }  # after the 4 specials

train --train-src "$WORK/train.tsv" --save-dir "$WORK/tsv"
expect_code 0 "train on a TSV corpus"
[ -s "$WORK/tsv/checkpoint_last.pt" ] || fail "TSV: no checkpoint written"
expect_contains "$err" "300 pairs" "TSV: all 300 pairs read"

train --train-src "$WORK/train.en.sgm" --train-tgt "$WORK/train.de.sgm" --save-dir "$WORK/sgml"
expect_code 0 "train on SGML sets"
[ -s "$WORK/sgml/checkpoint_last.pt" ] || fail "SGML: no checkpoint written"
if vocabulary "$WORK/sgml" | grep -q -e 'seg' -e 'doc' -e '<'; then
  fail "SGML markup reached the vocabulary: $(vocabulary "$WORK/sgml" | grep -e seg -e doc -e '<' | head -3 | tr '\n' ' ')"
fi
train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/plain"
expect_code 0 "train on plain files"
[ "$(vocabulary "$WORK/tsv" | sort)" = "$(vocabulary "$WORK/plain" | sort)" ] ||
  fail "a TSV corpus must give the vocabulary its two sides give as plain files"
[ "$(vocabulary "$WORK/sgml" | sort)" = "$(vocabulary "$WORK/plain" | sort)" ] ||
  fail "SGML sets must give the vocabulary their sentences give as plain files"
ls "$WORK"/tsv/prepared/*.tmp "$WORK"/sgml/*.tmp 2>/dev/null && fail "temporary tokenizer input left behind"

# A file name that is not UTF-8 (Latin-1 "Übersetzung.de", say) is bytes to tfm: it once ended the
# run at its first record with a JSON library error. Resuming finds the data it prepared.
latin1="$WORK/$(printf '\xdcbersetzung').de"
cp "$WORK/data/train.de" "$latin1"
train --train-src "$WORK/data/train.en" --train-tgt "$latin1" --save-dir "$WORK/latin1"
expect_code 0 "train on a file whose name is not UTF-8"
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$latin1" --save-dir "$WORK/latin1" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 --max-updates 4 --keep-last 0
expect_code 0 "resume on a file whose name is not UTF-8"
expect_contains "$err" "using the prepared data cached" "resume on a file whose name is not UTF-8"
finish
