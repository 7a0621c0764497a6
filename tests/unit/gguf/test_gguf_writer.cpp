// The GGUF writer: byte-identical re-write of the ggml fixture, round trips of every value
// type (nested arrays included), split output, validation and all-or-nothing writes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>

#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata::gguf;

namespace {

std::filesystem::path fixture(const char* name) { return strata::test::gguf_fixture(name); }

std::filesystem::path temp_dir(const char* tag) { return strata::test::fresh_temp_dir(std::string("gguf-") + tag); }

Writer copy_of(const ModelFile& model) {
    Writer w;
    for (size_t i = 0; i < model.metadata_count(); ++i) w.set_value(model.metadata_key(i), model.metadata_value(i));
    for (const auto& t : model.tensors())
        w.add_tensor(t.name, t.type, t.n_dims, t.ne, {t.data, t.nbytes});
    return w;
}

void check_same_model(const ModelFile& a, const ModelFile& b, bool skip_split_keys) {
    auto keys = [&](const ModelFile& m) {
        std::vector<std::pair<std::string, std::string>> out;
        for (size_t i = 0; i < m.metadata_count(); ++i) {
            const std::string k(m.metadata_key(i));
            if (skip_split_keys && k.rfind("split.", 0) == 0) continue;
            const auto raw = m.metadata_value(i).raw();
            out.emplace_back(k, std::to_string(int(m.metadata_value(i).type())) + ":" +
                                    std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
        }
        return out;
    };
    CHECK(keys(a) == keys(b));
    REQUIRE(a.tensors().size() == b.tensors().size());
    for (size_t i = 0; i < a.tensors().size(); ++i) {
        const auto &x = a.tensors()[i], &y = b.tensors()[i];
        CAPTURE(x.name);
        CHECK(x.name == y.name);
        CHECK(x.type == y.type);
        CHECK(x.n_dims == y.n_dims);
        CHECK(std::equal(x.ne, x.ne + 4, y.ne));
        REQUIRE(x.nbytes == y.nbytes);
        CHECK(std::memcmp(x.data, y.data, x.nbytes) == 0);
    }
}

}  // namespace

TEST_CASE("re-writing the ggml fixture through the writer reproduces it byte for byte") {
    auto model = ModelFile::open({fixture("tiny-model.gguf").string()});
    const auto bytes = copy_of(*model).to_bytes();
    const auto original = strata::test::read_file(fixture("tiny-model.gguf"));
    CHECK(bytes.size() == original.size());
    CHECK(bytes == original);
}

TEST_CASE("every value type, nested arrays included, survives a write and a read") {
    const auto dir = temp_dir("values");
    Writer w;
    w.set_u8("u8", 200);
    w.set_i8("i8", -100);
    w.set_u16("u16", 60000);
    w.set_i16("i16", -30000);
    w.set_u32("u32", 4000000000u);
    w.set_i32("i32", -2000000000);
    w.set_u64("u64", UINT64_MAX);
    w.set_i64("i64", INT64_MIN);
    w.set_f32("f32", -0.0f);
    w.set_f64("f64", 1e-300);
    w.set_bool("bool", true);
    const float non_finite[] = {NAN, INFINITY, -INFINITY, 1.5f};
    w.set_array("non_finite", ValueType::f32, non_finite, 4);
    w.set_string("str", std::string("a\0b", 3));
    const int16_t shorts[] = {-1, 2, -3};
    w.set_array("arr_i16", ValueType::i16, shorts, 3);
    w.set_string_array("arr_str", {"x", "", "yz"});
    const float floats[] = {1.5f, -2.25f};
    w.set_array("nested", Array::arrays({Array::of(ValueType::f32, floats, 2), Array::strings({"deep"}),
                                         Array::arrays({Array::arrays({})})}));
    w.set_u32("general.alignment", 128);
    std::vector<uint8_t> t0(4 * 3 * 2);
    for (size_t i = 0; i < t0.size(); ++i) t0[i] = uint8_t(i);
    const int64_t ne0[] = {3, 2};
    w.add_tensor("t0", kF32, 2, ne0, t0);
    std::vector<uint8_t> t1(34, 7);
    const int64_t ne1[] = {32};
    w.add_tensor("t1", kQ8_0, 1, ne1, t1);
    const auto paths = w.write((dir / "values.gguf").string());
    REQUIRE(paths.size() == 1);

    auto m = ModelFile::open(paths);
    auto v = [&](const char* k) {
        auto i = m->find_key(k);
        REQUIRE_MESSAGE(i, k);
        return m->metadata_value(*i);
    };
    CHECK(v("u8").as_uint() == 200u);
    CHECK(v("i8").as_int() == -100);
    CHECK(v("u16").as_uint() == 60000u);
    CHECK(v("i16").as_int() == -30000);
    CHECK(v("u32").as_uint() == 4000000000u);
    CHECK(v("i32").as_int() == -2000000000);
    CHECK(v("u64").as_uint() == UINT64_MAX);
    CHECK(v("i64").as_int() == INT64_MIN);
    CHECK(v("f32").float_bits() == 0x80000000u);
    CHECK(v("f64").as_double() == 1e-300);
    CHECK(v("bool").as_bool() == true);
    CHECK(v("str").as_string() == std::string_view("a\0b", 3));
    CHECK(v("arr_i16").to_json() == "[-1,2,-3]");
    CHECK(v("non_finite").to_json() == "[\"NaN\",\"Infinity\",\"-Infinity\",1.5]");
    CHECK(v("arr_str").to_json() == "[\"x\",\"\",\"yz\"]");
    CHECK(v("nested").to_json() == "[[1.5,-2.25],[\"deep\"],[[]]]");
    CHECK(v("nested").at(0).element_type() == ValueType::f32);
    CHECK(v("nested").at(2).at(0).size() == 0);
    CHECK(m->shards()[0].alignment == 128);
    CHECK(m->shards()[0].data_offset % 128 == 0);
    REQUIRE(m->tensors().size() == 2);
    CHECK(m->tensors()[1].offset == 128);
    CHECK(std::memcmp(m->tensors()[0].data, t0.data(), t0.size()) == 0);
    CHECK(std::memcmp(m->tensors()[1].data, t1.data(), t1.size()) == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a split write opens as the same model, from the first shard and from the list") {
    const auto dir = temp_dir("split");
    auto single = ModelFile::open({fixture("tiny-model.gguf").string()});
    const Writer w = copy_of(*single);
    for (size_t n : {size_t(2), size_t(3), size_t(5), size_t(12)}) {
        CAPTURE(n);
        const auto paths = w.write((dir / "model.gguf").string(), n);
        REQUIRE(paths.size() == n);
        CHECK(std::filesystem::path(paths[0]).filename() ==
              "model-00001-of-" + std::string(5 - std::to_string(n).size(), '0') + std::to_string(n) + ".gguf");
        auto from_first = ModelFile::open({paths[0]});
        CHECK(from_first->shards().size() == n);
        check_same_model(*from_first, *single, true);
        CHECK(from_first->metadata_value(*from_first->find_key("split.count")).as_uint() == n);
        auto from_list = ModelFile::open(std::vector<std::string>(paths.rbegin(), paths.rend()));
        check_same_model(*from_list, *single, true);
        // Balanced by bytes: no shard holds more than half of the data plus its largest tensor.
        for (size_t s = 1; s < n; ++s) CHECK(from_first->shards()[s].n_kv == 3);
        for (const auto& p : paths) std::filesystem::remove(p);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("the writer refuses inconsistent tensors and leaves no file behind on failure") {
    Writer w;
    const int64_t ne[] = {32};
    std::vector<uint8_t> q8(34);
    auto status_of = [](auto&& f) {
        try {
            f();
        } catch (const strata::Error& e) {
            MESSAGE(std::string(e.what()));
            return e.status();
        }
        return strata::Status::ok;
    };
    using strata::Status;
    CHECK(status_of([&] { w.add_tensor("a", kQ8_0, 1, ne, q8); }) == Status::ok);
    CHECK(status_of([&] { w.add_tensor("a", kQ8_0, 1, ne, q8); }) == Status::invalid_argument);
    CHECK(status_of([&] { w.add_tensor("b", kQ8_0, 1, ne, {q8.data(), 33}); }) == Status::invalid_argument);
    CHECK(status_of([&] { w.add_tensor("c", 4, 1, ne, q8); }) == Status::invalid_argument);
    const int64_t bad_row[] = {31};
    CHECK(status_of([&] { w.add_tensor("d", kQ8_0, 1, bad_row, q8); }) == Status::invalid_argument);
    CHECK(status_of([&] { w.add_tensor(std::string(64, 'x'), kQ8_0, 1, ne, q8); }) == Status::invalid_argument);
    CHECK(status_of([&] { w.set_u8("", 1); }) == Status::invalid_argument);
    const uint8_t two = 2;
    CHECK(status_of([&] { w.set_array("b", ValueType::boolean, &two, 1); }) == Status::invalid_argument);
    CHECK(status_of([&] { (void)w.write("/tmp/x.bin", 2); }) == Status::invalid_argument);

    Writer bad_alignment;
    bad_alignment.set_u32("general.alignment", 48);
    CHECK(status_of([&] { (void)bad_alignment.to_bytes(); }) == Status::invalid_argument);

    const auto dir = temp_dir("fail");
    CHECK(status_of([&] { (void)w.write((dir / "missing" / "m.gguf").string(), 2); }) == Status::io);
    CHECK(std::filesystem::is_empty(dir));
    std::filesystem::remove_all(dir);
}
