// Stage-control messages (types 10-18): round trips with random fields, every refusal the
// decoder owes a malformed payload, and random corruption never crashing the decoder.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "test_support.hpp"
#include "transport/bytes.hpp"
#include "transport/messages.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
using strata::transport::test::decode_error;
using strata::transport::test::round_trip;

namespace {

std::string random_text(std::mt19937_64& rng) {
    static const char* pieces[] = {"cpu", "node-", "\xC3\xA9", "\xE2\x89\xA0", "\xF0\x9F\x98\x80", "x", "7"};
    std::string s;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) s += pieces[rng() % std::size(pieces)];
    return s.size() <= kMaxStageText ? s : s.substr(0, 0);
}

float random_float(std::mt19937_64& rng) { return std::uniform_real_distribution<float>(-100.f, 100.f)(rng); }

Tensor random_hidden(std::mt19937_64& rng, size_t n_tokens) {
    Tensor t;
    t.dtype = DType(rng() % 3);
    t.dims = {n_tokens, 1 + rng() % 64};
    t.data.resize(n_tokens * t.dims[1] * dtype_size(t.dtype));
    for (auto& b : t.data) b = uint8_t(rng());
    return t;
}

Forward random_forward(std::mt19937_64& rng) {
    Forward f;
    f.position = rng();
    f.output = ForwardOutput(rng() % 5);
    f.n_top = f.output == ForwardOutput::sample ? uint32_t(rng() % (kMaxTopLogprobs + 1)) : 0;
    f.tokens.resize(1 + rng() % 17);
    for (auto& t : f.tokens) t = int32_t(rng() % 200000);
    f.hidden = random_hidden(rng, f.tokens.size());
    return f;
}

Sampled random_sampled(std::mt19937_64& rng) {
    Sampled s;
    s.token = int32_t(rng() % 200000);
    s.top.resize(rng() % (kMaxTopLogprobs + 1));
    for (auto& t : s.top) t = TopLogprob{int32_t(rng() % 200000), -std::abs(random_float(rng))};
    return s;
}

// A random memory plan and range (empty, ragged or whole bytes of bitmap), some layers recurrent.
StageReady random_ready(std::mt19937_64& rng) {
    StageReady r{rng(), rng(), rng(), rng(), rng()};
    r.layer_begin = uint32_t(rng() % 200);
    r.layer_end = r.layer_begin + uint32_t(rng() % 70);
    const uint64_t density = rng() % 4;  // none, a quarter, half, three quarters
    for (uint32_t l = r.layer_begin; l < r.layer_end; ++l)
        if (rng() % 4 < density) r.recurrent_layers.push_back(l);
    return r;
}

// One of each stage message with random fields.
std::vector<Message> random_stage_messages(std::mt19937_64& rng) {
    StageInfo info;
    info.available_memory = rng();
    info.fixed_layer_begin = uint32_t(rng() % 100);
    info.fixed_layer_end = info.fixed_layer_begin + uint32_t(rng() % 100);
    info.n_layers = uint32_t(rng());
    info.n_threads = uint32_t(rng());
    info.backend = random_text(rng);
    info.host = random_text(rng);
    StageConfigure c;
    c.layer_begin = uint32_t(rng() % 1000);
    c.layer_end = c.layer_begin + 1 + uint32_t(rng() % 1000);
    c.kv_type = uint32_t(rng());
    c.context_length = 1 + uint32_t(rng() % 1000000);
    c.n_batch = 1 + uint32_t(rng() % 4096);
    StageReady ready = random_ready(rng);
    SetSampling ss{random_float(rng), random_float(rng), random_float(rng), random_float(rng),
                   int32_t(rng()),    int32_t(rng()),    rng()};
    return {StageQuery{}, info, c, ready, random_forward(rng), random_sampled(rng), ss,
            SampleRequest{uint32_t(rng() % (kMaxTopLogprobs + 1))}, Done{}};
}

std::vector<uint8_t> payload_of(const Message& m) {
    auto f = to_frame(m);
    REQUIRE(f.ok());
    return f.value().payload;
}

void put_u32(std::vector<uint8_t>& p, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[at + i] = uint8_t(v >> (8 * i));
}

Forward small_forward() {
    Forward f;
    f.position = 7;
    f.output = ForwardOutput::hidden;
    f.tokens = {1, 2, 3};
    f.hidden = Tensor{DType::f16, {3, 4}, std::vector<uint8_t>(3 * 4 * 2, 0x11)};
    return f;
}

}  // namespace

