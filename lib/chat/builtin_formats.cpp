// Each format renders plain conversations (system/user/assistant messages with string content)
// exactly as the real template of its family does; none of them renders tools, tool calls,
// tool results, reasoning/thinking blocks or content given as a list of parts.
#include "chat/builtin_formats.hpp"

#include <cstring>

namespace strata::chat {

namespace {

struct Format {
    const char* name;
    const char* source;
};

// ChatML as SmolLM2, Qwen2.5 and Qwen3 write it. Unlike Qwen2.5 it adds no default system
// prompt (Qwen3 and SmolLM2-style: only the conversation's own messages).
const char* const kChatml = R"JINJA({%- for message in messages -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- endif -%})JINJA";

// Llama 3.1 Instruct: the system header always comes first, with the knowledge cut-off and the
// date (date_string, default "26 Jul 2024" as Meta's template); contents are trimmed.
const char* const kLlama3 = R"JINJA({{- bos_token -}}
{%- if date_string is not defined -%}{%- set date_string = '26 Jul 2024' -%}{%- endif -%}
{%- if messages and messages[0]['role'] == 'system' -%}
{%- set system_message = messages[0]['content'] | trim -%}
{%- set messages = messages[1:] -%}
{%- else -%}
{%- set system_message = '' -%}
{%- endif -%}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' -}}
{{- 'Cutting Knowledge Date: December 2023\nToday Date: ' + date_string + '\n\n' -}}
{{- system_message + '<|eot_id|>' -}}
{%- for message in messages -%}
{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%})JINJA";

// DeepSeek V3.1 in non-thinking mode: system prompts joined by a blank line right after BOS,
// an empty think block opening each assistant turn, an earlier reasoning part (up to
// "</think>") dropped from assistant contents.
const char* const kDeepseek3 = R"JINJA({%- set ns = namespace(system_prompt='', first_system=true, last_user=false) -%}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}
{%- if ns.first_system -%}
{%- set ns.system_prompt = message['content'] -%}
{%- set ns.first_system = false -%}
{%- else -%}
{%- set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] -%}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{{- bos_token + ns.system_prompt -}}
{%- for message in messages -%}
{%- if message['role'] == 'user' -%}
{%- set ns.last_user = true -%}
{{- '<｜User｜>' + message['content'] -}}
{%- elif message['role'] == 'assistant' -%}
{%- if ns.last_user -%}{{- '<｜Assistant｜><think></think>' -}}{%- endif -%}
{%- set ns.last_user = false -%}
{%- set content = message['content'] -%}
{%- if '</think>' in content -%}{%- set content = content.split('</think>', 1)[1] -%}{%- endif -%}
{{- content + '<｜end▁of▁sentence｜>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and ns.last_user -%}
{{- '<｜Assistant｜><think></think>' -}}
{%- endif -%})JINJA";

// Kimi K2 Instruct: a default system message when the conversation has none (followed by a
// newline, as Moonshot's template writes it), the message's name (or its role) after the
// role token.
const char* const kKimiK2 = R"JINJA({%- for message in messages -%}
{%- if loop.first and message['role'] != 'system' -%}
{{- '<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>\n' -}}
{%- endif -%}
{%- set role_name = message.get('name') or message['role'] -%}
{%- if message['role'] == 'user' -%}
{{- '<|im_user|>' + role_name + '<|im_middle|>' -}}
{%- elif message['role'] == 'assistant' -%}
{{- '<|im_assistant|>' + role_name + '<|im_middle|>' -}}
{%- else -%}
{{- '<|im_system|>' + role_name + '<|im_middle|>' -}}
{%- endif -%}
{{- message['content'] + '<|im_end|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_assistant|>assistant<|im_middle|>' -}}
{%- endif -%})JINJA";

const Format kFormats[] = {
    {"chatml", kChatml},
    {"llama3", kLlama3},
    {"deepseek3", kDeepseek3},
    {"kimi-k2", kKimiK2},
};

}  // namespace

const char* builtin_format_source(std::string_view name) {
    for (const auto& f : kFormats)
        if (name == f.name) return f.source;
    return nullptr;
}

const char* builtin_format_names() { return "chatml,llama3,deepseek3,kimi-k2"; }

}  // namespace strata::chat
