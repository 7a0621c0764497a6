// Shared helpers for the unit tests: where the ggml fixtures live, and a .npy reader.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace strata::test {

// $STRATA_FIXTURES overrides the directory configured at build time (../shared/fixtures).
inline std::filesystem::path fixtures_dir() {
    const char* env = std::getenv("STRATA_FIXTURES");
    std::filesystem::path dir = env && *env ? env : STRATA_FIXTURES_DIR;
    if (!std::filesystem::is_directory(dir / "iq1s") || !std::filesystem::is_directory(dir / "gguf"))
        throw std::runtime_error("ggml fixtures not found in '" + dir.string() +
                                 "': set STRATA_FIXTURES to the shared/fixtures directory");
    return dir;
}

// A file of the GGUF fixture set, e.g. gguf_fixture("broken/bad_magic.gguf").
inline std::filesystem::path gguf_fixture(const std::string& name) { return fixtures_dir() / "gguf" / name; }

// The IQ1_S fixture cases (every file kind exists for each; the probe case has no input/imatrix).
inline constexpr const char* kIq1sCases[] = {"c1_gauss_4x256", "c2_rowscale_16x1024", "c3_student_t3_8x2048",
                                             "c4_edge_3x512", "c5_probe_allgrid_9x2048"};

// One file of an IQ1_S fixture case, e.g. iq1s_fixture("c1_gauss_4x256", "dequant").
inline std::filesystem::path iq1s_fixture(const std::string& name, const char* kind) {
    return fixtures_dir() / "iq1s" / (name + "_" + kind + ".npy");
}

// A fresh, empty directory under the system temp directory for one test (per process and tag).
inline std::filesystem::path fresh_temp_dir(const std::string& tag) {
    auto dir = std::filesystem::temp_directory_path() / ("strata-test-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::vector<uint8_t> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

struct Npy {
    std::string descr;           // e.g. "<f4", "|u1", "<u8", "<f8"
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;   // raw little-endian element bytes, C order

    template <typename T>
    std::vector<T> as() const {
        if (data.size() % sizeof(T) != 0) throw std::runtime_error("npy: size not a multiple of element");
        std::vector<T> out(data.size() / sizeof(T));
        std::memcpy(out.data(), data.data(), data.size());
        return out;
    }
};

// Minimal reader for the fixtures' .npy v1/v2 files (C order only).
inline Npy read_npy(const std::filesystem::path& path) {
    auto raw = read_file(path);
    if (raw.size() < 10 || std::memcmp(raw.data(), "\x93NUMPY", 6) != 0)
        throw std::runtime_error(path.string() + ": not a .npy file");
    const int major = raw[6];
    size_t header_len, start;
    if (major == 1) {
        header_len = raw[8] | (size_t(raw[9]) << 8);
        start = 10;
    } else {
        header_len = raw[8] | (size_t(raw[9]) << 8) | (size_t(raw[10]) << 16) | (size_t(raw[11]) << 24);
        start = 12;
    }
    const std::string header(reinterpret_cast<const char*>(raw.data() + start), header_len);
    auto field = [&](const std::string& key) {
        auto p = header.find("'" + key + "':");
        if (p == std::string::npos) throw std::runtime_error(path.string() + ": npy header lacks " + key);
        return p + key.size() + 3;
    };
    Npy npy;
    {
        auto p = header.find('\'', field("descr"));
        auto q = header.find('\'', p + 1);
        npy.descr = header.substr(p + 1, q - p - 1);
    }
    if (header.find("True", field("fortran_order")) == field("fortran_order") + 1)
        throw std::runtime_error(path.string() + ": fortran order not supported");
    {
        auto p = header.find('(', field("shape"));
        auto q = header.find(')', p);
        std::string dims = header.substr(p + 1, q - p - 1);
        size_t pos = 0;
        while (pos < dims.size()) {
            while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
            if (pos >= dims.size()) break;
            size_t end = pos;
            while (end < dims.size() && dims[end] >= '0' && dims[end] <= '9') ++end;
            npy.shape.push_back(std::stoll(dims.substr(pos, end - pos)));
            pos = end;
        }
    }
    npy.data.assign(raw.begin() + static_cast<std::ptrdiff_t>(start + header_len), raw.end());
    return npy;
}

// Fresh random inputs per run, but reproducible: the seed is printed by CAPTURE in the tests
// and can be pinned with $STRATA_TEST_SEED.
inline uint64_t test_seed() {
    static const uint64_t seed = [] {
        const char* env = std::getenv("STRATA_TEST_SEED");
        if (env && *env) return uint64_t(std::strtoull(env, nullptr, 10));
        return uint64_t(std::random_device{}()) << 32 | uint64_t(std::random_device{}());
    }();
    return seed;
}

}  // namespace strata::test
