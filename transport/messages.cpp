#include "transport/messages.hpp"

#include <algorithm>
#include <bit>
#include <iterator>
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

// --- stage-control helpers -------------------------------------------------------------

void put_f32(ByteWriter& w, float v) { w.u32(std::bit_cast<uint32_t>(v)); }
float get_f32(ByteReader& r) { return std::bit_cast<float>(r.u32()); }
void put_i32(ByteWriter& w, int32_t v) { w.u32(uint32_t(v)); }
int32_t get_i32(ByteReader& r) { return int32_t(r.u32()); }

std::string range_text(uint32_t begin, uint32_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// Stage strings: u16 length, then that many UTF-8 bytes (no terminator).
Status check_stage_text(std::string_view s, const char* what) {
    if (s.size() > kMaxStageText)
        return malformed(std::string(what) + " of " + std::to_string(s.size()) + " bytes exceeds " +
                         std::to_string(kMaxStageText));
    if (!is_valid_utf8(s)) return malformed(std::string(what) + " is not valid UTF-8");
    return Ok{};
}
void put_text(ByteWriter& w, std::string_view s) {
    w.u16(uint16_t(s.size()));  // checked <= kMaxStageText first
    w.bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}
Status get_text(ByteReader& r, std::string& out, const char* what) {
    const uint16_t n = r.u16();
    if (r.failed()) return malformed(std::string("stage_info payload ends before the length of its ") + what);
    if (n > kMaxStageText)
        return malformed(std::string(what) + " of " + std::to_string(n) + " bytes exceeds " +
                         std::to_string(kMaxStageText));
    auto b = r.bytes(n);
    if (r.failed()) return malformed(std::string("stage_info payload ends inside its ") + what);
    out.assign(b.begin(), b.end());
    return check_stage_text(out, what);
}

Status check_stage_info(const StageInfo& s) {
    if (s.fixed_layer_begin > s.fixed_layer_end)
        return malformed("stage_info fixed layer range " + range_text(s.fixed_layer_begin, s.fixed_layer_end) +
                         " is reversed");
    if (auto st = check_stage_text(s.backend, "stage_info backend"); !st) return st;
    return check_stage_text(s.host, "stage_info host");
}

Status check_stage_configure(const StageConfigure& c) {
    if (c.layer_begin >= c.layer_end)
        return malformed("stage_configure layer range " + range_text(c.layer_begin, c.layer_end) + " is empty or reversed");
    if (c.context_length == 0) return malformed("stage_configure context_length is 0");
    if (c.n_batch == 0) return malformed("stage_configure n_batch is 0");
    return Ok{};
}

// stage_ready's range and recurrent layers: a bounded range, the layers ascending inside it (so
// that the bitmap on the wire says exactly the same).
Status check_stage_ready(const StageReady& r) {
    if (r.layer_begin > r.layer_end)
        return malformed("stage_ready layer range " + range_text(r.layer_begin, r.layer_end) + " is reversed");
    if (r.layer_end - r.layer_begin > kMaxStageLayers)
        return malformed("stage_ready layer range " + range_text(r.layer_begin, r.layer_end) + " spans more than " +
                         std::to_string(kMaxStageLayers) + " layers");
    for (size_t i = 0; i < r.recurrent_layers.size(); ++i) {
        const uint32_t l = r.recurrent_layers[i];
        if (l < r.layer_begin || l >= r.layer_end)
            return malformed("stage_ready recurrent layer " + std::to_string(l) + " is outside its range " +
                             range_text(r.layer_begin, r.layer_end));
        if (i > 0 && l <= r.recurrent_layers[i - 1])
            return malformed("stage_ready recurrent layers are not strictly ascending at " + std::to_string(l));
    }
    return Ok{};
}

// Bytes of the recurrent-layer bitmap of a range of n layers.
size_t layer_bitmap_bytes(uint32_t n) { return (size_t(n) + 7) / 8; }

Status check_n_top(uint32_t n_top, const char* what) {
    if (n_top > kMaxTopLogprobs)
        return malformed(std::string(what) + " asks for " + std::to_string(n_top) + " top log-probabilities, at most " +
                         std::to_string(kMaxTopLogprobs));
    return Ok{};
}

Status check_token(int32_t token, const char* what) {
    if (token < 0) return malformed(std::string(what) + " token id " + std::to_string(token) + " is negative");
    return Ok{};
}

// Everything of a forward but its hidden elements, which check_tensor_shape checks.
Status check_forward_fields(uint32_t output, uint32_t n_top, size_t n_tokens) {
    if (output > uint32_t(ForwardOutput::none))
        return malformed("forward output " + std::to_string(output) + " is unknown");
    if (auto st = check_n_top(n_top, "forward"); !st) return st;
    if (n_top != 0 && output != uint32_t(ForwardOutput::sample))
        return malformed("forward asks for top log-probabilities without output = sample");
    if (n_tokens == 0 || n_tokens > kMaxForwardTokens)
        return malformed("forward carries " + std::to_string(n_tokens) + " tokens, expected 1 to " +
                         std::to_string(kMaxForwardTokens));
    return Ok{};
}

Status check_forward_hidden(DType dtype, std::span<const uint64_t> dims, uint64_t nbytes, size_t n_tokens) {
    if (dims.size() != 2)
        return malformed("forward hidden state has " + std::to_string(dims.size()) + " dimensions, expected 2");
    if (dims[0] != n_tokens)
        return malformed("forward hidden state has " + std::to_string(dims[0]) + " rows for " +
                         std::to_string(n_tokens) + " tokens");
    if (dims[1] == 0) return malformed("forward hidden state has 0 columns");
    return check_tensor_shape(dtype, dims, nbytes);
}

Status check_forward(const Forward& f) {
    if (auto st = check_forward_fields(uint32_t(f.output), f.n_top, f.tokens.size()); !st) return st;
    for (int32_t t : f.tokens)
        if (auto st = check_token(t, "forward"); !st) return st;
    return check_forward_hidden(f.hidden.dtype, f.hidden.dims, f.hidden.data.size(), f.tokens.size());
}

Status check_sampled(const Sampled& s) {
    if (auto st = check_token(s.token, "sampled"); !st) return st;
    if (s.top.size() > kMaxTopLogprobs)
        return malformed("sampled carries " + std::to_string(s.top.size()) + " top log-probabilities, at most " +
                         std::to_string(kMaxTopLogprobs));
    for (const auto& t : s.top)
        if (auto st = check_token(t.token, "sampled top"); !st) return st;
    return Ok{};
}

// dtype u16, ndim u16, dims u64 each: everything of a tensor before its elements.
void put_tensor_head(ByteWriter& w, const Tensor& t) {
    w.u16(uint16_t(t.dtype));
    w.u16(uint16_t(t.dims.size()));
    for (uint64_t d : t.dims) w.u64(d);
}
// Reads the same head; the elements are the rest of the payload. `what` names the message.
Status get_tensor_head(ByteReader& r, Tensor& t, const char* what) {
    const uint16_t dtype = r.u16();
    const uint16_t ndim = r.u16();
    if (r.failed()) return malformed(std::string(what) + " payload ends inside its tensor prefix");
    if (ndim == 0 || ndim > kMaxTensorDims)
        return malformed(std::string(what) + " tensor has " + std::to_string(ndim) + " dimensions, expected 1 to 4");
    for (uint16_t i = 0; i < ndim; ++i) t.dims.push_back(r.u64());
    if (r.failed()) return malformed(std::string(what) + " payload ends inside its tensor dimensions");
    t.dtype = DType(dtype);
    return Ok{};
}

constexpr size_t kStageInfoFixed = 8 + 4 * 4;
constexpr size_t kStageConfigureSize = 5 * 4;
constexpr size_t kStageReadyFixed = 5 * 8 + 2 * 4;  // then the bitmap
constexpr size_t kForwardFixed = 8 + 4 + 4 + 4;
constexpr size_t kSetSamplingSize = 4 * 4 + 2 * 4 + 8;

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
    // In the order of the Message variant's alternatives.
    static constexpr MessageType kTypes[] = {
        MessageType::hello,           MessageType::hello_ack,   MessageType::auth_challenge,
        MessageType::auth_response,   MessageType::tensor,      MessageType::token,
        MessageType::error,           MessageType::heartbeat,   MessageType::bye,
        MessageType::stage_query,     MessageType::stage_info,  MessageType::stage_configure,
        MessageType::stage_ready,     MessageType::forward,     MessageType::sampled,
        MessageType::set_sampling,    MessageType::sample,      MessageType::done};
    static_assert(std::size(kTypes) == std::variant_size_v<Message>);
    return kTypes[m.index()];
}

