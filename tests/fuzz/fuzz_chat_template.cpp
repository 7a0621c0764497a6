// libFuzzer target: any bytes as a chat template (a GGUF's tokenizer.chat_template is untrusted)
// rendered over a fixed conversation with tools: either text comes out or a strata::Error with a
// message; never a crash, a hang past the step budget, unbounded memory or a stack overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.hpp"
#include "util/error.hpp"

namespace {

constexpr const char* kMessages =
    R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi <b>&'\"</b> \u4e2d"},)"
    R"({"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"c1","type":"function",)"
    R"("function":{"name":"f","arguments":{"x":1,"y":[true,null,2.5]}}}]},{"role":"tool","tool_call_id":"c1",)"
    R"("content":"42"},{"role":"user","content":[{"type":"text","text":"more"}]}])";
constexpr const char* kExtra =
    R"({"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],)"
    R"("enable_thinking":false})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    strata::chat::ChatRequest r;
    const std::string source(reinterpret_cast<const char*>(data), size);
    r.template_source = source;
    r.messages_json = kMessages;
    r.extra_json = kExtra;
    r.bos_token = "<s>";
    r.eos_token = "</s>";
    // Small budgets so that each input finishes quickly; the defaults are tested in the unit tests.
    r.limits.max_steps = 200'000;
    r.limits.max_output_bytes = 1 << 20;
    r.limits.max_nesting = 200;
    try {
        const std::string out = strata::chat::apply_chat_template(r);
        if (out.size() > r.limits.max_output_bytes) __builtin_trap();
    } catch (const strata::Error& e) {
        if (e.what()[0] == '\0') __builtin_trap();  // every error says what is wrong
    }
    return 0;
}
