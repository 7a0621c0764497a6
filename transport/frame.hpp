// Frames: a fixed 24-byte little-endian header followed by a checksummed payload.
// The layout is documented byte by byte in PROTOCOL.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "transport/error.hpp"

namespace strata::transport {

inline constexpr std::array<uint8_t, 4> kMagic{'S', 'T', 'R', 'F'};
inline constexpr uint16_t kProtocolVersion = 2;  // PROTOCOL.md, "Versions"
inline constexpr size_t kHeaderSize = 24;
inline constexpr uint64_t kDefaultMaxPayload = 64ull << 20;  // 64 MiB

enum class MessageType : uint16_t {
    hello = 1,
    hello_ack = 2,
    auth_challenge = 3,
    auth_response = 4,
    tensor = 5,
    token = 6,
    error = 7,
    heartbeat = 8,
    bye = 9,
    stage_query = 10,
    stage_info = 11,
    stage_configure = 12,
    stage_ready = 13,
    forward = 14,
    sampled = 15,
    set_sampling = 16,
    sample = 17,
    done = 18,
};

bool is_known_type(uint16_t type);

struct Frame {
    MessageType type;
    std::vector<uint8_t> payload;
};

// The 24-byte header of a frame whose payload has `length` bytes and checksum `crc`.
std::array<uint8_t, kHeaderSize> encode_header(MessageType type, uint64_t length, uint32_t crc);

// Header followed by the payload, ready for the wire.
std::vector<uint8_t> encode_frame(MessageType type, std::span<const uint8_t> payload);
inline std::vector<uint8_t> encode_frame(const Frame& f) { return encode_frame(f.type, f.payload); }

// Incremental decoder: feed bytes as they arrive, in pieces of any size.
// The header is validated as soon as its 24 bytes are in (magic, version, flags, type, and
// the length against max_payload) so an oversized or bogus frame is refused before its
// payload buffer exists; the payload buffer is at most max_payload bytes.
// After an error the decoder stays failed: the byte stream has lost its framing.
class FrameDecoder {
public:
    explicit FrameDecoder(uint64_t max_payload = kDefaultMaxPayload) : max_payload_(max_payload) {}

    // Consumes bytes from the front of `input` up to the end of at most one frame.
    // A frame when one is complete; nullopt when `input` ran out first.
    Result<std::optional<Frame>> next(std::span<const uint8_t>& input);

    // At end of stream: `truncated` if a frame was begun but not finished.
    Status finish() const;

    bool mid_frame() const { return header_have_ > 0; }
    uint64_t max_payload() const { return max_payload_; }

private:
    Status check_header();
    Error fail(Error e);

    uint64_t max_payload_;
    std::array<uint8_t, kHeaderSize> header_{};
    size_t header_have_ = 0;
    MessageType type_{};
    uint64_t length_ = 0;
    uint32_t crc_ = 0;
    std::vector<uint8_t> payload_;
    std::optional<Error> failed_;
};

// One complete frame from the start of `bytes`; `truncated` if bytes end first.
// `consumed` (if given) receives the frame's size on the wire.
Result<Frame> decode_frame(std::span<const uint8_t> bytes, uint64_t max_payload = kDefaultMaxPayload,
                           size_t* consumed = nullptr);

}  // namespace strata::transport
