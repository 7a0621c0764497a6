// Every spec-invalid fixture in gguf/broken/ is refused with its own message naming the file
// and the defect; the spec-valid tensor_offset_gap.gguf is accepted.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "gguf/model_file.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata::gguf;
using strata::Status;

namespace {

struct Expect {
    Status status;
    const char* substring;
};

// One distinctive substring per broken file (the file name is checked separately).
const std::map<std::string, Expect>& expectations() {
    static const std::map<std::string, Expect> m = {
        {"truncated_in_tensor_data.gguf", {Status::format, "tensor 'vec.iq1_s' (iq1_s, 50 bytes at data offset 4160) ends at byte 10034, past the end of the file (10009 bytes)"}},
        {"truncated_in_header.gguf", {Status::format, "key-value count 35 and tensor count 8 need at least 647 bytes but only 465 are left: truncated file"}},
        {"empty_file.gguf", {Status::format, "the file is empty (0 bytes)"}},
        {"bad_magic.gguf", {Status::format, "bad magic \"GGML\" (expected \"GGUF\")"}},
        {"version_1.gguf", {Status::unsupported, "GGUF version 1 is not supported"}},
        {"version_4.gguf", {Status::unsupported, "GGUF version 4 is newer than the newest supported version 3"}},
        {"unaligned_tensor_offset.gguf", {Status::format, "tensor 'norm.bias' offset 1800 is not a multiple of the alignment 64"}},
        {"tensor_data_past_eof.gguf", {Status::format, "tensor 'vec.iq1_s' (iq1_s, 3200 bytes at data offset 4160) ends at byte 13184, past the end of the file"}},
        {"absurd_tensor_count.gguf", {Status::format, "tensor count 1099511627776 is impossible"}},
        {"absurd_kv_count.gguf", {Status::format, "key-value count 1099511627776 is impossible"}},
        {"string_length_past_eof.gguf", {Status::format, "string length 20096 of the value of key 'general.name'"}},
        {"array_length_past_eof.gguf", {Status::format, "array 'fx.arr_i32' claims 1099511627776 elements of i32"}},
        {"unknown_tensor_type.gguf", {Status::unsupported, "tensor 'tok_embd.weight' has unknown ggml type id 1000"}},
        {"removed_tensor_type_4.gguf", {Status::unsupported, "tensor 'tok_embd.weight' has ggml type id 4 (q4_2), which was removed"}},
        {"invalid_kv_type.gguf", {Status::format, "key 'fx.u8' has invalid value type 13"}},
        {"alignment_not_power_of_two.gguf", {Status::format, "general.alignment 48 is not a power of two"}},
        {"duplicate_key.gguf", {Status::format, "duplicate key 'fx.u16'"}},
        {"n_dims_5.gguf", {Status::format, "tensor 'tok_embd.weight' has 5 dimensions (at most 4)"}},
        {"row_not_multiple_of_block.gguf", {Status::format, "tensor 'ffn_down.iq1_s' row length ne[0] = 500 is not a multiple of the iq1_s block size 256"}},
    };
    return m;
}

}  // namespace

TEST_CASE("every broken fixture is refused with its own message naming the file and the defect") {
    const auto dir = strata::test::fixtures_dir() / "gguf" / "broken";
    std::set<std::string> messages;
    size_t refused = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string file = entry.path().filename().string();
        if (file == "tensor_offset_gap.gguf") continue;  // spec-valid: see the next test
        CAPTURE(file);
        auto it = expectations().find(file);
        REQUIRE_MESSAGE(it != expectations().end(), "no expectation for " << file);
        for (int mode = 0; mode < 2; ++mode) {  // from the path, and from memory
            CAPTURE(mode);
            try {
                if (mode == 0)
                    ModelFile::open({entry.path().string()});
                else
                    ModelFile::parse_memory(strata::test::read_file(entry.path()), entry.path().string());
                FAIL("accepted a broken file");
            } catch (const strata::Error& e) {
                const std::string msg = e.what();
                CAPTURE(msg);
                CHECK(e.status() == it->second.status);
                CHECK(msg.find(entry.path().string()) == 0);
                CHECK(msg.find(it->second.substring) != std::string::npos);
                if (mode == 0) {
                    messages.insert(msg);
                    ++refused;
                }
            }
        }
    }
    CHECK(refused == expectations().size());
    CHECK(messages.size() == refused);  // all different
}

TEST_CASE("a gap between tensors is accepted, as the format allows") {
    const auto path = strata::test::fixtures_dir() / "gguf" / "broken" / "tensor_offset_gap.gguf";
    auto gap = ModelFile::open({path.string()});
    auto ref = ModelFile::open({(strata::test::fixtures_dir() / "gguf" / "tiny-model.gguf").string()});
    REQUIRE(gap->tensors().size() == ref->tensors().size());
    for (size_t i = 0; i < ref->tensors().size(); ++i) {
        const auto &a = gap->tensors()[i], &b = ref->tensors()[i];
        CAPTURE(a.name);
        CHECK(a.offset == b.offset + (i >= 2 ? 64 : 0));
        REQUIRE(a.nbytes == b.nbytes);
        CHECK(std::memcmp(a.data, b.data, a.nbytes) == 0);
    }
}

TEST_CASE("every truncation and single-byte corruption of the fixture is either read or refused cleanly") {
    const auto bytes = strata::test::read_file(strata::test::fixtures_dir() / "gguf" / "tiny-model.gguf");
    size_t accepted = 0;
    for (size_t n = 0; n < 10034; n += 7) {  // 10034: end of the last tensor
        CAPTURE(n);
        try {
            ModelFile::parse_memory({bytes.data(), n}, "prefix");
            ++accepted;
        } catch (const strata::Error& e) {
            CHECK((e.status() == Status::format || e.status() == Status::unsupported));
        }
    }
    CHECK(accepted == 0);
    std::vector<uint8_t> copy = bytes;
    for (size_t i = 0; i < 5824; i += 3) {  // header, metadata and tensor infos
        CAPTURE(i);
        copy[i] ^= 0xA5;
        try {
            ModelFile::parse_memory(copy, "flip");
        } catch (const strata::Error&) {
        }
        copy[i] = bytes[i];
    }
}

TEST_CASE("arrays nested deeper than the limit and bool values other than 0 and 1 are refused") {
    // Hand-made: header, one key "k" holding `depth` nested arrays, no tensors.
    auto file = [](uint32_t depth) {
        std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
        auto u64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); };
        auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); };
        u64(0);
        u64(1);
        u64(1);
        b.push_back('k');
        u32(9);
        for (uint32_t d = 0; d + 1 < depth; ++d) {
            u32(9);
            u64(1);
        }
        u32(7);  // innermost: bool array with one element 2
        u64(1);
        b.push_back(2);
        return b;
    };
    try {
        ModelFile::parse_memory(file(1000), "deep.gguf");
        FAIL("accepted");
    } catch (const strata::Error& e) {
        CHECK(std::string(e.what()).find("nests arrays deeper than 64 levels") != std::string::npos);
    }
    try {
        ModelFile::parse_memory(file(3), "bool.gguf");
        FAIL("accepted");
    } catch (const strata::Error& e) {
        CHECK(std::string(e.what()).find("has bool value 2 (must be 0 or 1)") != std::string::npos);
    }
}
