// Little-endian field writer and bounds-checked reader for frame headers and payloads.
// Byte-by-byte shifts: correct on any host byte order and at any alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::transport {

class ByteWriter {
public:
    explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}
    void u8(uint8_t v) { out_.push_back(v); }
    void u16(uint16_t v) { le(v, 2); }
    void u32(uint32_t v) { le(v, 4); }
    void u64(uint64_t v) { le(v, 8); }
    void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }

private:
    void le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
    }
    std::vector<uint8_t>& out_;
};

// Every read checks the remaining length first; a short read sets failed() and yields zeros,
// so a decoder can read a whole fixed layout and check once at the end.
class ByteReader {
public:
    explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}
    uint8_t u8() { return uint8_t(le(1)); }
    uint16_t u16() { return uint16_t(le(2)); }
    uint32_t u32() { return uint32_t(le(4)); }
    uint64_t u64() { return le(8); }
    std::span<const uint8_t> bytes(size_t n) {
        if (failed_ || n > remaining()) {
            failed_ = true;
            return {};
        }
        auto s = in_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    size_t remaining() const { return in_.size() - pos_; }
    bool failed() const { return failed_; }

private:
    uint64_t le(size_t n) {
        auto b = bytes(n);
        uint64_t v = 0;
        for (size_t i = 0; i < b.size(); ++i) v |= uint64_t(b[i]) << (8 * i);
        return v;
    }
    std::span<const uint8_t> in_;
    size_t pos_ = 0;
    bool failed_ = false;
};

}  // namespace strata::transport