TEST_CASE("transport: every stage message with random fields survives a round trip through the wire") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    MESSAGE("seed ", seed);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 50; ++round) {
        const auto messages = random_stage_messages(rng);
        REQUIRE(messages.size() == 9);
        for (size_t i = 0; i < messages.size(); ++i) {
            CAPTURE(i);
            CHECK(uint16_t(message_type(messages[i])) == 10 + i);
            CHECK(round_trip(messages[i]) == messages[i]);
        }
    }
}

TEST_CASE("transport: stage message layouts are little-endian, byte for byte as PROTOCOL.md says") {
    const auto conf = payload_of(StageConfigure{1, 0x0203, 4, 5, 6});
    CHECK(conf == std::vector<uint8_t>{1, 0, 0, 0, 3, 2, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0});

    const auto info = payload_of(StageInfo{9, 0, 0, 61, 8, "cpu", "h"});
    CHECK(info.size() == 24 + 2 + 3 + 2 + 1);
    CHECK(info[0] == 9);
    CHECK(info[16] == 61);
    CHECK(info[24] == 3);
    CHECK(info[26] == 'c');
    CHECK(info[29] == 1);
    CHECK(info[31] == 'h');

    const auto fwd = payload_of(small_forward());
    CHECK(fwd.size() == 20 + 3 * 4 + 4 + 2 * 8 + 24);
    CHECK(fwd[0] == 7);
    CHECK(fwd[16] == 3);  // n_tokens
    CHECK(fwd[20] == 1);  // tokens[0]
    CHECK(fwd[32] == 1);  // dtype f16
    CHECK(fwd[34] == 2);  // ndim

    const auto sampled = payload_of(Sampled{5, {{6, -0.5f}}});
    REQUIRE(sampled.size() == 16);
    CHECK(sampled[0] == 5);
    CHECK(sampled[4] == 1);
    CHECK(sampled[8] == 6);
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= uint32_t(sampled[12 + i]) << (8 * i);
    CHECK(std::bit_cast<float>(bits) == -0.5f);

    CHECK(payload_of(SetSampling{}).size() == 32);
    CHECK(payload_of(SampleRequest{3}) == std::vector<uint8_t>{3, 0, 0, 0});
    CHECK(payload_of(StageReady{}).size() == 48);
    StageReady ready{1, 2, 3, 4, 5};
    ready.layer_begin = 0x0102;
    ready.layer_end = 0x0102 + 11;
    ready.recurrent_layers = {0x0102, 0x0104, 0x0102 + 8, 0x0102 + 10};
    const auto rp = payload_of(ready);
    REQUIRE(rp.size() == 48 + 2);
    CHECK(rp[0] == 1);
    CHECK(rp[32] == 5);
    CHECK(rp[40] == 2);
    CHECK(rp[41] == 1);
    CHECK(rp[44] == 2 + 11);
    CHECK(rp[48] == 0b00000101);  // layers begin + 0 and + 2, least significant bit first
    CHECK(rp[49] == 0b00000101);  // + 8 and + 10; bits past the range stay 0
    CHECK(payload_of(StageQuery{}).empty());
    CHECK(payload_of(Done{}).empty());
}

TEST_CASE("transport: empty stage messages and fixed layouts of the wrong size are malformed") {
    CHECK(decode_error(MessageType::stage_query, {0}) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::done, {0}) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_configure, std::vector<uint8_t>(19)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_configure, std::vector<uint8_t>(21)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_ready, std::vector<uint8_t>(39)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_ready, std::vector<uint8_t>(47)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_ready, std::vector<uint8_t>(49)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::set_sampling, std::vector<uint8_t>(33)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::sample, std::vector<uint8_t>(3)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::stage_info, std::vector<uint8_t>(27)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::sampled, std::vector<uint8_t>(7)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::forward, std::vector<uint8_t>(19)) == Errc::malformed_payload);
}

TEST_CASE("transport: stage_configure needs a non-empty range, a context and a batch, on both sides") {
    StageConfigure c{0, 4, 0, 128, 16};
    REQUIRE(to_frame(c).ok());
    auto refused = [](StageConfigure bad) {
        CHECK_FALSE(to_frame(bad).ok());
        std::vector<uint8_t> p = payload_of(StageConfigure{0, 4, 0, 128, 16});
        put_u32(p, 0, bad.layer_begin);
        put_u32(p, 4, bad.layer_end);
        put_u32(p, 12, bad.context_length);
        put_u32(p, 16, bad.n_batch);
        CHECK(decode_error(MessageType::stage_configure, p) == Errc::malformed_payload);
    };
    SUBCASE("empty range") { refused({4, 4, 0, 128, 16}); }
    SUBCASE("reversed range") { refused({5, 4, 0, 128, 16}); }
    SUBCASE("no context") { refused({0, 4, 0, 0, 16}); }
    SUBCASE("no batch") { refused({0, 4, 0, 128, 0}); }
}

