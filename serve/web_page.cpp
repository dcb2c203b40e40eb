#include "serve/web_page.h"

namespace tfm {
namespace {

const char* const kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tfm translate</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
  h1 { font-size: 1.4rem; }
  .pane { display: flex; gap: 1rem; }
  textarea, #output { flex: 1; min-height: 10rem; font-size: 1.1rem; padding: .6rem; border: 1px solid #999;
                      border-radius: 4px; box-sizing: border-box; }
  #output { background: #f4f6f8; white-space: pre-wrap; }
  .bar { margin: .8rem 0; display: flex; gap: .6rem; align-items: center; }
  button { font-size: 1rem; padding: .35rem 1.2rem; }
  #status { color: #666; }
  .error { color: #b00020; }
</style>
</head>
<body>
<h1>tfm translate</h1>
<div class="bar">
  <label for="pair">Languages</label> <select id="pair"></select>
  <button id="go" type="button">Translate</button> <span id="status"></span>
</div>
<div class="pane">
  <textarea id="input" placeholder="Text to translate, one sentence per line"></textarea>
  <div id="output" aria-live="polite"></div>
</div>
<script>
"use strict";
const pair = document.getElementById("pair");
const input = document.getElementById("input");
const output = document.getElementById("output");
const status = document.getElementById("status");
const apiKey = new URLSearchParams(location.search).get("api_key");

async function loadPairs() {
  const languages = await (await fetch("/languages")).json();
  const names = Object.fromEntries(languages.map(language => [language.code, language.name]));
  for (const language of languages) {
    for (const target of language.targets) {
      const option = document.createElement("option");
      option.value = language.code + "|" + target;
      option.textContent = language.name + " \u2192 " + (names[target] || target);
      pair.appendChild(option);
    }
  }
}

async function translate() {
  const [source, target] = pair.value.split("|");
  const lines = input.value.split("\n");
  status.textContent = "translating\u2026";
  status.className = "";
  const started = performance.now();
  const response = await fetch("/translate", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify(Object.assign({q: lines, source: source, target: target, format: "text"},
                                       apiKey ? {api_key: apiKey} : {}))
  });
  const answer = await response.json();
  if (!response.ok) {
    status.textContent = answer.error || response.statusText;
    status.className = "error";
    return;
  }
  output.textContent = answer.translatedText.join("\n");
  status.textContent = Math.round(performance.now() - started) + " ms";
  document.body.dataset.translated = "yes";
}

document.getElementById("go").addEventListener("click", translate);
loadPairs().then(() => {
  const params = new URLSearchParams(location.search);
  if (params.has("source") && params.has("target")) pair.value = params.get("source") + "|" + params.get("target");
  if (params.has("q")) {
    input.value = params.get("q");
    translate();
  }
});
</script>
</body>
</html>
)HTML";

}  // namespace

const std::string& web_page() {
  static const std::string page = kPage;
  return page;
}

}  // namespace tfm
