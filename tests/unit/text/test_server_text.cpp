// strata-server's text stream (server/text_stream.cpp): what may be sent after each token when a
// token's bytes end inside a UTF-8 character and the text's tail may begin a stop string. Checked
// against a reference that searches the whole text so far after every token, on random texts,
// random cuts (inside characters too) and random stop strings.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "text_stream.hpp"

namespace {

// Whole characters of 1 to 4 bytes, so that every cut a stop string makes is a character boundary.
const std::vector<std::string> kChars = {"a", "b", " ", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80"};

std::string random_text(std::mt19937_64& rng, int max_chars) {
    std::string s;
    const int n = int(rng() % uint64_t(max_chars + 1));
    for (int i = 0; i < n; ++i) s += kChars[rng() % kChars.size()];
    return s;
}

// The text a client should get: after each token the text so far is searched for every stop
// string; the first token that completes one ends the text before the earliest occurrence.
struct Expected {
    std::string text;
    bool stopped = false;
};
Expected reference(const std::vector<std::string>& tokens, const std::vector<std::string>& stops) {
    std::string so_far;
    for (const auto& t : tokens) {
        so_far += t;
        size_t cut = std::string::npos;
        for (const auto& s : stops) cut = std::min(cut, so_far.find(s));
        if (cut != std::string::npos) return {so_far.substr(0, cut), true};
    }
    return {so_far, false};
}

}  // namespace

TEST_CASE("server text stream: random texts, cuts and stop strings give the reference text, whole characters only") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 4000; ++round) {
        CAPTURE(round);
        const std::string text = random_text(rng, 24);
        std::vector<std::string> stops;
        const int n_stops = int(rng() % 4);
        for (int i = 0; i < n_stops; ++i) {
            std::string s = random_text(rng, 3);
            if (s.empty()) s.push_back('a');
            stops.push_back(s);
        }
        std::vector<std::string> tokens;  // byte cuts anywhere, inside characters too
        for (size_t at = 0; at < text.size();) {
            const size_t len = 1 + rng() % 5;
            tokens.push_back(text.substr(at, len));
            at += len;
        }
        const Expected want = reference(tokens, stops);

        server::TextStream stream(stops);
        std::string got;
        for (const auto& t : tokens) {
            const std::string piece = stream.push(t);
            got += piece;
            // What was sent so far never ends inside a character.
            CHECK(server::incomplete_utf8_tail(got) == 0);
            if (stream.stopped()) break;
        }
        CHECK(stream.stopped() == want.stopped);
        if (!stream.stopped()) got += stream.flush();
        CHECK(got == want.text);
    }
}

TEST_CASE("server text stream: incomplete UTF-8 tails") {
    CHECK(server::incomplete_utf8_tail("") == 0);
    CHECK(server::incomplete_utf8_tail("abc") == 0);
    CHECK(server::incomplete_utf8_tail("a\xC3") == 1);
    CHECK(server::incomplete_utf8_tail("a\xC3\xA9") == 0);
    CHECK(server::incomplete_utf8_tail("\xE4\xB8") == 2);
    CHECK(server::incomplete_utf8_tail("\xF0\x9F\x98") == 3);
    CHECK(server::incomplete_utf8_tail("\xF0\x9F\x98\x80") == 0);
    CHECK(server::incomplete_utf8_tail("\x80\x80\x80\x80") == 0);  // stray continuation bytes: sent as they are
    CHECK(server::incomplete_utf8_tail("a\xFF") == 0);              // an invalid lead byte counts as complete
}
