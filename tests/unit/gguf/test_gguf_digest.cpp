// Shard digests (streamed sha256 with progress and a path/size/mtime cache) and the model
// identity digest.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "gguf/digest.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata::gguf;

namespace {

std::filesystem::path fixture(const char* name) { return strata::test::gguf_fixture(name); }

std::filesystem::path temp_dir(const char* tag) { return strata::test::fresh_temp_dir(std::string("digest-") + tag); }

}  // namespace

TEST_CASE("sha256_file matches the manifest and reports progress up to the file size") {
    DigestOptions opt;
    opt.use_cache = false;
    uint64_t last_done = 0, last_total = 0;
    int calls = 0;
    opt.progress = [&](uint64_t done, uint64_t total) {
        CHECK(done >= last_done);
        last_done = done;
        last_total = total;
        ++calls;
    };
    CHECK(sha256_file(fixture("tiny-model.gguf").string(), opt) ==
          "2be37819b8e93dba77111b05597291f35d895cbe83634ab4b07680fc3af6ab1c");
    CHECK(calls >= 1);
    CHECK(last_done == 10048);
    CHECK(last_total == 10048);
}

TEST_CASE("the digest cache is used for an unchanged file and refreshed when the file changes") {
    const auto dir = temp_dir("cache");
    const auto file = dir / "data.bin";
    { std::ofstream(file) << "hello"; }
    DigestOptions opt;
    opt.cache_dir = (dir / "cache").string();
    int calls = 0;
    opt.progress = [&](uint64_t, uint64_t) { ++calls; };
    const std::string hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    CHECK(sha256_file(file.string(), opt) == hello);
    CHECK(calls > 0);
    CHECK(std::filesystem::exists(dir / "cache" / "sha256-cache.txt"));
    calls = 0;
    CHECK(sha256_file(file.string(), opt) == hello);
    CHECK(calls == 0);  // served from the cache

    { std::ofstream(file) << "hello!"; }  // new size and mtime
    CHECK(sha256_file(file.string(), opt) == sha256_bytes("hello!", 6));
    CHECK(calls > 0);

    // A poisoned cache entry for another mtime is not trusted.
    std::filesystem::last_write_time(file, std::filesystem::last_write_time(file) + std::chrono::seconds(5));
    calls = 0;
    CHECK(sha256_file(file.string(), opt) == sha256_bytes("hello!", 6));
    CHECK(calls > 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("an unwritable cache directory does not stop the digest") {
    DigestOptions opt;
    opt.cache_dir = "/proc/strata-no-such-dir/cache";
    CHECK(sha256_file(fixture("tiny-model.gguf").string(), opt) ==
          "2be37819b8e93dba77111b05597291f35d895cbe83634ab4b07680fc3af6ab1c");
    CHECK_THROWS_AS(sha256_file("/nonexistent/file", opt), strata::Error);
}

TEST_CASE("the model identity is stable and depends on metadata, tensor table and shard digests") {
    DigestOptions opt;
    opt.use_cache = false;
    auto model = ModelFile::open({fixture("tiny-model.gguf").string()});
    const std::vector<std::string> digests = {sha256_file(fixture("tiny-model.gguf").string(), opt)};
    const auto id = model_identity(*model, digests);
    CHECK(id.size() == 64);
    CHECK(model_identity(*ModelFile::open({fixture("tiny-model.gguf").string()}), digests) == id);
    CHECK(model_identity(*model, {std::string(64, '0')}) != id);
    CHECK_THROWS_AS(model_identity(*model, {}), strata::Error);
    CHECK_THROWS_AS(model_identity(*model, {"xyz"}), strata::Error);

    // Same shard digest but another metadata value: another identity.
    Writer w;
    w.set_string("general.name", "a");
    const int64_t ne[] = {1};
    const float one = 1;
    w.add_tensor("t", kF32, 1, ne, {reinterpret_cast<const uint8_t*>(&one), 4});
    const auto a = w.to_bytes();
    w.set_string("general.name", "b");
    const auto b = w.to_bytes();
    const auto ma = ModelFile::parse_memory(a, "a"), mb = ModelFile::parse_memory(b, "b");
    CHECK(model_identity(*ma, digests) != model_identity(*mb, digests));

    auto split = ModelFile::open({fixture("tiny-model-00001-of-00003.gguf").string()});
    std::vector<std::string> shard_digests;
    for (const auto& s : split->shards()) shard_digests.push_back(sha256_file(s.path, opt));
    CHECK(model_identity(*split, shard_digests).size() == 64);
}
