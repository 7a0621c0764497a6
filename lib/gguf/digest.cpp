#include "gguf/digest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "gguf/model_file.hpp"
#include "util/error.hpp"

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;
constexpr size_t kChunk = size_t(8) << 20;
constexpr const char* kCacheFile = "sha256-cache.txt";

struct Md {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    Md() {
        if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
            fail(Status::internal, "sha256: EVP_DigestInit_ex failed");
    }
    ~Md() { EVP_MD_CTX_free(ctx); }
    void update(const void* p, size_t n) {
        if (EVP_DigestUpdate(ctx, p, n) != 1) fail(Status::internal, "sha256: EVP_DigestUpdate failed");
    }
    std::string hex() {
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (EVP_DigestFinal_ex(ctx, out, &len) != 1) fail(Status::internal, "sha256: EVP_DigestFinal_ex failed");
        static const char digits[] = "0123456789abcdef";
        std::string s;
        for (unsigned i = 0; i < len; ++i) {
            s += digits[out[i] >> 4];
            s += digits[out[i] & 15];
        }
        return s;
    }
};

struct FileKey {
    std::string path;  // absolute
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

FileKey stat_key(const std::string& abs, int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail(Status::io, abs + ": cannot stat: " + std::strerror(errno));
    return FileKey{abs, uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// Cache lines: "<sha256 hex> <size> <mtime ns> <absolute path>\n". Paths with a newline are
// never cached. Any read or write problem simply means "not cached".
std::string cache_lookup(const fs::path& file, const FileKey& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string hex;
        uint64_t size = 0;
        int64_t mtime = 0;
        if (!(ls >> hex >> size >> mtime)) continue;
        if (ls.get() != ' ') continue;
        std::string path;
        std::getline(ls, path);
        if (path == key.path && size == key.size && mtime == key.mtime_ns && hex.size() == 64) return hex;
    }
    return {};
}

void cache_store(const fs::path& dir, const FileKey& key, const std::string& hex) {
    if (key.path.find('\n') != std::string::npos) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return;
    const fs::path file = dir / kCacheFile;
    std::string kept;
    {
        std::ifstream in(file);
        std::string line;
        while (std::getline(in, line)) {
            // Drop older entries for the same path: one line per file.
            const size_t p = line.find(' ', line.find(' ', line.find(' ') + 1) + 1);
            if (p == std::string::npos || line.substr(p + 1) == key.path) continue;
            kept += line + "\n";
        }
    }
    kept += hex + " " + std::to_string(key.size) + " " + std::to_string(key.mtime_ns) + " " + key.path + "\n";
    const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << kept;
        if (!out.flush()) {
            fs::remove(tmp, ec);
            return;
        }
    }
    fs::rename(tmp, file, ec);
    if (ec) fs::remove(tmp, ec);
}

void put_u64(Md& md, uint64_t v) { md.update(&v, 8); }  // little-endian hosts only (value.cpp)
void put_u32(Md& md, uint32_t v) { md.update(&v, 4); }

}  // namespace

std::string default_cache_dir() {
    if (const char* d = std::getenv("STRATA_CACHE_DIR"); d && *d) return d;
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "strata").string();
    if (const char* d = std::getenv("HOME"); d && *d) return (fs::path(d) / ".cache" / "strata").string();
    return {};
}

std::string sha256_bytes(const void* data, size_t size) {
    Md md;
    md.update(data, size);
    return md.hex();
}

std::string sha256_file(const std::string& path, const DigestOptions& options) {
    std::error_code ec;
    fs::path abs = fs::absolute(path, ec);
    if (ec) abs = path;
    const std::string abs_path = abs.lexically_normal().string();

    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        fail(e == ENOENT ? Status::not_found : Status::io, path + ": cannot open: " + std::strerror(e));
    }
    std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
        ::close(*p);
        delete p;
    });
    const FileKey before = stat_key(abs_path, fd);
    const std::string dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
    const bool cache = options.use_cache && !dir.empty();
    if (cache)
        if (auto hit = cache_lookup(fs::path(dir) / kCacheFile, before); !hit.empty()) return hit;

    Md md;
    std::vector<unsigned char> buf(kChunk);
    uint64_t done = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(Status::io, path + ": read failed: " + std::strerror(errno));
        }
        if (n == 0) break;
        md.update(buf.data(), size_t(n));
        done += uint64_t(n);
        if (options.progress) options.progress(done, before.size);
    }
    if (options.progress && done == 0) options.progress(0, before.size);
    const std::string hex = md.hex();
    // Cache only if the file did not change while it was read.
    const FileKey after = stat_key(abs_path, fd);
    if (cache && done == before.size && after.size == before.size && after.mtime_ns == before.mtime_ns)
        cache_store(dir, before, hex);
    return hex;
}

std::string model_identity(const ModelFile& model, const std::vector<std::string>& shard_digests) {
    if (shard_digests.size() != model.shards().size())
        fail(Status::invalid_argument, "model_identity: " + std::to_string(shard_digests.size()) +
                                           " shard digests given for " + std::to_string(model.shards().size()) +
                                           " shards");
    for (const auto& d : shard_digests)
        if (d.size() != 64 || d.find_first_not_of("0123456789abcdef") != std::string::npos)
            fail(Status::invalid_argument, "model_identity: '" + d + "' is not a lower-case hex sha256");
    Md md;
    const char tag[] = "strata-model-identity-v1\n";
    md.update(tag, sizeof tag - 1);
    put_u64(md, model.metadata_count());
    for (size_t i = 0; i < model.metadata_count(); ++i) {
        const auto key = model.metadata_key(i);
        const Value v = model.metadata_value(i);
        put_u64(md, key.size());
        md.update(key.data(), key.size());
        put_u32(md, uint32_t(v.type()));
        const auto raw = v.raw();
        put_u64(md, raw.size());
        md.update(raw.data(), raw.size());
    }
    put_u64(md, model.tensors().size());
    for (const auto& t : model.tensors()) {
        put_u64(md, t.name.size());
        md.update(t.name.data(), t.name.size());
        put_u32(md, t.type);
        put_u32(md, t.n_dims);
        for (int64_t ne : t.ne) put_u64(md, uint64_t(ne));
    }
    put_u64(md, shard_digests.size());
    for (const auto& d : shard_digests) md.update(d.data(), d.size());
    return md.hex();
}

}  // namespace strata::gguf
