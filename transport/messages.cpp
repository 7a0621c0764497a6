#include "transport/messages.hpp"

#include <string>
#include <type_traits>

#include "transport/bytes.hpp"

namespace strata::transport {
namespace {

constexpr size_t kHelloSize = 2 + 2 + 32 + 4 * 4 + 32;

Error malformed(const std::string& what) { return make_error(Errc::malformed_payload, what); }

void put_hello(ByteWriter& w, const Hello& h) {
    w.u16(h.protocol_version);
    w.u16(0);  // reserved: keeps the fields after it 4-byte aligned
    w.bytes(h.model_id);
    w.u32(h.layer_begin);
    w.u32(h.layer_end);
    w.u32(h.kv_type);
    w.u32(h.context_length);
    w.bytes(h.nonce);
}

template <size_t N>
void get_array(ByteReader& r, std::array<uint8_t, N>& out) {
    auto b = r.bytes(N);
    if (b.size() == N) std::copy(b.begin(), b.end(), out.begin());
}

Result<Hello> get_hello(std::span<const uint8_t> p, const char* name) {
    if (p.size() != kHelloSize)
        return malformed(std::string(name) + " payload is " + std::to_string(p.size()) + " bytes, expected " +
                         std::to_string(kHelloSize));
    ByteReader r(p);
    Hello h;
    h.protocol_version = r.u16();
    const uint16_t reserved = r.u16();
    get_array(r, h.model_id);
    h.layer_begin = r.u32();
    h.layer_end = r.u32();
    h.kv_type = r.u32();
    h.context_length = r.u32();
    get_array(r, h.nonce);
    if (reserved != 0) return malformed(std::string(name) + " reserved field is not zero");
    if (h.layer_begin > h.layer_end)
        return malformed(std::string(name) + " layer range [" + std::to_string(h.layer_begin) + ", " +
                         std::to_string(h.layer_end) + ") is reversed");
    return h;
}

// product(dims) * element size, or nullopt on overflow.
std::optional<uint64_t> tensor_bytes(DType t, std::span<const uint64_t> dims) {
    uint64_t n = dtype_size(t);
    for (uint64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
    return n;
}

Status check_tensor_shape(DType dtype, std::span<const uint64_t> dims, uint64_t nbytes) {
    if (dtype_size(dtype) == 0) return malformed("tensor dtype " + std::to_string(unsigned(dtype)) + " is unknown");
    if (dims.empty() || dims.size() > kMaxTensorDims)
        return malformed("tensor has " + std::to_string(dims.size()) + " dimensions, expected 1 to 4");
    auto expect = tensor_bytes(dtype, dims);
    if (!expect) return malformed("tensor dimensions overflow 64 bits");
    if (*expect != nbytes)
        return malformed("tensor dimensions need " + std::to_string(*expect) + " bytes, payload carries " +
                         std::to_string(nbytes));
    return Ok{};
}

Status check_error_text(std::string_view s) {
    if (s.size() > kMaxErrorMessage)
        return malformed("error message of " + std::to_string(s.size()) + " bytes exceeds " +
                         std::to_string(kMaxErrorMessage));
    if (!is_valid_utf8(s)) return malformed("error message is not valid UTF-8");
    return Ok{};
}

Status expect_size(std::span<const uint8_t> p, size_t n, const char* name) {
    if (p.size() != n)
        return malformed(std::string(name) + " payload is " + std::to_string(p.size()) + " bytes, expected " +
                         std::to_string(n));
    return Ok{};
}

}  // namespace

size_t dtype_size(DType t) {
    switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    }
    return 0;
}

bool is_valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = uint8_t(s[i]);
        size_t len;
        uint32_t cp;
        if (c < 0x80) { ++i; continue; }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return false;
        if (s.size() - i < len) return false;
        for (size_t k = 1; k < len; ++k) {
            const auto cc = uint8_t(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

MessageType message_type(const Message& m) {
    static constexpr MessageType kTypes[] = {MessageType::hello,          MessageType::hello_ack,
                                             MessageType::auth_challenge, MessageType::auth_response,
                                             MessageType::tensor,         MessageType::token,
                                             MessageType::error,          MessageType::heartbeat,
                                             MessageType::bye};
    return kTypes[m.index()];
}

Result<Frame> to_frame(const Message& m) {
    Frame f{message_type(m), {}};
    ByteWriter w(f.payload);
    Status st = Ok{};
    std::visit(
        [&](const auto& msg) {
            using T = std::decay_t<decltype(msg)>;
            if constexpr (std::is_same_v<T, Hello> || std::is_same_v<T, HelloAck>) {
                if (msg.layer_begin > msg.layer_end) st = malformed("hello layer range is reversed");
                put_hello(w, msg);
            } else if constexpr (std::is_same_v<T, AuthChallenge>) {
                w.bytes(msg.nonce);
            } else if constexpr (std::is_same_v<T, AuthResponse>) {
                w.bytes(msg.mac);
            } else if constexpr (std::is_same_v<T, Tensor>) {
                st = check_tensor_shape(msg.dtype, msg.dims, msg.data.size());
                if (!st) return;
                w.u16(uint16_t(msg.dtype));
                w.u16(uint16_t(msg.dims.size()));
                for (uint64_t d : msg.dims) w.u64(d);
                w.bytes(msg.data);
            } else if constexpr (std::is_same_v<T, TokenId>) {
                w.u32(msg.id);
            } else if constexpr (std::is_same_v<T, ErrorMessage>) {
                st = check_error_text(msg.message);
                w.u32(msg.code);
                w.bytes({reinterpret_cast<const uint8_t*>(msg.message.data()), msg.message.size()});
            }
            // heartbeat and bye carry nothing
        },
        m);
    if (!st) return st.error();
    return f;
}

Result<Message> from_frame(const Frame& f) {
    const std::span<const uint8_t> p = f.payload;
    switch (f.type) {
    case MessageType::hello: {
        auto h = get_hello(p, "hello");
        if (!h) return h.error();
        return Message{h.value()};
    }
    case MessageType::hello_ack: {
        auto h = get_hello(p, "hello_ack");
        if (!h) return h.error();
        return Message{HelloAck{h.value()}};
    }
    case MessageType::auth_challenge: {
        if (auto st = expect_size(p, 32, "auth_challenge"); !st) return st.error();
        AuthChallenge c;
        std::copy(p.begin(), p.end(), c.nonce.begin());
        return Message{c};
    }
    case MessageType::auth_response: {
        if (auto st = expect_size(p, 32, "auth_response"); !st) return st.error();
        AuthResponse a;
        std::copy(p.begin(), p.end(), a.mac.begin());
        return Message{a};
    }
    case MessageType::tensor: {
        ByteReader r(p);
        Tensor t;
        const uint16_t dtype = r.u16();
        const uint16_t ndim = r.u16();
        if (r.failed()) return malformed("tensor payload shorter than its 4-byte prefix");
        if (ndim == 0 || ndim > kMaxTensorDims)
            return malformed("tensor has " + std::to_string(ndim) + " dimensions, expected 1 to 4");
        for (uint16_t i = 0; i < ndim; ++i) t.dims.push_back(r.u64());
        if (r.failed()) return malformed("tensor payload ends inside its dimensions");
        t.dtype = DType(dtype);
        if (auto st = check_tensor_shape(t.dtype, t.dims, r.remaining()); !st) return st.error();
        auto data = r.bytes(r.remaining());
        t.data.assign(data.begin(), data.end());
        return Message{std::move(t)};
    }
    case MessageType::token: {
        if (auto st = expect_size(p, 4, "token"); !st) return st.error();
        ByteReader r(p);
        return Message{TokenId{r.u32()}};
    }
    case MessageType::error: {
        ByteReader r(p);
        ErrorMessage e;
        e.code = r.u32();
        if (r.failed()) return malformed("error payload shorter than its 4-byte code");
        auto text = r.bytes(r.remaining());
        e.message.assign(text.begin(), text.end());
        if (auto st = check_error_text(e.message); !st) return st.error();
        return Message{std::move(e)};
    }
    case MessageType::heartbeat:
        if (auto st = expect_size(p, 0, "heartbeat"); !st) return st.error();
        return Message{Heartbeat{}};
    case MessageType::bye:
        if (auto st = expect_size(p, 0, "bye"); !st) return st.error();
        return Message{Bye{}};
    }
    return make_error(Errc::unknown_type, "message type " + std::to_string(unsigned(f.type)));
}

}  // namespace strata::transport
