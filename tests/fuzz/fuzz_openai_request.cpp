// libFuzzer target: strata-server's request parsers (server/openai_request.cpp) on arbitrary
// bytes as an HTTP body. Every body must end as a typed request or an ApiError naming what is
// wrong (a 4xx status); anything else escaping (another exception, a crash, UB) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api_error.hpp"
#include "openai_request.hpp"

namespace {

template <class F>
void expect_clean(F&& parse) {
    try {
        parse();
    } catch (const server::ApiError& e) {
        if (e.status < 400 || e.status >= 500) std::abort();  // bad input is the client's error
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    nlohmann::json j;
    try {
        j = server::parse_json_object(body);
    } catch (const server::ApiError& e) {
        if (e.status != 400) std::abort();
        return 0;
    }
    expect_clean([&] { (void)server::parse_chat_request(j); });
    expect_clean([&] { (void)server::parse_completion_request(j); });
    expect_clean([&] { (void)server::parse_tokenize_request(j); });
    expect_clean([&] { (void)server::parse_detokenize_request(j); });
    return 0;
}
