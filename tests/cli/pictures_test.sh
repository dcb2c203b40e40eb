#!/usr/bin/env bash
# Pictures from the command line: attention pages and word alignment from `tfm translate`, training
# curves and positional encodings from `tfm plot`. Every page and SVG must parse as XML and carry
# every token label; with Chromium installed, one page and one plot are rendered headless and the
# screenshots must not be blank (skipped, saying so, where Chromium is absent).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 300 --valid 10 --test 10 > /dev/null
train() {
  "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
    --valid-src "$WORK/data/valid.en" --valid-tgt "$WORK/data/valid.de" --preset tiny --d-model 32 --d-ff 64 \
    --vocab-size 120 --max-tokens 512 --log-interval 2 --average-last 0 "$@" 2>/dev/null
}
train --save-dir "$WORK/a" --max-updates 8 --validate-every 4 || fail "train a"
train --save-dir "$WORK/b" --max-updates 6 --validate-every 3 --lr 1e-3 || fail "train b"
model="$WORK/a/checkpoint_last.pt"
head -3 "$WORK/data/test.en" > "$WORK/three.en"
printf '\n' >> "$WORK/three.en"  # an empty line: no page, still one output line

# Attention pages and alignments.
run "$TFM" translate --model "$model" --input "$WORK/three.en" --format json --alignment soft \
  --attention-out "$WORK/pages" --max-len-b 8 --max-len-a 0
expect_code 0 "translate --attention-out --alignment soft"
[ "$(printf '%s\n' "$out" | wc -l)" = 4 ] || fail "4 input lines gave $(printf '%s\n' "$out" | wc -l) output lines"
printf '%s\n' "$out" > "$WORK/three.json"
python3 - "$WORK/three.json" "$WORK/pages" <<'PY' || fail "attention pages or alignments are wrong"
import json, os, sys, xml.dom.minidom
records = [json.loads(line) for line in open(sys.argv[1])]
pages = sys.argv[2]
for record in records[:3]:
    tokens = record["tokens"]
    links = [tuple(map(int, pair.split("-"))) for pair in record["alignment"].split()]
    assert [t for _, t in links] == list(range(len(tokens))), ("one link per target subword", record)
    soft = record["soft_alignment"]
    assert len(soft) == len(tokens), "a soft row per target subword"
    for (s, t) in links:
        assert soft[t][s] == max(soft[t]), "hard = argmax of soft"
    stem = os.path.join(pages, "line-%06d" % record["line"])
    page = open(stem + ".html", encoding="utf-8").read()
    xml.dom.minidom.parseString(page.encode("utf-8"))  # well-formed
    numbers = json.load(open(stem + ".json"))
    views = {v["key"]: v for v in numbers["views"]}
    assert set(views) == {"cross", "encoder", "decoder"}
    for view in views.values():
        for label in view["row_labels"] + view["col_labels"]:
            escaped = label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            assert escaped in page, ("label missing from the page", label)
        for layer in view["layers"]:
            for head in layer:
                for row in head:
                    # 1e-2: on a CPU with native bf16 the model decodes in bf16 (8-bit mantissa).
                    assert abs(sum(row) - 1) < 1e-2, ("a row does not sum to 1", row)
    assert views["cross"]["row_labels"][:-1] == tokens, "cross-attention rows are the hypothesis"
assert "alignment" in records[3] and records[3]["translation"] == "", "the empty line"
assert not os.path.exists(os.path.join(pages, "line-000004.html")), "no page for an empty line"
xml.dom.minidom.parse(os.path.join(pages, "index.html"))
PY
run "$TFM" translate --model "$model" --input "$WORK/three.en" --alignment hard --max-len-b 8 --max-len-a 0
expect_code 0 "translate --alignment hard (text)"
[ "$(grep -c ' ||| ' <<< "$out")" = 4 ] || fail "text alignment: expected 'translation ||| 0-0 ...' on every line"
run "$TFM" translate --model "$model" --input "$WORK/three.en" --alignment soft
expect_code 2 "--alignment soft in text"
expect_one_line_error "--alignment soft in text"
run "$TFM" --log-level warn translate --model "$model" --input "$WORK/three.en" --alignment hard --alignment-layer 99
expect_code 2 "--alignment-layer past the model's layers"
expect_one_line_error "--alignment-layer past the model's layers"  # known once the model is loaded
expect_contains "$err" "decoder layers" "--alignment-layer past the model's layers"
run "$TFM" translate --model "$model" --input "$WORK/three.en" --alignment-layer 0
expect_code 2 "--alignment-layer without --alignment"
expect_one_line_error "--alignment-layer without --alignment"