namespace {

// Encodes one message into `parts`: fields into head, tensor elements borrowed into tail.
template <typename T>
Status encode_parts(const T& msg, PayloadParts& parts) {
    ByteWriter w(parts.head);
    Status st = Ok{};
    if constexpr (std::is_same_v<T, Hello> || std::is_same_v<T, HelloAck>) {
        if (msg.layer_begin > msg.layer_end) st = malformed("hello layer range is reversed");
        put_hello(w, msg);
    } else if constexpr (std::is_same_v<T, AuthChallenge>) {
        w.bytes(msg.nonce);
    } else if constexpr (std::is_same_v<T, AuthResponse>) {
        w.bytes(msg.mac);
    } else if constexpr (std::is_same_v<T, Tensor>) {
        st = check_tensor_shape(msg.dtype, msg.dims, msg.data.size());
        if (!st) return st;
        put_tensor_head(w, msg);
        parts.tail = msg.data;
    } else if constexpr (std::is_same_v<T, TokenId>) {
        w.u32(msg.id);
    } else if constexpr (std::is_same_v<T, ErrorMessage>) {
        st = check_error_text(msg.message);
        w.u32(msg.code);
        w.bytes({reinterpret_cast<const uint8_t*>(msg.message.data()), msg.message.size()});
    } else if constexpr (std::is_same_v<T, StageInfo>) {
        st = check_stage_info(msg);
        if (!st) return st;
        w.u64(msg.available_memory);
        w.u32(msg.fixed_layer_begin);
        w.u32(msg.fixed_layer_end);
        w.u32(msg.n_layers);
        w.u32(msg.n_threads);
        put_text(w, msg.backend);
        put_text(w, msg.host);
    } else if constexpr (std::is_same_v<T, StageConfigure>) {
        st = check_stage_configure(msg);
        w.u32(msg.layer_begin);
        w.u32(msg.layer_end);
        w.u32(msg.kv_type);
        w.u32(msg.context_length);
        w.u32(msg.n_batch);
    } else if constexpr (std::is_same_v<T, StageReady>) {
        st = check_stage_ready(msg);
        if (!st) return st;
        for (uint64_t v : {msg.weight_bytes, msg.kv_bytes, msg.scratch_bytes, msg.total_bytes, msg.budget_bytes})
            w.u64(v);
        w.u32(msg.layer_begin);
        w.u32(msg.layer_end);
        // Bit b of byte i (least significant first): layer layer_begin + 8 i + b is recurrent.
        std::vector<uint8_t> bitmap(layer_bitmap_bytes(msg.layer_end - msg.layer_begin), 0);
        for (uint32_t l : msg.recurrent_layers) {
            const uint32_t at = l - msg.layer_begin;
            bitmap[at / 8] = uint8_t(bitmap[at / 8] | (1u << (at % 8)));
        }
        w.bytes(bitmap);
    } else if constexpr (std::is_same_v<T, Forward>) {
        st = check_forward(msg);
        if (!st) return st;
        w.u64(msg.position);
        w.u32(uint32_t(msg.output));
        w.u32(msg.n_top);
        w.u32(uint32_t(msg.tokens.size()));
        for (int32_t t : msg.tokens) put_i32(w, t);
        put_tensor_head(w, msg.hidden);
        parts.tail = msg.hidden.data;
    } else if constexpr (std::is_same_v<T, Sampled>) {
        st = check_sampled(msg);
        if (!st) return st;
        put_i32(w, msg.token);
        w.u32(uint32_t(msg.top.size()));
        for (const auto& t : msg.top) {
            put_i32(w, t.token);
            put_f32(w, t.logprob);
        }
    } else if constexpr (std::is_same_v<T, SetSampling>) {
        for (float v : {msg.temperature, msg.top_p, msg.min_p, msg.repeat_penalty}) put_f32(w, v);
        put_i32(w, msg.top_k);
        put_i32(w, msg.repeat_last_n);
        w.u64(msg.seed);
    } else if constexpr (std::is_same_v<T, SampleRequest>) {
        st = check_n_top(msg.n_top, "sample");
        w.u32(msg.n_top);
    }
    // heartbeat, bye, stage_query and done carry nothing
    return st;
}

template <typename T>
Result<PayloadParts> parts_of(const T& msg, MessageType type) {
    PayloadParts parts{type, {}, {}};
    if (auto st = encode_parts(msg, parts); !st) return st.error();
    return parts;
}

}  // namespace

