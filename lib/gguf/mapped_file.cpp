#include "gguf/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace strata::gguf::detail {
namespace {

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

MappedFile MappedFile::map(const std::string& path) {
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) {
        const int e = errno;
        fail(e == ENOENT ? Status::not_found : Status::io, path + ": cannot open: " + std::strerror(e));
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) fail(Status::io, path + ": cannot stat: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(Status::io, path + ": not a regular file");
    MappedFile m;
    m.size_ = uint64_t(st.st_size);
    if (m.size_ == 0) return m;  // mmap refuses empty files; the parser reports them
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (p == MAP_FAILED) fail(Status::io, path + ": cannot mmap: " + std::strerror(errno));
    m.map_ = p;
    m.data_ = static_cast<const uint8_t*>(p);
    return m;
}

MappedFile MappedFile::copy(std::span<const uint8_t> bytes) {
    MappedFile m;
    m.owned_.assign(bytes.begin(), bytes.end());
    m.data_ = m.owned_.data();
    m.size_ = m.owned_.size();
    return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), map_(other.map_), owned_(std::move(other.owned_)) {
    // A moved vector keeps its buffer, so data_ stays valid for owned copies too.
    other.map_ = nullptr;
    other.data_ = nullptr;
    other.size_ = 0;
}

MappedFile::~MappedFile() {
    if (map_) ::munmap(map_, size_);
}

}  // namespace strata::gguf::detail