TEST_CASE("transport: stage_ready's recurrent layers lie in its bounded range, ascending, on both sides") {
    StageReady good{1, 2, 3, 4, 5};
    good.layer_begin = 3;
    good.layer_end = 12;  // 9 layers: 2 bitmap bytes, 7 spare bits
    good.recurrent_layers = {3, 5, 11};
    const auto p = payload_of(good);
    REQUIRE(p.size() == 48 + 2);
    CHECK(std::get<StageReady>(round_trip(good)) == good);
    auto refused = [](StageReady bad) { CHECK_FALSE(to_frame(bad).ok()); };
    SUBCASE("a layer outside the range, repeated or out of order") {
        for (std::vector<uint32_t> layers : {std::vector<uint32_t>{2}, {12}, {5, 5}, {7, 4}}) {
            StageReady bad = good;
            bad.recurrent_layers = layers;
            refused(bad);
        }
    }
    SUBCASE("a reversed or too wide range") {
        StageReady bad = good;
        bad.layer_begin = 13;
        bad.recurrent_layers.clear();
        refused(bad);
        auto q = p;
        put_u32(q, 40, 13);  // begin past end
        CHECK(decode_error(MessageType::stage_ready, q) == Errc::malformed_payload);
        bad.layer_begin = 0;
        bad.layer_end = kMaxStageLayers + 1;
        refused(bad);
        q = p;
        put_u32(q, 40, 0);
        put_u32(q, 44, 0xFFFFFFFFu);  // a bitmap of 512 MiB is refused before any is read
        CHECK(decode_error(MessageType::stage_ready, q) == Errc::malformed_payload);
        bad.layer_end = kMaxStageLayers;  // the widest range: its 8 KiB bitmap goes through
        bad.recurrent_layers = {0, kMaxStageLayers - 1};
        CHECK(std::get<StageReady>(round_trip(bad)) == bad);
    }
    SUBCASE("a bitmap short, long, or with bits past the range") {
        auto q = p;
        q.pop_back();
        CHECK(decode_error(MessageType::stage_ready, q) == Errc::malformed_payload);
        q = p;
        q.push_back(0);
        CHECK(decode_error(MessageType::stage_ready, q) == Errc::malformed_payload);
        for (int bit = 1; bit < 8; ++bit) {  // layer 12 and past: outside [3, 12)
            q = p;
            q[49] = uint8_t(q[49] | (1u << bit));
            CHECK(decode_error(MessageType::stage_ready, q) == Errc::malformed_payload);
        }
        q = p;
        put_u32(q, 44, 3 + 16);  // the range now needs both bytes and no more: decodes
        auto m = from_frame(Frame{MessageType::stage_ready, q});
        REQUIRE(m.ok());
        CHECK(std::get<StageReady>(m.value()).recurrent_layers == good.recurrent_layers);
    }
    SUBCASE("an empty range carries no bitmap") {
        StageReady empty{1, 2, 3, 4, 5};
        empty.layer_begin = empty.layer_end = 7;
        CHECK(payload_of(empty).size() == 48);
        CHECK(std::get<StageReady>(round_trip(empty)) == empty);
        empty.recurrent_layers = {7};
        refused(empty);
    }
}

TEST_CASE("transport: stage_info strings must be UTF-8 of at most 256 bytes and its fixed range ordered") {
    CHECK(to_frame(StageInfo{0, 0, 0, 1, 1, std::string(kMaxStageText, 'b'), "h"}).ok());
    CHECK_FALSE(to_frame(StageInfo{0, 0, 0, 1, 1, std::string(kMaxStageText + 1, 'b'), "h"}).ok());
    CHECK_FALSE(to_frame(StageInfo{0, 0, 0, 1, 1, "cpu", "\xFF"}).ok());
    CHECK_FALSE(to_frame(StageInfo{0, 5, 4, 1, 1, "cpu", "h"}).ok());

    const auto good = payload_of(StageInfo{0, 0, 0, 1, 1, "cpu", "h"});  // 24 + 2 + 3 + 2 + 1
    SUBCASE("invalid UTF-8") {
        auto p = good;
        p[26] = 0xC0;
        CHECK(decode_error(MessageType::stage_info, p) == Errc::malformed_payload);
    }
    SUBCASE("length past kMaxStageText") {
        auto p = good;
        p[24] = uint8_t(kMaxStageText + 1);
        p[25] = uint8_t((kMaxStageText + 1) >> 8);
        CHECK(decode_error(MessageType::stage_info, p) == Errc::malformed_payload);
    }
    SUBCASE("length past the payload") {
        auto p = good;
        p[29] = 9;
        CHECK(decode_error(MessageType::stage_info, p) == Errc::malformed_payload);
    }
    SUBCASE("bytes after the host") {
        auto p = good;
        p.push_back('x');
        CHECK(decode_error(MessageType::stage_info, p) == Errc::malformed_payload);
    }
    SUBCASE("reversed fixed range") {
        auto p = good;
        put_u32(p, 8, 3);
        put_u32(p, 12, 2);
        CHECK(decode_error(MessageType::stage_info, p) == Errc::malformed_payload);
    }
}

