// Typed messages: checked payload layouts for hello, auth, tensor, token, error, heartbeat, bye.
#include <doctest/doctest.h>

#include <random>

#include "test_support.hpp"
#include "transport/bytes.hpp"
#include "transport/messages.hpp"
#include "transport_test_util.hpp"

using namespace strata::transport;
using strata::transport::test::decode_error;
using strata::transport::test::round_trip;

namespace {

template <size_t N>
std::array<uint8_t, N> random_array(std::mt19937_64& rng) {
    std::array<uint8_t, N> a{};
    for (auto& b : a) b = uint8_t(rng());
    return a;
}

}  // namespace

TEST_CASE("transport: every message type with random fields survives a round trip through the wire") {
    const uint64_t seed = strata::test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);

    Hello h;
    h.model_id = random_array<32>(rng);
    h.nonce = random_array<32>(rng);
    h.layer_begin = uint32_t(rng() % 1000);
    h.layer_end = h.layer_begin + uint32_t(rng() % 1000);
    h.kv_type = uint32_t(rng());
    h.context_length = uint32_t(rng());
    CHECK(std::get<Hello>(round_trip(h)) == h);
    HelloAck ack{h};
    ack.nonce = random_array<32>(rng);
    CHECK(std::get<HelloAck>(round_trip(ack)) == ack);

    AuthChallenge c{random_array<32>(rng)};
    CHECK(std::get<AuthChallenge>(round_trip(c)) == c);
    AuthResponse a{random_array<32>(rng)};
    CHECK(std::get<AuthResponse>(round_trip(a)) == a);

    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
        for (size_t ndim = 1; ndim <= kMaxTensorDims; ++ndim) {
            Tensor t;
            t.dtype = dt;
            uint64_t n = 1;
            for (size_t i = 0; i < ndim; ++i) {
                t.dims.push_back(1 + rng() % 7);
                n *= t.dims.back();
            }
            t.data.resize(n * dtype_size(dt));
            for (auto& b : t.data) b = uint8_t(rng());
            CAPTURE(ndim);
            CHECK(std::get<Tensor>(round_trip(t)) == t);
        }
    }

    TokenId tok{uint32_t(rng())};
    CHECK(std::get<TokenId>(round_trip(tok)) == tok);
    ErrorMessage e{uint32_t(rng()), "model identity differs: 0xab… ≠ 0xcd…"};
    CHECK(std::get<ErrorMessage>(round_trip(e)) == e);
    CHECK(std::holds_alternative<Heartbeat>(round_trip(Heartbeat{})));
    CHECK(std::holds_alternative<Bye>(round_trip(Bye{})));
}

TEST_CASE("transport: a tensor whose dimensions do not match its bytes is refused on both sides") {
    Tensor t{DType::f16, {2, 3}, std::vector<uint8_t>(11)};
    auto f = to_frame(t);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().code == Errc::malformed_payload);

    std::vector<uint8_t> p;
    ByteWriter w(p);
    w.u16(uint16_t(DType::f16));
    w.u16(2);
    w.u64(2);
    w.u64(3);
    p.resize(p.size() + 11);
    CHECK(decode_error(MessageType::tensor, p) == Errc::malformed_payload);
    p.push_back(0);  // now 12 bytes = 2 * 3 * 2
    CHECK(from_frame(Frame{MessageType::tensor, p}).ok());
}

TEST_CASE("transport: tensor headers with overflowing dimensions, bad rank or unknown dtype are malformed") {
    auto tensor_payload = [](uint16_t dtype, uint16_t ndim, std::vector<uint64_t> dims) {
        std::vector<uint8_t> p;
        ByteWriter w(p);
        w.u16(dtype);
        w.u16(ndim);
        for (uint64_t d : dims) w.u64(d);
        return p;
    };
    SUBCASE("dims product overflows 64 bits") {
        CHECK(decode_error(MessageType::tensor, tensor_payload(0, 2, {1ull << 40, 1ull << 40})) ==
              Errc::malformed_payload);
    }
    SUBCASE("dims times element size overflows") {
        CHECK(decode_error(MessageType::tensor, tensor_payload(0, 1, {1ull << 63})) == Errc::malformed_payload);
    }
    SUBCASE("zero dimensions") { CHECK(decode_error(MessageType::tensor, tensor_payload(0, 0, {})) == Errc::malformed_payload); }
    SUBCASE("five dimensions") {
        CHECK(decode_error(MessageType::tensor, tensor_payload(0, 5, {1, 1, 1, 1, 1})) == Errc::malformed_payload);
    }
    SUBCASE("unknown dtype") { CHECK(decode_error(MessageType::tensor, tensor_payload(7, 1, {0})) == Errc::malformed_payload); }
    SUBCASE("payload ends inside the dims") {
        auto p = tensor_payload(0, 3, {1, 1, 1});
        p.resize(p.size() - 1);
        CHECK(decode_error(MessageType::tensor, p) == Errc::malformed_payload);
    }
    SUBCASE("payload shorter than the prefix") { CHECK(decode_error(MessageType::tensor, {1}) == Errc::malformed_payload); }
}

TEST_CASE("transport: fixed-size messages of the wrong size are malformed") {
    CHECK(decode_error(MessageType::hello, std::vector<uint8_t>(83)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::hello_ack, std::vector<uint8_t>(85)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::auth_challenge, std::vector<uint8_t>(31)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::auth_response, std::vector<uint8_t>(33)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::token, std::vector<uint8_t>(3)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::heartbeat, std::vector<uint8_t>(1)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::bye, std::vector<uint8_t>(1)) == Errc::malformed_payload);
    CHECK(decode_error(MessageType::error, std::vector<uint8_t>(3)) == Errc::malformed_payload);
}

TEST_CASE("transport: a hello with a reversed layer range or a nonzero reserved field is malformed") {
    Hello h;
    h.layer_begin = 5;
    h.layer_end = 4;
    CHECK_FALSE(to_frame(h).ok());
    h.layer_end = 5;
    auto f = to_frame(h);
    REQUIRE(f.ok());
    auto reversed = f.value();
    reversed.payload[36] = 6;  // layer_begin, low byte: now 6 > 5
    CHECK(decode_error(MessageType::hello, reversed.payload) == Errc::malformed_payload);
    auto reserved = f.value();
    reserved.payload[2] = 1;
    CHECK(decode_error(MessageType::hello, reserved.payload) == Errc::malformed_payload);
}

TEST_CASE("transport: error messages must be UTF-8 and at most 4096 bytes") {
    CHECK(is_valid_utf8("plain ascii"));
    CHECK(is_valid_utf8("\xE2\x89\xA0 \xF0\x9F\x98\x80"));
    CHECK_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
    CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
    CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
    CHECK_FALSE(is_valid_utf8("\xE2\x89"));          // cut short
    CHECK_FALSE(is_valid_utf8("\x80"));

    CHECK_FALSE(to_frame(ErrorMessage{1, "\xFF"}).ok());
    CHECK_FALSE(to_frame(ErrorMessage{1, std::string(kMaxErrorMessage + 1, 'x')}).ok());
    CHECK(to_frame(ErrorMessage{1, std::string(kMaxErrorMessage, 'x')}).ok());
    CHECK(decode_error(MessageType::error, {1, 0, 0, 0, 0xFF}) == Errc::malformed_payload);
    std::vector<uint8_t> longer(4 + kMaxErrorMessage + 1, 'x');
    CHECK(decode_error(MessageType::error, longer) == Errc::malformed_payload);
}
