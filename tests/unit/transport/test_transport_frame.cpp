// Frame codec: header layout, CRC32C, and the incremental decoder's errors.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "test_support.hpp"
#include "transport/crc32c.hpp"
#include "transport/frame.hpp"

using namespace strata::transport;

namespace {

std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n) {
    std::vector<uint8_t> out(n);
    for (auto& b : out) b = uint8_t(rng());
    return out;
}

// Feeds `wire` in one call and returns the first result that is not "need more".
Result<std::optional<Frame>> decode_all(FrameDecoder& dec, std::span<const uint8_t> wire) {
    return dec.next(wire);
}

void put_le(std::vector<uint8_t>& wire, size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) wire[at + i] = uint8_t(v >> (8 * i));
}

}  // namespace

TEST_CASE("transport: CRC32C of \"123456789\" is the published check value 0xE3069283") {
    const std::string s = "123456789";
    const std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    CHECK(crc32c(b) == 0xE3069283u);
    CHECK(crc32c({}) == 0u);
    // Chaining over pieces gives the same value as one call.
    CHECK(crc32c(b.subspan(4), crc32c(b.subspan(0, 4))) == 0xE3069283u);
    CHECK(crc32c_portable(b) == 0xE3069283u);
}

TEST_CASE("transport: the fast CRC32C equals the table reference at every length, alignment and split") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto data = random_bytes(rng, 4096 + 64);
    for (size_t offset = 0; offset < 9; ++offset) {
        for (size_t len : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(63), size_t(4096),
                           size_t(rng() % 4096)}) {
            CAPTURE(offset);
            CAPTURE(len);
            const std::span<const uint8_t> s(data.data() + offset, len);
            const uint32_t prior = uint32_t(rng());
            CHECK(crc32c(s) == crc32c_portable(s));
            CHECK(crc32c(s, prior) == crc32c_portable(s, prior));
            const size_t cut = len ? rng() % len : 0;
            CHECK(crc32c(s.subspan(cut), crc32c(s.first(cut))) == crc32c_portable(s));
        }
    }
}

TEST_CASE("transport: an encoded frame has the 24-byte little-endian header documented in PROTOCOL.md") {
    const std::vector<uint8_t> payload{1, 2, 3};
    auto wire = encode_frame(MessageType::token, payload);
    REQUIRE(wire.size() == kHeaderSize + 3);
    CHECK(std::string(wire.begin(), wire.begin() + 4) == "STRF");
    CHECK(wire[4] == 2);  // version (kProtocolVersion), low byte first
    CHECK(wire[5] == 0);
    CHECK(wire[6] == uint8_t(MessageType::token));
    CHECK(wire[7] == 0);
    for (int i = 8; i < 12; ++i) CHECK(wire[i] == 0);  // flags
    CHECK(wire[12] == 3);                               // payload length, u64
    for (int i = 13; i < 20; ++i) CHECK(wire[i] == 0);
    const uint32_t crc = crc32c(payload);
    CHECK(uint32_t(wire[20] | wire[21] << 8 | wire[22] << 16 | uint32_t(wire[23]) << 24) == crc);
}

TEST_CASE("transport: random payloads of every message type survive encode and decode unchanged") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    for (uint16_t t = 1; t <= uint16_t(MessageType::done); ++t) {
        for (size_t len : {size_t(0), size_t(1), size_t(23), size_t(24), size_t(4096), size_t(rng() % 70000)}) {
            CAPTURE(t);
            CAPTURE(len);
            auto payload = random_bytes(rng, len);
            auto wire = encode_frame(MessageType(t), payload);
            size_t consumed = 0;
            auto f = decode_frame(wire, kDefaultMaxPayload, &consumed);
            REQUIRE(f.ok());
            CHECK(consumed == wire.size());
            CHECK(f.value().type == MessageType(t));
            CHECK(f.value().payload == payload);
        }
    }
}

TEST_CASE("transport: frames fed one byte at a time come out whole, one after another") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> stream;
    std::vector<std::vector<uint8_t>> payloads;
    for (int i = 0; i < 5; ++i) {
        payloads.push_back(random_bytes(rng, rng() % 300));
        auto w = encode_frame(MessageType::tensor, payloads.back());
        stream.insert(stream.end(), w.begin(), w.end());
    }
    FrameDecoder dec;
    std::vector<Frame> got;
    for (uint8_t b : stream) {
        std::span<const uint8_t> one(&b, 1);
        auto r = dec.next(one);
        REQUIRE(r.ok());
        CHECK(one.empty());
        if (r.value()) got.push_back(std::move(*r.value()));
    }
    CHECK(dec.finish().ok());
    REQUIRE(got.size() == payloads.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].payload == payloads[i]);
}

