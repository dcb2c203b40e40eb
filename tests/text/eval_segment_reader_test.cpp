#include "text/segment_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "tests/test_support.h"

namespace tfm {
namespace {

using Segments = std::vector<std::string>;

/// The message of the std::runtime_error `read` throws ("" when it throws none).
template <class Function>
std::string runtime_error_of(Function read) {
  try {
    read();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

TEST(EvalSegmentReader, PlainTextKeepsEmptyLinesAndStripsTrailingUnicodeSpace) {
  testing::TempDir dir;
  testing::write_text(dir / "hyp.txt", "first  \r\n\n  second\u00a0\u3000\nlast\u200b");
  EXPECT_EQ(read_segments((dir / "hyp.txt").string()), (Segments{"first", "", "  second", "last\u200b"}));
}

TEST(EvalSegmentReader, ReadsGzip) {
  testing::TempDir dir;
  const std::string path = (dir / "ref.txt.gz").string();
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  const std::string text = "eins\nzwei \n";
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
  EXPECT_EQ(read_segments(path), (Segments{"eins", "zwei"}));
}

TEST(EvalSegmentReader, InvalidUtf8NamesFileAndLine) {
  testing::TempDir dir;
  testing::write_text(dir / "latin1.txt",
                      "ok\nStra\xdf"
                      "e\n");
  const std::string message = runtime_error_of([&] { read_segments((dir / "latin1.txt").string()); });
  EXPECT_NE(message.find((dir / "latin1.txt").string() + ":2"), std::string::npos) << message;
}

TEST(EvalSegmentReader, MissingFileNamesIt) {
  const std::string message = runtime_error_of([] { read_segments("/nonexistent/ref.de"); });
  EXPECT_NE(message.find("/nonexistent/ref.de"), std::string::npos) << message;
}

TEST(EvalSegmentReader, WmtSgmlSegmentsWithEntitiesDecoded) {
  testing::TempDir dir;
  testing::write_text(dir / "newstest.de.sgm",
                      "<refset setid=\"newstest\" srclang=\"any\" trglang=\"de\">\n"
                      "<doc sysid=\"ref\" docid=\"a\" genre=\"news\" origlang=\"en\">\n"
                      "<p>\n<seg id=\"1\">  Hallo   &amp; willkommen </seg>\n"
                      "<seg id=\"2\">A &lt;b&gt; &quot;c&quot; &#233;&#xE9; &nbsp;</seg>\n"
                      "<segment>not a seg</segment>\n<seg id=3></seg>\n</p>\n</doc>\n</refset>\n");
  EXPECT_EQ(read_segments((dir / "newstest.de.sgm").string()),
            (Segments{"Hallo & willkommen", "A <b> \"c\" éé &nbsp;", ""}));
}

TEST(EvalSegmentReader, BrokenSgmlNamesFileAndLine) {
  const std::string message =
      runtime_error_of([] { parse_sgml_segments("<doc>\n<seg id=1>ok</seg>\n<seg id=2>no end\n", "x.sgm"); });
  EXPECT_NE(message.find("x.sgm:3"), std::string::npos) << message;
  const std::string wmt21 =
      runtime_error_of([] { parse_sgml_segments("<doc><src lang=\"en\"><seg id=\"1\">a</seg></src>", "t.xml"); });
  EXPECT_NE(wmt21.find("WMT21"), std::string::npos) << wmt21;
}

TEST(EvalSegmentReader, SgmlIsRecognisedByName) {
  EXPECT_TRUE(is_sgml_path("newstest2014-deen-ref.de.sgm"));
  EXPECT_TRUE(is_sgml_path("tst.xml.gz"));
  EXPECT_FALSE(is_sgml_path("ref.de"));
  EXPECT_FALSE(is_sgml_path("-"));
}

TEST(EvalSegmentReader, DecodesEntitiesInOnePass) {
  EXPECT_EQ(decode_xml_entities("&amp;lt; &apos;&#x1F600;&#0; &bogus; & x;"), "&lt; '😀&#0; &bogus; & x;");
}

TEST(EvalSegmentReader, MismatchedCountsNameBothFiles) {
  EXPECT_NO_THROW(check_segment_counts("hyp.de", 3, "ref.de", 3));
  const std::string message = runtime_error_of([] { check_segment_counts("hyp.de", 30, "ref.de", 29); });
  for (const char* part : {"hyp.de", "30", "ref.de", "29"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tfm