TEST_CASE("transport: a forward is refused for every field out of bounds, on both sides") {
    REQUIRE(to_frame(small_forward()).ok());
    const auto good = payload_of(small_forward());
    auto refused_both = [](const Forward& f) {
        CHECK_FALSE(to_frame(f).ok());
    };
    SUBCASE("unknown output") {
        Forward f = small_forward();
        f.output = ForwardOutput(5);
        refused_both(f);
        auto p = good;
        put_u32(p, 8, 5);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("n_top without output = sample") {
        Forward f = small_forward();
        f.n_top = 1;
        refused_both(f);
        auto p = good;
        put_u32(p, 12, 1);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        f.output = ForwardOutput::sample;
        CHECK(to_frame(f).ok());
    }
    SUBCASE("n_top past kMaxTopLogprobs") {
        Forward f = small_forward();
        f.output = ForwardOutput::sample;
        f.n_top = kMaxTopLogprobs + 1;
        refused_both(f);
        auto p = good;
        put_u32(p, 8, uint32_t(ForwardOutput::sample));
        put_u32(p, 12, kMaxTopLogprobs + 1);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("no tokens") {
        Forward f = small_forward();
        f.tokens.clear();
        f.hidden = Tensor{DType::f16, {0, 4}, {}};
        refused_both(f);
        auto p = good;
        put_u32(p, 16, 0);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("more tokens than kMaxForwardTokens, or than the payload holds") {
        auto p = good;
        put_u32(p, 16, kMaxForwardTokens + 1);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        put_u32(p, 16, 0xFFFFFFFF);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        put_u32(p, 16, kMaxForwardTokens);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("a negative token id") {
        Forward f = small_forward();
        f.tokens[1] = -1;
        refused_both(f);
        auto p = good;
        put_u32(p, 24, 0xFFFFFFFF);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("hidden rows differ from the token count") {
        Forward f = small_forward();
        f.hidden = Tensor{DType::f16, {2, 4}, std::vector<uint8_t>(16)};
        refused_both(f);
    }
    SUBCASE("hidden with one or three dimensions") {
        Forward f = small_forward();
        f.hidden = Tensor{DType::f16, {12}, std::vector<uint8_t>(24)};
        refused_both(f);
        f.hidden = Tensor{DType::f16, {3, 2, 2}, std::vector<uint8_t>(24)};
        refused_both(f);
        auto p = good;
        p[34] = 1;  // ndim 1: the second dim's bytes become elements, 3 * 2 bytes != 8 + 24
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
    }
    SUBCASE("hidden with zero columns") {
        Forward f = small_forward();
        f.hidden = Tensor{DType::f16, {3, 0}, {}};
        refused_both(f);
    }
    SUBCASE("hidden bytes short, long or of an unknown dtype") {
        auto p = good;
        p.pop_back();
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        p = good;
        p.push_back(0);
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        p = good;
        p[32] = 9;
        CHECK(decode_error(MessageType::forward, p) == Errc::malformed_payload);
        Forward f = small_forward();
        f.hidden.data.pop_back();
        refused_both(f);
    }
    SUBCASE("payload ends inside the tokens or the tensor prefix") {
        for (size_t n : {size_t(20), size_t(27), size_t(33), size_t(40), size_t(51)}) {
            CAPTURE(n);
            CHECK(decode_error(MessageType::forward, {good.begin(), good.begin() + n}) == Errc::malformed_payload);
        }
    }
}

TEST_CASE("transport: sampled and sample bound the top log-probabilities; tokens are never negative") {
    Sampled s{1, std::vector<TopLogprob>(kMaxTopLogprobs, TopLogprob{2, -1.f})};
    CHECK(to_frame(s).ok());
    s.top.push_back({3, -2.f});
    CHECK_FALSE(to_frame(s).ok());
    CHECK_FALSE(to_frame(Sampled{-1, {}}).ok());
    CHECK_FALSE(to_frame(Sampled{1, {{-4, 0.f}}}).ok());
    CHECK_FALSE(to_frame(SampleRequest{kMaxTopLogprobs + 1}).ok());
    CHECK(decode_error(MessageType::sample, {65, 0, 0, 0}) == Errc::malformed_payload);

    auto p = payload_of(Sampled{1, {{2, -1.f}}});
    auto q = p;
    put_u32(q, 4, 2);  // claims two entries, carries one
    CHECK(decode_error(MessageType::sampled, q) == Errc::malformed_payload);
    q = p;
    put_u32(q, 4, kMaxTopLogprobs + 1);
    CHECK(decode_error(MessageType::sampled, q) == Errc::malformed_payload);
    q = p;
    put_u32(q, 0, 0x80000000u);
    CHECK(decode_error(MessageType::sampled, q) == Errc::malformed_payload);
    q = p;
    put_u32(q, 8, 0xFFFFFFFFu);
    CHECK(decode_error(MessageType::sampled, q) == Errc::malformed_payload);
    q = p;
    q.push_back(0);
    CHECK(decode_error(MessageType::sampled, q) == Errc::malformed_payload);
}

TEST_CASE("transport: set_sampling carries any float and integer bits unchanged") {
    std::vector<uint8_t> p(32);
    for (size_t i = 0; i < p.size(); ++i) p[i] = uint8_t(0xF0 + i);
    auto m = from_frame(Frame{MessageType::set_sampling, p});
    REQUIRE(m.ok());
    auto again = to_frame(m.value());
    REQUIRE(again.ok());
    CHECK(again.value().payload == p);  // NaN payloads and negative counts included
}

TEST_CASE("transport: random corruption of stage payloads is refused or decoded, never a crash") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    MESSAGE("seed ", seed);
    std::mt19937_64 rng(seed);
    size_t decoded = 0, refused = 0;
    for (int round = 0; round < 300; ++round) {
        for (const auto& m : random_stage_messages(rng)) {
            auto f = to_frame(m).value();
            const int flips = 1 + int(rng() % 4);
            for (int k = 0; k < flips && !f.payload.empty(); ++k) f.payload[rng() % f.payload.size()] ^= uint8_t(1 + rng() % 255);
            if (rng() % 4 == 0 && !f.payload.empty()) f.payload.resize(rng() % f.payload.size());
            if (rng() % 8 == 0) f.payload.push_back(uint8_t(rng()));
            auto back = from_frame(f);
            if (!back) {
                CHECK(back.error().code == Errc::malformed_payload);
                CHECK_FALSE(back.error().detail.empty());
                ++refused;
                continue;
            }
            ++decoded;
            // What decodes re-encodes to the very same bytes: every layout is canonical.
            auto again = to_frame(back.value());
            REQUIRE(again.ok());
            CHECK(again.value().payload == f.payload);
        }
    }
    MESSAGE("decoded ", decoded, ", refused ", refused);
    CHECK(decoded + refused == 300 * 9);
}

TEST_CASE("transport: to_payload_parts borrows the tensor elements and matches to_frame") {
    const Forward f = small_forward();
    auto parts = to_payload_parts(f);
    REQUIRE(parts.ok());
    CHECK(parts.value().type == MessageType::forward);
    CHECK(parts.value().tail.data() == f.hidden.data.data());
    CHECK(parts.value().tail.size() == f.hidden.data.size());
    auto joined = parts.value().head;
    joined.insert(joined.end(), parts.value().tail.begin(), parts.value().tail.end());
    CHECK(joined == payload_of(f));

    const Tensor t{DType::f32, {2}, std::vector<uint8_t>(8, 1)};
    auto tp = to_payload_parts(t);
    REQUIRE(tp.ok());
    CHECK(tp.value().tail.data() == t.data.data());
    CHECK(tp.value().head.size() == 4 + 8);

    const Message token = TokenId{5};
    auto none = to_payload_parts(token);
    REQUIRE(none.ok());
    CHECK(none.value().tail.empty());
    const Message boxed = f;  // through the variant, the tail borrows from the variant's copy
    auto bp = to_payload_parts(boxed);
    REQUIRE(bp.ok());
    CHECK(bp.value().tail.data() == std::get<Forward>(boxed).hidden.data.data());
}

TEST_CASE("transport: library status codes ride above the transport's error codes") {
    CHECK(kLibraryStatusBase > uint32_t(kLastErrc));
    ErrorMessage e{kLibraryStatusBase + 11, "stage failed: out of memory"};
    CHECK(std::get<ErrorMessage>(round_trip(e)) == e);
}