Result<PayloadParts> to_payload_parts(const Message& m) {
    return std::visit([&](const auto& msg) { return parts_of(msg, message_type(m)); }, m);
}
Result<PayloadParts> to_payload_parts(const Tensor& t) { return parts_of(t, MessageType::tensor); }
Result<PayloadParts> to_payload_parts(const Forward& f) { return parts_of(f, MessageType::forward); }

Result<Frame> to_frame(const Message& m) {
    auto parts = to_payload_parts(m);
    if (!parts) return parts.error();
    Frame f{parts.value().type, std::move(parts.value().head)};
    f.payload.insert(f.payload.end(), parts.value().tail.begin(), parts.value().tail.end());
    return f;
}

namespace {

Result<Message> get_tensor(std::span<const uint8_t> p) {
    ByteReader r(p);
    Tensor t;
    if (auto st = get_tensor_head(r, t, "tensor"); !st) return st.error();
    if (auto st = check_tensor_shape(t.dtype, t.dims, r.remaining()); !st) return st.error();
    auto data = r.bytes(r.remaining());
    t.data.assign(data.begin(), data.end());
    return Message{std::move(t)};
}

Result<Message> get_error(std::span<const uint8_t> p) {
    ByteReader r(p);
    ErrorMessage e;
    e.code = r.u32();
    if (r.failed()) return malformed("error payload shorter than its 4-byte code");
    auto text = r.bytes(r.remaining());
    e.message.assign(text.begin(), text.end());
    if (auto st = check_error_text(e.message); !st) return st.error();
    return Message{std::move(e)};
}

Result<Message> get_stage_info(std::span<const uint8_t> p) {
    if (p.size() < kStageInfoFixed + 2 * 2)
        return malformed("stage_info payload is " + std::to_string(p.size()) + " bytes, at least " +
                         std::to_string(kStageInfoFixed + 2 * 2) + " expected");
    ByteReader r(p);
    StageInfo s;
    s.available_memory = r.u64();
    s.fixed_layer_begin = r.u32();
    s.fixed_layer_end = r.u32();
    s.n_layers = r.u32();
    s.n_threads = r.u32();
    if (auto st = get_text(r, s.backend, "backend"); !st) return st.error();
    if (auto st = get_text(r, s.host, "host"); !st) return st.error();
    if (r.remaining() != 0)
        return malformed("stage_info payload has " + std::to_string(r.remaining()) + " bytes after its host name");
    if (auto st = check_stage_info(s); !st) return st.error();
    return Message{std::move(s)};
}

Result<Message> get_stage_configure(std::span<const uint8_t> p) {
    if (auto st = expect_size(p, kStageConfigureSize, "stage_configure"); !st) return st.error();
    ByteReader r(p);
    StageConfigure c;
    c.layer_begin = r.u32();
    c.layer_end = r.u32();
    c.kv_type = r.u32();
    c.context_length = r.u32();
    c.n_batch = r.u32();
    if (auto st = check_stage_configure(c); !st) return st.error();
    return Message{c};
}

Result<Message> get_stage_ready(std::span<const uint8_t> p) {
    if (p.size() < kStageReadyFixed)
        return malformed("stage_ready payload is " + std::to_string(p.size()) + " bytes, at least " +
                         std::to_string(kStageReadyFixed) + " expected");
    ByteReader r(p);
    StageReady s;
    s.weight_bytes = r.u64();
    s.kv_bytes = r.u64();
    s.scratch_bytes = r.u64();
    s.total_bytes = r.u64();
    s.budget_bytes = r.u64();
    s.layer_begin = r.u32();
    s.layer_end = r.u32();
    // The range first: its size bounds the bitmap, checked against the payload before any use.
    if (auto st = check_stage_ready(s); !st) return st.error();
    const size_t n_bytes = layer_bitmap_bytes(s.layer_end - s.layer_begin);
    if (r.remaining() != n_bytes)
        return malformed("stage_ready carries " + std::to_string(r.remaining()) + " bitmap bytes for layers " +
                         range_text(s.layer_begin, s.layer_end) + ", expected " + std::to_string(n_bytes));
    const auto bitmap = r.bytes(n_bytes);
    const uint32_t n = s.layer_end - s.layer_begin;
    for (uint32_t at = 0; at < n; ++at)
        if (bitmap[at / 8] & (1u << (at % 8))) s.recurrent_layers.push_back(s.layer_begin + at);
    // Bits past the range are zero: one layout per message.
    if (n % 8 != 0 && (bitmap[n / 8] >> (n % 8)) != 0)
        return malformed("stage_ready bitmap has bits set past layer " + std::to_string(s.layer_end - 1));
    return Message{std::move(s)};
}

Result<Message> get_forward(std::span<const uint8_t> p) {
    ByteReader r(p);
    Forward f;
    f.position = r.u64();
    const uint32_t output = r.u32();
    f.n_top = r.u32();
    const uint32_t n_tokens = r.u32();
    if (r.failed())
        return malformed("forward payload is shorter than its " + std::to_string(kForwardFixed) + "-byte prefix");
    // Counts first: nothing is allocated for a token count the payload could not hold.
    if (auto st = check_forward_fields(output, f.n_top, n_tokens); !st) return st.error();
    f.output = ForwardOutput(output);
    if (r.remaining() / 4 < n_tokens)
        return malformed("forward payload ends inside its " + std::to_string(n_tokens) + " token ids");
    f.tokens.resize(n_tokens);
    for (auto& t : f.tokens) {
        t = get_i32(r);
        if (auto st = check_token(t, "forward"); !st) return st.error();
    }
    if (auto st = get_tensor_head(r, f.hidden, "forward"); !st) return st.error();
    if (auto st = check_forward_hidden(f.hidden.dtype, f.hidden.dims, r.remaining(), n_tokens); !st)
        return st.error();
    auto data = r.bytes(r.remaining());
    f.hidden.data.assign(data.begin(), data.end());
    return Message{std::move(f)};
}

Result<Message> get_sampled(std::span<const uint8_t> p) {
    ByteReader r(p);
    Sampled s;
    s.token = get_i32(r);
    const uint32_t n_top = r.u32();
    if (r.failed()) return malformed("sampled payload is shorter than its 8-byte prefix");
    if (n_top > kMaxTopLogprobs)
        return malformed("sampled carries " + std::to_string(n_top) + " top log-probabilities, at most " +
                         std::to_string(kMaxTopLogprobs));
    if (r.remaining() != size_t(n_top) * 8)
        return malformed("sampled payload has " + std::to_string(r.remaining()) + " bytes for " +
                         std::to_string(n_top) + " top log-probabilities of 8 bytes");
    s.top.resize(n_top);
    for (auto& t : s.top) {
        t.token = get_i32(r);
        t.logprob = get_f32(r);
    }
    if (auto st = check_sampled(s); !st) return st.error();
    return Message{std::move(s)};
}

Result<Message> get_set_sampling(std::span<const uint8_t> p) {
    if (auto st = expect_size(p, kSetSamplingSize, "set_sampling"); !st) return st.error();
    ByteReader r(p);
    SetSampling s;
    s.temperature = get_f32(r);
    s.top_p = get_f32(r);
    s.min_p = get_f32(r);
    s.repeat_penalty = get_f32(r);
    s.top_k = get_i32(r);
    s.repeat_last_n = get_i32(r);
    s.seed = r.u64();
    return Message{s};  // values are the library's to judge
}

Result<Message> get_sample(std::span<const uint8_t> p) {
    if (auto st = expect_size(p, 4, "sample"); !st) return st.error();
    ByteReader r(p);
    SampleRequest s{r.u32()};
    if (auto st = check_n_top(s.n_top, "sample"); !st) return st.error();
    return Message{s};
}

template <typename T>
Result<Message> get_empty(std::span<const uint8_t> p, const char* name) {
    if (auto st = expect_size(p, 0, name); !st) return st.error();
    return Message{T{}};
}

}  // namespace

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
    case MessageType::tensor: return get_tensor(p);
    case MessageType::token: {
        if (auto st = expect_size(p, 4, "token"); !st) return st.error();
        ByteReader r(p);
        return Message{TokenId{r.u32()}};
    }
    case MessageType::error: return get_error(p);
    case MessageType::heartbeat: return get_empty<Heartbeat>(p, "heartbeat");
    case MessageType::bye: return get_empty<Bye>(p, "bye");
    case MessageType::stage_query: return get_empty<StageQuery>(p, "stage_query");
    case MessageType::stage_info: return get_stage_info(p);
    case MessageType::stage_configure: return get_stage_configure(p);
    case MessageType::stage_ready: return get_stage_ready(p);
    case MessageType::forward: return get_forward(p);
    case MessageType::sampled: return get_sampled(p);
    case MessageType::set_sampling: return get_set_sampling(p);
    case MessageType::sample: return get_sample(p);
    case MessageType::done: return get_empty<Done>(p, "done");
    }
    return make_error(Errc::unknown_type, "message type " + std::to_string(unsigned(f.type)));
}

}  // namespace strata::transport
