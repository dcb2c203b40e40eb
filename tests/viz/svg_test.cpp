#include "viz/svg.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "viz/attention_page.h"
#include "viz/heatmap.h"
#include "viz/line_chart.h"

namespace tfm {
namespace {

TEST(Svg, EscapesEverythingXmlReserves) {
  EXPECT_EQ(xml_escape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(xml_escape("\xE2\x96\x81Katzen"), "\xE2\x96\x81Katzen");  // SentencePiece's U+2581 passes
  EXPECT_EQ(xml_escape(std::string("a\x01z")), "a\xEF\xBF\xBDz");     // not allowed in XML 1.0 at all
}

TEST(Svg, JsonForAScriptCannotCloseTheScriptOrItsCdata) {
  const std::string json = nlohmann::json{{"piece", "</script>]]>"}}.dump();
  const std::string safe = json_for_script(json);
  EXPECT_EQ(safe.find("</"), std::string::npos);
  EXPECT_EQ(safe.find("]]>"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(safe)["piece"], "</script>]]>");  // the same JSON value
}

TEST(Svg, NumbersAndColours) {
  EXPECT_EQ(svg_number(12.0), "12");
  EXPECT_EQ(svg_number(3.14159), "3.14");
  EXPECT_EQ(svg_number(-0.001), "0");
  EXPECT_EQ(sequential_colour(0), "#ffffff");
  EXPECT_EQ(sequential_colour(1), "#08306b");
  EXPECT_EQ(diverging_colour(0), "#ffffff");
  EXPECT_EQ(diverging_colour(-1), "#2166ac");
  EXPECT_EQ(diverging_colour(1), "#b2182b");
}

TEST(LineChart, NiceTicksCoverTheRangeInRoundSteps) {
  EXPECT_EQ(nice_ticks(0, 10), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(3, 97), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  const auto small = nice_ticks(0.00012, 0.0007);
  EXPECT_LE(small.front(), 0.00012);
  EXPECT_GE(small.back(), 0.0007);
  EXPECT_EQ(nice_ticks(5, 5).size() > 1, true);  // a flat series still gets an axis
}

TEST(LineChart, DrawsEverySeriesAndLabel) {
  ChartPanel panel{"loss by updates", "updates", "loss", {}, false};
  panel.series.push_back({"run <a> train", {1, 2, 3}, {5, 4, 3.5}, 0, false});
  panel.series.push_back({"run <a> valid", {2, 3}, {4.5, 4}, 0, true});
  const std::string svg = line_charts({panel}, 2, "curves");
  EXPECT_NE(svg.find("run &lt;a&gt; train"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
}

TEST(HeatMap, LabelsEveryRowAndColumnAndSharesAPathPerColour) {
  Matrix m{2, 3, {0, 0.5f, 1, 1, 0.5f, 0}};
  HeatMapOptions options;
  options.title = "cross";
  options.row_labels = {"x", "y<"};
  options.col_labels = {"a", "b", "c"};
  const std::string svg = heat_map(m, options);
  for (const char* label : {">x<", ">y&lt;<", ">a<", ">b<", ">c<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  size_t paths = 0;
  for (size_t at = 0; (at = svg.find("<path", at)) != std::string::npos; ++at) ++paths;
  EXPECT_EQ(paths, 3u);  // three distinct values, three colours
}

TEST(HeatMap, IsWideEnoughForItsTitle) {
  Matrix narrow{2, 1, {0, 1}};
  HeatMapOptions options;
  options.title = std::string(80, 't');
  EXPECT_GE(heat_map_size(narrow, options).first, 8.0 * 80);
  options.title = "t";
  EXPECT_LT(heat_map_size(narrow, options).first, 8.0 * 80);
}

TEST(HeatMap, StackedPutsEachPictureBelowTheLast) {
  const std::string svg = stacked({{"<svg width=\"30\" height=\"10\"/>", {30, 10}},
                                   {"<svg width=\"50\" height=\"20\"/>", {50, 20}},
                                   {"<svg width=\"40\" height=\"5\"/>", {40, 5}}});
  EXPECT_NE(svg.find("width=\"50\" height=\"35\""), std::string::npos) << svg;  // widest, heights summed
  EXPECT_NE(svg.find("<svg y=\"0\" width=\"30\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<svg y=\"10\" width=\"50\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<svg y=\"30\" width=\"40\""), std::string::npos) << svg;
}

TEST(AttentionPage, HoldsEveryLabelAndTheNumbers) {
  AttentionView view{"cross", "cross-attention", "target", "source", {"▁zwei", "</s>"}, {"▁two", "<&>", "</s>"}, {}};
  view.heads = {{Matrix{2, 3, {0.2f, 0.3f, 0.5f, 0, 0, 1}}, Matrix{2, 3, {1, 0, 0, 0.5f, 0.5f, 0}}}};
  const AttentionPage page{"line 1", "two <&>", "zwei", {view}};
  const std::string html = attention_html(page);
  for (const char* label : {"\xE2\x96\x81zwei", "&lt;/s&gt;", "\xE2\x96\x81two", "&lt;&amp;&gt;"}) {
    EXPECT_NE(html.find(label), std::string::npos) << label;
  }
  // Nothing fetched: the only URLs are XML namespace names, and nothing has a src.
  for (size_t at = 0; (at = html.find("http", at)) != std::string::npos; ++at) {
    EXPECT_EQ(html.compare(at, 18, "http://www.w3.org/"), 0) << html.substr(at, 40);
  }
  EXPECT_EQ(html.find("src="), std::string::npos);
  const auto json = attention_json(page);
  EXPECT_EQ(json["views"][0]["layers"][0][1][1][0], 0.5);
  EXPECT_EQ(json["views"][0]["col_labels"][1], "<&>");
}

}  // namespace
}  // namespace tfm
