// Read-only bytes of one GGUF file: a private read-only mmap of a path, or an owned copy of
// a memory buffer (parse_memory). Non-copyable; data() stays valid for the object's life.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::gguf::detail {

class MappedFile {
public:
    static MappedFile map(const std::string& path);   // throws Error not_found / io
    static MappedFile copy(std::span<const uint8_t> bytes);

    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&&) = delete;
    MappedFile(const MappedFile&) = delete;
    ~MappedFile();

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }

private:
    MappedFile() = default;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    void* map_ = nullptr;  // munmap on destruction when set
    std::vector<uint8_t> owned_;
};

}  // namespace strata::gguf::detail
