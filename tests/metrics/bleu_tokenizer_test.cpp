#include "metrics/bleu_tokenizers.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "tests/test_support.h"
#include "text/unicode_text.h"

namespace tfm {
namespace {

std::string tok13a(const std::string& text) { return tokenize(BleuTokenizer::k13a, text); }
std::string intl(const std::string& text) { return tokenize(BleuTokenizer::kIntl, text); }

TEST(BleuTokenizer13a, SplitsPunctuationButKeepsNumbersApostrophesAndHyphens) {
  EXPECT_EQ(tok13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tok13a("It costs $3.50, i.e. 3,000 cents."), "It costs $ 3.50 , i . e . 3,000 cents .");
  EXPECT_EQ(tok13a("U.S.A. e-mail 3-4 don't"), "U . S . A . e-mail 3 - 4 don't");
  EXPECT_EQ(tok13a("(a) [b] {c} ~d^ `e_ |f\\"), "( a ) [ b ] { c } ~ d ^ ` e _ | f \\");
  EXPECT_EQ(tok13a("Année 2020."), "Année 2020 .") << "the padding splits a final dot after a number";
}

TEST(BleuTokenizer13a, RegexMatchesDoNotOverlap) {
  // Each rule matches two characters and resumes after them, as Python's re.sub does.
  EXPECT_EQ(tok13a("a.. b,, 1.. 2,.3"), "a . . b , , 1 . . 2 , . 3");
}

TEST(BleuTokenizer13a, UnescapesFourEntitiesInOrder) {
  EXPECT_EQ(tok13a("&quot;x&quot; &lt;b&gt;"), "\" x \" < b >");
  EXPECT_EQ(tok13a("&amp;lt; &amp;quot; &apos;"), "< & quot ; & apos ;");
  EXPECT_EQ(tok13a("<skipped> word"), "word");
}

TEST(BleuTokenizer13a, LeavesNonAsciiAloneAndSplitsOnUnicodeSpaces) {
  EXPECT_EQ(tok13a("我们今天去公园。"), "我们今天去公园。");
  EXPECT_EQ(tok13a("x\u00a0y\u3000z\u200bw"), "x y z\u200bw") << "U+200B is not whitespace to Python";
}

TEST(BleuTokenizerIntl, SplitsUnicodePunctuationAndSymbols) {
  EXPECT_EQ(intl("«Là-bas», répond-il."), "« Là - bas » , répond - il .");
  EXPECT_EQ(intl("$10 and 5€"), "$ 10 and 5 €");
  EXPECT_EQ(intl("I love pizza 🍕!"), "I love pizza 🍕 !");
  EXPECT_EQ(intl("¿Qué? a+b=c don't"), "¿ Qué ? a + b = c don ' t");
}

TEST(BleuTokenizerIntl, KeepsPunctuationBetweenDigitsAndAFinalDotAfterANumber) {
  EXPECT_EQ(intl("3,5 km 1.000.000"), "3,5 km 1.000.000");
  EXPECT_EQ(intl("Année 2020."), "Année 2020.") << "mteval-v14 behaviour sacreBLEU keeps on purpose";
}

TEST(BleuTokenizerCharAndNone, SplitOnCharactersOrWhitespace) {
  EXPECT_EQ(tokenize(BleuTokenizer::kChar, "东京 ok"), "东 京 o k");
  EXPECT_EQ(tokenize(BleuTokenizer::kChar, "e\u0301"), "e \u0301") << "code points, as Python iterates";
  EXPECT_EQ(tokenize(BleuTokenizer::kNone, "  a,b \t c\u3000d "), "a,b c d");
  EXPECT_EQ(tokenize_to_tokens(BleuTokenizer::kNone, ""), std::vector<std::string>{});
}

TEST(BleuTokenizer, NamesAndErrors) {
  for (const char* name : {"13a", "intl", "char", "none"}) EXPECT_EQ(tokenizer_name(parse_bleu_tokenizer(name)), name);
  EXPECT_THROW(parse_bleu_tokenizer("zh"), std::invalid_argument);
  EXPECT_THROW(tokenize(BleuTokenizer::k13a, "bad \xff byte"), std::invalid_argument);
}

TEST(UnicodeText, BehavesLikePythonStrMethods) {
  EXPECT_EQ(lowercase("İSTANBUL ΟΔΟΣ Straße"), "i̇stanbul οδος straße") << "full mapping, final sigma";
  EXPECT_EQ(rstrip_python("text \u00a0\t\u3000"), "text");
  EXPECT_EQ(rstrip_python("text\u200b"), "text\u200b");
  size_t bad = 0;
  EXPECT_FALSE(is_valid_utf8("ok\xed\xa0\x80", &bad)) << "surrogates are not UTF-8";
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf")) << "overlong";
  EXPECT_TRUE(is_valid_utf8("€😀"));
}

/// Checks every row of a tokenizer table: input, a tab, sacreBLEU 2.6.0's output.
void expect_table(const std::string& file, BleuTokenizer tokenizer) {
  std::ifstream in(testing::data_dir() / "testdata" / "bleu" / file);
  ASSERT_TRUE(in) << file;
  size_t rows = 0, matched = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << file << ":" << rows + 1;
    ++rows;
    const std::string input = line.substr(0, tab);
    const std::string actual = tokenize(tokenizer, input);
    EXPECT_EQ(actual, line.substr(tab + 1)) << file << ":" << rows << " input: " << input;
    matched += actual == line.substr(tab + 1) ? 1 : 0;
  }
  EXPECT_GT(rows, 0u);
  std::cout << "[ golden  ] " << file << ": " << matched << "/" << rows << " rows identical\n";
}

TEST(BleuTokenizerGolden, Table13aMatchesSacrebleu) {
  TFM_REQUIRE_DATA("testdata/bleu/tokenize_13a.tsv");
  expect_table("tokenize_13a.tsv", BleuTokenizer::k13a);
}

TEST(BleuTokenizerGolden, TableIntlMatchesSacrebleu) {
  TFM_REQUIRE_DATA("testdata/bleu/tokenize_intl.tsv");
  expect_table("tokenize_intl.tsv", BleuTokenizer::kIntl);
}

}  // namespace
}  // namespace tfm