TEST_CASE("transport: two frames in one buffer are returned by two calls, the second from the remaining bytes") {
    auto a = encode_frame(MessageType::heartbeat, {});
    auto b = encode_frame(MessageType::bye, {});
    a.insert(a.end(), b.begin(), b.end());
    FrameDecoder dec;
    std::span<const uint8_t> in = a;
    auto first = dec.next(in);
    REQUIRE(first.ok());
    REQUIRE(first.value());
    CHECK(first.value()->type == MessageType::heartbeat);
    CHECK(in.size() == kHeaderSize);
    auto second = dec.next(in);
    REQUIRE(second.ok());
    REQUIRE(second.value());
    CHECK(second.value()->type == MessageType::bye);
    CHECK(in.empty());
}

TEST_CASE("transport: each corruption of a frame yields its own specific error") {
    const std::vector<uint8_t> payload{9, 8, 7, 6};
    auto wire = encode_frame(MessageType::token, payload);
    auto expect_error = [](const std::vector<uint8_t>& w, Errc code) {
        auto f = decode_frame(w);
        REQUIRE_FALSE(f.ok());
        CHECK(f.error().code == code);
        CHECK_FALSE(f.error().detail.empty());
    };
    SUBCASE("bad magic") {
        wire[0] = 'X';
        expect_error(wire, Errc::bad_magic);
    }
    SUBCASE("unsupported version") {
        static_assert(kProtocolVersion == 2);
        put_le(wire, 4, 1, 2);  // the version before: its stage_ready layout differs
        expect_error(wire, Errc::unsupported_version);
        put_le(wire, 4, 3, 2);
        expect_error(wire, Errc::unsupported_version);
    }
    SUBCASE("undefined flags") {
        put_le(wire, 8, 1, 4);
        expect_error(wire, Errc::unsupported_flags);
    }
    SUBCASE("unknown message type") {
        put_le(wire, 6, 0, 2);
        expect_error(wire, Errc::unknown_type);
        put_le(wire, 6, 19, 2);  // one past `done`
        expect_error(wire, Errc::unknown_type);
    }
    SUBCASE("checksum mismatch") {
        wire.back() ^= 1;
        expect_error(wire, Errc::checksum_mismatch);
    }
    SUBCASE("truncated inside the header") {
        wire.resize(10);
        expect_error(wire, Errc::truncated);
    }
    SUBCASE("truncated inside the payload") {
        wire.pop_back();
        expect_error(wire, Errc::truncated);
    }
    SUBCASE("empty input") { expect_error({}, Errc::truncated); }
}

TEST_CASE("transport: a length above the maximum is refused from the header alone, before any payload arrives") {
    auto wire = encode_frame(MessageType::tensor, {});
    SUBCASE("the largest u64") { put_le(wire, 12, ~uint64_t(0), 8); }
    SUBCASE("one byte over the default maximum") { put_le(wire, 12, kDefaultMaxPayload + 1, 8); }
    FrameDecoder dec;
    std::span<const uint8_t> header(wire.data(), kHeaderSize);
    auto r = dec.next(header);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::oversized_length);
}

TEST_CASE("transport: a configured maximum is enforced exactly: at the limit accepted, one over refused") {
    std::vector<uint8_t> payload(100, 0xAB);
    auto wire = encode_frame(MessageType::tensor, payload);
    CHECK(decode_frame(wire, 100).ok());
    auto over = decode_frame(wire, 99);
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().code == Errc::oversized_length);
}

TEST_CASE("transport: a decoder that failed keeps failing: the stream has lost its framing") {
    auto wire = encode_frame(MessageType::bye, {});
    wire[0] = 0;
    FrameDecoder dec;
    CHECK(decode_all(dec, wire).error().code == Errc::bad_magic);
    auto good = encode_frame(MessageType::bye, {});
    CHECK(decode_all(dec, good).error().code == Errc::bad_magic);
    CHECK(dec.finish().error().code == Errc::bad_magic);
}

TEST_CASE("transport: every error code has a distinct name") {
    std::set<std::string> names;
    for (int c = int(Errc::bad_magic); c <= int(kLastErrc); ++c) names.insert(to_string(Errc(c)));
    CHECK(names.size() == size_t(int(kLastErrc)));
    CHECK(names.count("unknown_error") == 0);
}