# Invalid UTF-8 in an input line or a label is shown as U+FFFD: it once ended the run with a
# JSON library error, the line untranslated.
printf 'three \xff four\n' > "$WORK/invalid.en"
run "$TFM" translate --model "$model" --input "$WORK/invalid.en" --attention-out "$WORK/invalid-pages" --max-len-b 8 --max-len-a 0
expect_code 0 "translate --attention-out, a line with invalid UTF-8"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "a line with invalid UTF-8: expected one output line, got: $out"
python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$WORK/invalid-pages/line-000001.json" ||
  fail "the page of a line with invalid UTF-8 is not UTF-8 JSON"
run "$TFM" plot --metrics "$WORK/a/metrics.jsonl" --labels "$(printf 'run \xff')" --out "$WORK/invalid-label.json"
expect_code 0 "plot --labels with invalid UTF-8"
python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$WORK/invalid-label.json" ||
  fail "plot --labels with invalid UTF-8 wrote no UTF-8 JSON"

# Training curves: one run and two, as SVG, HTML and JSON.
run "$TFM" plot --metrics "$WORK/a/metrics.jsonl" "$WORK/b/metrics.jsonl" --labels "run a" "run <b>" --out "$WORK/curves.svg"
expect_code 0 "plot two runs"
run "$TFM" plot --metrics "$WORK/a/metrics.jsonl" --out "$WORK/curves.html"
expect_code 0 "plot html"
run "$TFM" plot --metrics "$WORK/a/metrics.jsonl" "$WORK/b/metrics.jsonl" --out "$WORK/curves.json"
expect_code 0 "plot json"
run "$TFM" plot --positions --model "$model" --max-position 40 --out "$WORK/positions.svg"
expect_code 0 "plot positions"
run "$TFM" plot --positions --model "$model" --max-position 100000000 --out "$WORK/huge.svg"
expect_code 2 "plot --max-position 100000000 (a cell per pair of positions)"
expect_one_line_error "plot --max-position 100000000"
run "$TFM" plot --positions --model "$model" --max-position 40 --out "$WORK/positions.json"
expect_code 0 "plot positions json"
python3 - "$WORK" <<'PY' || fail "plots are wrong"
import json, math, sys, xml.dom.minidom
w = sys.argv[1]
svg = open(w + "/curves.svg", encoding="utf-8").read()
xml.dom.minidom.parseString(svg.encode())
for label in ["run a train", "run a valid", "run &lt;b&gt; train", "validation BLEU by minutes", "learning rate by updates"]:
    assert label in svg, label
xml.dom.minidom.parse(w + "/curves.html")
runs = json.load(open(w + "/curves.json"))
metrics = [json.loads(line) for line in open(w + "/a/metrics.jsonl")]
assert [p["update"] for p in runs[0]["train"]] == [m["update"] for m in metrics if m["type"] == "train"]
assert [p["bleu"] for p in runs[0]["valid"]] == [m["bleu"] for m in metrics if m["type"] == "valid"]
xml.dom.minidom.parse(w + "/positions.svg")
pe = json.load(open(w + "/positions.json"))
assert pe["kind"] == "sinusoidal" and pe["positions"] == 40 and pe["d_model"] == 32
# PE(3, 0) = sin(3), PE(3, 1) = cos(3) (§3.5), and the dot products depend on p - q alone.
assert abs(pe["encoding"][3][0] - math.sin(3)) < 1e-4 and abs(pe["encoding"][3][1] - math.cos(3)) < 1e-4
dot = pe["normalised_dot_products"]
assert abs(dot[5][9] - dot[20][24]) < 1e-4 and abs(dot[7][7] - 1) < 1e-4
PY
printf '{"type": "train", "update": 1}\nnot json\n' > "$WORK/bad.jsonl"
run "$TFM" plot --metrics "$WORK/bad.jsonl" --out "$WORK/bad.svg"
expect_code 3 "a bad metrics line"
expect_one_line_error "a bad metrics line"
expect_contains "$err" "bad.jsonl:2: not a JSON record" "a bad metrics line names file and line"

# Headless Chromium: the page and the plot render to something that is not blank.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "SKIP (part): Chromium is not installed (Debian: apt-get install chromium); rendering not checked"
else
  for picture in "$WORK/pages/line-000001.html" "$WORK/curves.svg"; do
    png="$picture.png"
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,700 \
      --screenshot="$png" "file://$picture" > /dev/null 2>&1
    python3 "$(dirname "$0")/png_is_not_blank.py" "$png" || fail "$picture: blank or missing screenshot"
  done
fi
finish
