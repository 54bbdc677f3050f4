// Client-given text as the log and the HTTP errors write it: valid JSON and
// valid UTF-8 whatever the bytes, one line whatever the characters.
#include "common/json_quote.h"

#include <gtest/gtest.h>

#include <string>

namespace ptoserve {
namespace {

using std::string_literals::operator""s;

TEST(JsonQuoteTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonQuote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(JsonQuote("line\nforged\r\t"), R"("line\nforged\r\t")");
  EXPECT_EQ(JsonQuote("\x1b[31m"), R"("\u001b[31m")");
  EXPECT_EQ(JsonQuote("nul:\0."s), R"("nul:\u0000.")");
}

TEST(JsonQuoteTest, KeepsWellFormedUtf8) {
  // é (2 bytes), € (3), 𝄞 (4).
  EXPECT_EQ(JsonQuote("\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e"),
            "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\"");
}

TEST(JsonQuoteTest, WritesBytesThatAreNotUtf8AsReplacementCharacters) {
  EXPECT_EQ(JsonQuote("a\xff"
                      "b"),
            R"("a\ufffdb")");
  // A lone continuation byte, a sequence cut short, an overlong '/', a
  // surrogate, and past U+10FFFF: each byte replaced on its own.
  EXPECT_EQ(JsonQuote("\x80"), R"("\ufffd")");
  EXPECT_EQ(JsonQuote("\xe2\x82"), R"("\ufffd\ufffd")");
  EXPECT_EQ(JsonQuote("\xc0\xaf"), R"("\ufffd\ufffd")");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");
}

TEST(LineSafeTest, NoClientTextStartsALineOrReachesATerminal) {
  EXPECT_EQ(LineSafe("tile \"a\nptoserve: forged\""),
            "tile \"a\\x0aptoserve: forged\"");
  EXPECT_EQ(LineSafe("\r\x1b[2J\x7f"), "\\x0d\\x1b[2J\\x7f");
  EXPECT_EQ(LineSafe("back\\slash"), "back\\\\slash");
  EXPECT_EQ(LineSafe("\xc3\xa9 \xff"), "\xc3\xa9 \\xff");
  EXPECT_EQ(LineSafe("plain text: 16x16 int32"), "plain text: 16x16 int32");
}

}  // namespace
}  // namespace ptoserve
