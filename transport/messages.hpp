// Typed message payloads and their checked conversion to and from frames.
// Layouts are documented byte by byte in PROTOCOL.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "transport/error.hpp"
#include "transport/frame.hpp"

namespace strata::transport {

using Digest = std::array<uint8_t, 32>;
using Nonce = std::array<uint8_t, 32>;

// hello (dialer -> acceptor) and hello_ack (the answer) share one frozen layout.
struct Hello {
    uint16_t protocol_version = kProtocolVersion;
    Digest model_id{};          // identity digest of the model, opaque here
    uint32_t layer_begin = 0;   // half-open range [layer_begin, layer_end)
    uint32_t layer_end = 0;
    uint32_t kv_type = 0;       // KV cache element type, opaque code agreed by the pipeline
    uint32_t context_length = 0;
    Nonce nonce{};              // fresh random bytes: the challenge the peer must answer
    bool operator==(const Hello&) const = default;
};
struct HelloAck : Hello {};

struct AuthChallenge {
    Nonce nonce{};
    bool operator==(const AuthChallenge&) const = default;
};
struct AuthResponse {
    Digest mac{};
    bool operator==(const AuthResponse&) const = default;
};

enum class DType : uint16_t { f32 = 0, f16 = 1, bf16 = 2 };
inline constexpr size_t kMaxTensorDims = 4;

struct Tensor {
    DType dtype = DType::f32;
    std::vector<uint64_t> dims;  // 1..4 dimensions
    std::vector<uint8_t> data;   // raw little-endian elements, product(dims) * dtype size bytes
    bool operator==(const Tensor&) const = default;
};

struct TokenId {
    uint32_t id = 0;
    bool operator==(const TokenId&) const = default;
};

inline constexpr size_t kMaxErrorMessage = 4096;
struct ErrorMessage {
    uint32_t code = 0;
    std::string message;  // UTF-8, at most kMaxErrorMessage bytes
    bool operator==(const ErrorMessage&) const = default;
};

struct Heartbeat {
    bool operator==(const Heartbeat&) const = default;
};
struct Bye {
    bool operator==(const Bye&) const = default;
};

using Message = std::variant<Hello, HelloAck, AuthChallenge, AuthResponse, Tensor, TokenId, ErrorMessage, Heartbeat, Bye>;

MessageType message_type(const Message& m);

// Checks what the wire would check (tensor shape/size, error message length and UTF-8), so
// that nothing this side sends can be refused by a correct peer.
Result<Frame> to_frame(const Message& m);

// Checks every field: exact payload sizes, dims product x dtype size == bytes without
// overflow, UTF-8, layer ranges. `malformed_payload` otherwise.
Result<Message> from_frame(const Frame& f);

size_t dtype_size(DType t);
bool is_valid_utf8(std::string_view s);

}  // namespace strata::transport
