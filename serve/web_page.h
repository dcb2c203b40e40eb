#pragma once
#include <string>

namespace tfm {

/// GET /: a page where a person types text, picks the language pair and reads the translation.
/// Self-contained (inline style and script, nothing from the network); it calls /languages and
/// /translate. `?q=TEXT&source=xx&target=yy` fills the form and translates at once (how the
/// headless-browser test drives it); `api_key=KEY` goes with each request where one is needed.
const std::string& web_page();

}  // namespace tfm
