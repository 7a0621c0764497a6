#include "transport/frame.hpp"

#include <algorithm>
#include <string>

#include "transport/bytes.hpp"
#include "transport/crc32c.hpp"

namespace strata::transport {

bool is_known_type(uint16_t type) {
    return type >= uint16_t(MessageType::hello) && type <= uint16_t(MessageType::done);
}

std::array<uint8_t, kHeaderSize> encode_header(MessageType type, uint64_t length, uint32_t crc) {
    std::array<uint8_t, kHeaderSize> out{};
    auto put = [&out](size_t at, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; ++i) out[at + i] = uint8_t(v >> (8 * i));
    };
    std::copy(kMagic.begin(), kMagic.end(), out.begin());
    put(4, kProtocolVersion, 2);
    put(6, uint16_t(type), 2);
    put(8, 0, 4);  // flags: none defined
    put(12, length, 8);
    put(20, crc, 4);
    return out;
}

std::vector<uint8_t> encode_frame(MessageType type, std::span<const uint8_t> payload) {
    const auto header = encode_header(type, payload.size(), crc32c(payload));
    std::vector<uint8_t> out(kHeaderSize + payload.size());
    std::copy(header.begin(), header.end(), out.begin());
    std::copy(payload.begin(), payload.end(), out.begin() + kHeaderSize);
    return out;
}

Error FrameDecoder::fail(Error e) {
    failed_ = e;
    return e;
}

Status FrameDecoder::check_header() {
    ByteReader r(header_);
    auto magic = r.bytes(4);
    const uint16_t version = r.u16();
    const uint16_t type = r.u16();
    const uint32_t flags = r.u32();
    const uint64_t length = r.u64();
    const uint32_t crc = r.u32();
    if (!std::equal(magic.begin(), magic.end(), kMagic.begin())) {
        // A TLS record (handshake, alert, data) starts with content type 20..23, then 3, x.
        const bool tls = magic[0] >= 0x14 && magic[0] <= 0x17 && magic[1] == 0x03 && magic[2] <= 0x04;
        return make_error(Errc::bad_magic, tls ? "frame does not start with \"STRF\": the peer speaks TLS (configure "
                                                 "TLS on this side too)"
                                               : "frame does not start with \"STRF\"");
    }
    if (version != kProtocolVersion)
        return make_error(Errc::unsupported_version, "peer speaks protocol version " + std::to_string(version) +
                                                         ", this build speaks " + std::to_string(kProtocolVersion));
    if (flags != 0) return make_error(Errc::unsupported_flags, "flags " + std::to_string(flags) + " are not defined");
    if (!is_known_type(type)) return make_error(Errc::unknown_type, "message type " + std::to_string(type));
    if (length > max_payload_)
        return make_error(Errc::oversized_length, "payload of " + std::to_string(length) +
                                                      " bytes exceeds the maximum of " + std::to_string(max_payload_));
    type_ = MessageType(type);
    length_ = length;
    crc_ = crc;
    return Ok{};
}

Result<std::optional<Frame>> FrameDecoder::next(std::span<const uint8_t>& input) {
    if (failed_) return *failed_;
    if (header_have_ < kHeaderSize) {
        const size_t n = std::min(input.size(), kHeaderSize - header_have_);
        std::copy_n(input.begin(), n, header_.begin() + header_have_);  // memcpy would reject an empty span's null
        header_have_ += n;
        input = input.subspan(n);
        if (header_have_ < kHeaderSize) return std::optional<Frame>{};
        if (auto st = check_header(); !st) return fail(st.error());
        payload_.clear();
        payload_.reserve(size_t(length_));  // bounded by max_payload_, checked above
    }
    const size_t n = size_t(std::min<uint64_t>(input.size(), length_ - payload_.size()));
    payload_.insert(payload_.end(), input.begin(), input.begin() + n);
    input = input.subspan(n);
    if (payload_.size() < length_) return std::optional<Frame>{};

    header_have_ = 0;
    if (crc32c(payload_) != crc_) return fail(make_error(Errc::checksum_mismatch, "payload CRC32C does not match the header"));
    return std::optional<Frame>{Frame{type_, std::move(payload_)}};
}

Status FrameDecoder::finish() const {
    if (failed_) return *failed_;
    if (header_have_ > 0)
        return make_error(Errc::truncated, header_have_ < kHeaderSize ? "stream ended inside a frame header"
                                                                      : "stream ended inside a frame payload");
    return Ok{};
}

Result<Frame> decode_frame(std::span<const uint8_t> bytes, uint64_t max_payload, size_t* consumed) {
    FrameDecoder dec(max_payload);
    auto rest = bytes;
    auto r = dec.next(rest);
    if (!r) return r.error();
    if (!r.value()) {
        auto st = dec.finish();
        return st ? make_error(Errc::truncated, "no bytes") : st.error();
    }
    if (consumed) *consumed = bytes.size() - rest.size();
    return std::move(*r.value());
}

}  // namespace strata::transport
