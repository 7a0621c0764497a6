// The GGUF reader against the ggml-written fixtures: every key, type, value and float bit
// pattern, every tensor's placement and sha256, single file, split shards and version 2.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gguf/digest.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata::gguf;
using nlohmann::json;

namespace {

std::filesystem::path gguf_dir() { return strata::test::fixtures_dir() / "gguf"; }

json manifest() {
    auto bytes = strata::test::read_file(gguf_dir() / "manifest.json");
    return json::parse(bytes.begin(), bytes.end());
}

const json& valid_entry(const json& m, const std::string& file) {
    for (const auto& v : m["valid_files"])
        if (v["file"] == file) return v;
    throw std::runtime_error("manifest has no valid file " + file);
}

std::string type_label(const Value& v) {
    if (!v.is_array()) return value_type_name(v.type());
    return std::string("array[") + value_type_name(v.element_type()) + "]";
}

// Compares one value with its manifest form (floats as {"value", "bits"}).
void check_value(const Value& v, const json& want) {
    switch (v.type()) {
        case ValueType::f32: case ValueType::f64:
            CHECK(*v.float_bits() == std::stoull(want["bits"].get<std::string>(), nullptr, 16));
            break;
        case ValueType::u64: CHECK(*v.as_uint() == want.get<uint64_t>()); break;
        case ValueType::boolean: CHECK(*v.as_bool() == want.get<bool>()); break;
        case ValueType::string: CHECK(*v.as_string() == want.get<std::string>()); break;
        case ValueType::array:
            REQUIRE(v.size() == want.size());
            for (uint64_t i = 0; i < v.size(); ++i) {
                CAPTURE(i);
                check_value(v.at(i), want[i]);
            }
            break;
        default: CHECK(*v.as_int() == want.get<int64_t>()); break;
    }
}

void check_metadata(const ModelFile& model, const json& kvs) {
    REQUIRE(model.metadata_count() == kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
        const auto& kv = kvs[i];
        CAPTURE(kv["key"].get<std::string>());
        CHECK(model.metadata_key(i) == kv["key"].get<std::string>());
        CHECK(std::string(model.metadata_key_cstr(i)) == kv["key"].get<std::string>());
        CHECK(model.find_key(kv["key"].get<std::string>()) == i);
        const Value v = model.metadata_value(i);
        CHECK(type_label(v) == kv["type"].get<std::string>());
        check_value(v, kv["value"]);
    }
}

void check_tensor(const TensorInfo& t, const json& want) {
    CAPTURE(t.name);
    CHECK(t.name == want["name"].get<std::string>());
    CHECK(t.type == want["type_id"].get<uint32_t>());
    CHECK(std::string(ggml_type_name(t.type)) == want["type"].get<std::string>());
    CHECK(t.n_dims == want["n_dims"].get<uint32_t>());
    for (size_t d = 0; d < 4; ++d)
        CHECK(t.ne[d] == (d < want["ne"].size() ? want["ne"][d].get<int64_t>() : 1));
    CHECK(t.offset == want["offset"].get<uint64_t>());
    CHECK(t.file_offset == want["abs_offset"].get<uint64_t>());
    CHECK(t.nbytes == want["nbytes"].get<uint64_t>());
    CHECK(sha256_bytes(t.data, t.nbytes) == want["sha256"].get<std::string>());
}

void check_single(const ModelFile& model, const json& entry, uint32_t version) {
    CHECK(model.version() == version);
    REQUIRE(model.shards().size() == 1);
    const Shard& s = model.shards()[0];
    CHECK(s.size == entry["file_size"].get<uint64_t>());
    CHECK(s.alignment == entry["alignment"].get<uint32_t>());
    CHECK(s.data_offset == entry["data_offset"].get<uint64_t>());
    CHECK(s.n_kv == entry["n_kv"].get<size_t>());
    CHECK(s.n_tensors == entry["n_tensors"].get<size_t>());
    check_metadata(model, entry["kv"]);
    REQUIRE(model.tensors().size() == entry["tensors"].size());
    for (size_t i = 0; i < model.tensors().size(); ++i) {
        check_tensor(model.tensors()[i], entry["tensors"][i]);
        CHECK(model.find_tensor(model.tensors()[i].name) == i);
    }
}

void check_split(const ModelFile& model, const json& m) {
    const auto& shards = m["split_convention"]["shards"];
    REQUIRE(model.shards().size() == shards.size());
    check_metadata(model, valid_entry(m, shards[0]["file"])["kv"]);
    size_t k = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
        const json& entry = valid_entry(m, shards[s]["file"]);
        CAPTURE(s);
        CHECK(model.shards()[s].alignment == entry["alignment"].get<uint32_t>());
        CHECK(model.shards()[s].data_offset == entry["data_offset"].get<uint64_t>());
        CHECK(model.shards()[s].n_kv == entry["n_kv"].get<size_t>());
        CHECK(std::filesystem::path(model.shards()[s].path).filename() == shards[s]["file"].get<std::string>());
        for (const auto& t : entry["tensors"]) {
            REQUIRE(k < model.tensors().size());
            CHECK(model.tensors()[k].shard == s);
            check_tensor(model.tensors()[k], t);
            ++k;
        }
    }
    CHECK(k == model.tensors().size());
}

}  // namespace

TEST_CASE("the single-file fixture reproduces every key, value and tensor of its manifest") {
    const json m = manifest();
    auto model = ModelFile::open({(gguf_dir() / "tiny-model.gguf").string()});
    check_single(*model, valid_entry(m, "tiny-model.gguf"), 3);
    CHECK_FALSE(model->find_key("no.such.key"));
    CHECK_FALSE(model->find_tensor("no.such.tensor"));
}

