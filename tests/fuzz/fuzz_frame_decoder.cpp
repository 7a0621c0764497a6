// libFuzzer target: any byte stream fed to the frame decoder, in pieces of any size, yields
// frames or one specific error; it never crashes, reads out of bounds or allocates more than
// the maximum payload. Every frame is parsed as a message, and every message that parses must
// encode back to the very same payload (every layout is canonical), which decodes again to the
// same message. Bytes are compared rather than messages: a float field may carry a NaN.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/frame.hpp"
#include "transport/messages.hpp"

namespace {

constexpr uint64_t kMaxPayload = 1u << 20;  // small, so that -rss_limit_mb catches any overrun

void check_round_trip(const strata::transport::Frame& original, const strata::transport::Message& m) {
    using namespace strata::transport;
    auto f = to_frame(m);
    if (!f) __builtin_trap();  // whatever the decoder accepts, the encoder must accept
    if (f.value().type != original.type || f.value().payload != original.payload) __builtin_trap();
    auto parts = to_payload_parts(m);  // the zero-copy form must carry the same bytes
    if (!parts) __builtin_trap();
    std::vector<uint8_t> joined = parts.value().head;
    joined.insert(joined.end(), parts.value().tail.begin(), parts.value().tail.end());
    if (joined != original.payload) __builtin_trap();
    auto wire = encode_frame(f.value());
    auto back = decode_frame(wire, kDefaultMaxPayload);
    if (!back) __builtin_trap();
    auto again = from_frame(back.value());
    if (!again || again.value().index() != m.index()) __builtin_trap();
    auto again_frame = to_frame(again.value());
    if (!again_frame || again_frame.value().payload != original.payload) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace strata::transport;
    if (size == 0) return 0;
    // The first byte picks how the stream is cut into pieces, as a socket would deliver it.
    const size_t piece = size_t(data[0]) + 1;
    std::span<const uint8_t> stream(data + 1, size - 1);
    FrameDecoder dec(kMaxPayload);
    while (!stream.empty()) {
        auto chunk = stream.first(std::min(piece, stream.size()));
        stream = stream.subspan(chunk.size());
        while (!chunk.empty()) {
            auto r = dec.next(chunk);
            if (!r) return 0;
            if (!r.value()) break;
            if (r.value()->payload.size() > kMaxPayload) __builtin_trap();
            if (auto m = from_frame(*r.value())) check_round_trip(*r.value(), m.value());
        }
    }
    (void)dec.finish();
    return 0;
}