TEST_CASE("the version 2 variant reads exactly like the version 3 file") {
    const json m = manifest();
    auto model = ModelFile::open({(gguf_dir() / "variants" / "version_2.gguf").string()});
    check_single(*model, valid_entry(m, "tiny-model.gguf"), 2);
}

TEST_CASE("parse_memory reads the same model as open") {
    const json m = manifest();
    const auto bytes = strata::test::read_file(gguf_dir() / "tiny-model.gguf");
    auto model = ModelFile::parse_memory(bytes, "tiny-model.gguf");
    check_single(*model, valid_entry(m, "tiny-model.gguf"), 3);
}

TEST_CASE("a split model opens from its first shard and from its shard list in any order") {
    const json m = manifest();
    const auto dir = gguf_dir();
    SUBCASE("from the first shard") {
        auto model = ModelFile::open({(dir / "tiny-model-00001-of-00003.gguf").string()});
        check_split(*model, m);
    }
    SUBCASE("from an explicit list, shuffled") {
        auto model = ModelFile::open({(dir / "tiny-model-00003-of-00003.gguf").string(),
                                      (dir / "tiny-model-00001-of-00003.gguf").string(),
                                      (dir / "tiny-model-00002-of-00003.gguf").string()});
        check_split(*model, m);
    }
    SUBCASE("tensor bytes equal the single file's") {
        auto split = ModelFile::open({(dir / "tiny-model-00001-of-00003.gguf").string()});
        auto single = ModelFile::open({(dir / "tiny-model.gguf").string()});
        REQUIRE(split->tensors().size() == single->tensors().size());
        for (size_t i = 0; i < single->tensors().size(); ++i) {
            const auto &a = split->tensors()[i], &b = single->tensors()[i];
            CAPTURE(a.name);
            CHECK(a.name == b.name);
            REQUIRE(a.nbytes == b.nbytes);
            CHECK(std::memcmp(a.data, b.data, a.nbytes) == 0);
        }
    }
}

TEST_CASE("a split model is refused when a shard is missing, repeated or opened alone") {
    const auto dir = gguf_dir();
    const std::string s1 = (dir / "tiny-model-00001-of-00003.gguf").string();
    const std::string s2 = (dir / "tiny-model-00002-of-00003.gguf").string();
    const std::string s3 = (dir / "tiny-model-00003-of-00003.gguf").string();
    auto status_of = [](const std::vector<std::string>& paths) {
        try {
            ModelFile::open(paths);
        } catch (const strata::Error& e) {
            MESSAGE(std::string(e.what()));
            return e.status();
        }
        return strata::Status::ok;
    };
    CHECK(status_of({s1, s2}) == strata::Status::invalid_argument);
    CHECK(status_of({s1, s2, s2}) == strata::Status::invalid_argument);
    CHECK(status_of({s2}) == strata::Status::invalid_argument);
    CHECK(status_of({(dir / "tiny-model.gguf").string(), s2, s3}) == strata::Status::invalid_argument);
}

TEST_CASE("missing files are reported as not found") {
    try {
        ModelFile::open({"/nonexistent/model.gguf"});
        FAIL("opened a missing file");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::not_found);
        CHECK(std::string(e.what()).find("/nonexistent/model.gguf") != std::string::npos);
    }
}

TEST_CASE("values render as JSON with exact integers, round-trip floats and escaped strings") {
    auto model = ModelFile::open({(gguf_dir() / "tiny-model.gguf").string()});
    auto json_of = [&](const char* key) { return model->metadata_value(*model->find_key(key)).to_json(); };
    CHECK(json_of("fx.u64") == "18446744073709551615");
    CHECK(json_of("fx.i64") == "-9223372036854775808");
    CHECK(json_of("fx.f32") == "3.1415927");
    CHECK(json_of("fx.f32_neg_zero") == "-0");
    CHECK(json_of("fx.f64") == "-2.718281828459045");
    CHECK(json_of("fx.bool_false") == "false");
    CHECK(json_of("fx.arr_str") == "[\"alpha\",\"\",\"ünïcödé\",\"日本語\",\"tab\\there\\nnewline\",\"<|endoftext|>\"]");
    CHECK(json_of("fx.arr_empty_i32") == "[]");
    for (size_t i = 0; i < model->metadata_count(); ++i) {
        CAPTURE(model->metadata_key(i));
        CHECK(json::accept(model->metadata_value(i).to_json()));
    }
    CHECK(json_quote(std::string_view("a\xff\x01\"", 4)) == "\"a\\u00ff\\u0001\\\"\"");
}

TEST_CASE("checked accessors refuse values of another type or out of range") {
    auto model = ModelFile::open({(gguf_dir() / "tiny-model.gguf").string()});
    auto v = [&](const char* key) { return model->metadata_value(*model->find_key(key)); };
    CHECK_FALSE(v("fx.u64").as_int());
    CHECK(v("fx.u64").as_uint() == UINT64_MAX);
    CHECK_FALSE(v("fx.i8").as_uint());
    CHECK(v("fx.i8").as_int() == -128);
    CHECK_FALSE(v("fx.str").as_int());
    CHECK_FALSE(v("fx.u8").as_string());
    CHECK(v("fx.f32").as_double() == doctest::Approx(3.14159274));
    CHECK_FALSE(v("fx.f32").as_int());
    CHECK(v("fx.arr_i32").at(3).as_int() == 2147483647);
    CHECK_THROWS_AS(v("fx.arr_i32").at(5), strata::Error);
    CHECK(v("fx.arr_u8").array_bytes().size() == 5);
}
