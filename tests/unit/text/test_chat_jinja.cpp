// The Jinja interpreter of lib/chat: hand-worked snippets whose expected text is what jinja2
// 3.1 renders with trim_blocks, lstrip_blocks and loop controls, and the errors and limits.
#include <doctest/doctest.h>

#include <string>

#include "chat/builtin_formats.hpp"
#include "chat/chat_template.hpp"
#include "chat/jinja_eval.hpp"
#include "chat/jinja_json.hpp"
#include "chat/jinja_lexer.hpp"
#include "chat/jinja_parser.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;
using namespace strata::chat;

namespace {

std::string render(const std::string& source, const std::string& variables = "{}", RenderLimits limits = {}) {
    Template tpl = parse_template(source);
    Interpreter interp(limits);
    return interp.render(tpl, parse_json(variables, "variables"));
}

// The status and message of a failing render.
std::pair<Status, std::string> failure(const std::string& source, const std::string& variables = "{}",
                                       RenderLimits limits = {}) {
    try {
        render(source, variables, limits);
    } catch (const Error& e) {
        return {e.status(), e.what()};
    }
    return {Status::ok, ""};
}

}  // namespace

TEST_CASE("the lexer applies trim_blocks and lstrip_blocks as jinja2 does") {
    CHECK(render("a\n  {% if true %}\n  b\n  {% endif %}\nc") == "a\n  b\nc");
    // lstrip_blocks strips before block tags only, not before {{ }}.
    CHECK(render("  {{ 'x' }}\n  {% if true %}y{% endif %}") == "  x\ny");
    // `+` keeps the indentation; `-` strips every whitespace character, newlines included.
    CHECK(render("a\n  {%+ if true %}b{% endif %}") == "a\n  b");
    CHECK(render("a  \n\n {%- if true -%}  \n\n b {%- endif %}") == "ab");
    // trim_blocks removes only the first newline after the tag.
    CHECK(render("{% if true %}\n\nx{% endif %}") == "\nx");
    // Comments are stripped like blocks; one trailing newline of the template is dropped.
    CHECK(render("  {# note #}\nx\n") == "x");
    CHECK(render("{% raw %}{{ not evaluated }}{% endraw %}") == "{{ not evaluated }}");
    CHECK(render("a\r\nb") == "a\nb");
}

TEST_CASE("string literals unescape as Python's unicode-escape") {
    CHECK(render(R"({{ 'a\nb\t\x41\u00e9\\' }})") == "a\nb\tA\xc3\xa9\\");
    CHECK(render(R"({{ "it's" ~ 'say "hi"' }})") == "it'ssay \"hi\"");
    CHECK(render(R"({{ 'keep\d' }})") == "keep\\d");
    CHECK(render("{{ 'ab' 'cd' }}") == "abcd");
}

TEST_CASE("expressions follow Python and jinja2 precedence and arithmetic") {
    CHECK(render("{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ 2 ** 10 }}") ==
          "7|3|-4|2|3.5|1024");
    CHECK(render("{{ 1 + 1.0 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 10 / 4 }}") ==
          "2.0|0.30000000000000004|1e-05|1e+16|2.5");
    // Filters bind tighter than arithmetic: x | length - 1 is (x | length) - 1.
    CHECK(render("{{ [1, 2, 3] | length - 1 }}") == "2");
    CHECK(render("{{ 'a' ~ 1 ~ none ~ true }}") == "a1NoneTrue");
    CHECK(render("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'b' in 'abc' }}|{{ 2 not in [1] }}") == "True|False|True|True");
    CHECK(render("{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ not 0 }}") == "x|y|True");
    CHECK(render("{{ 'yes' if 0 else 'no' }}|{{ 'yes' if 0 }}|") == "no||");
    CHECK(render("{{ [1, 'a', none, 1.5] }}|{{ {'k': 'v', 'n': [1]} }}|{{ (1,) }}|{{ \"it's\" | list }}") ==
          "[1, 'a', None, 1.5]|{'k': 'v', 'n': [1]}|(1,)|['i', 't', \"'\", 's']");
}

TEST_CASE("strings index, slice and count by code point") {
    CHECK(render("{{ s | length }}|{{ s[1] }}|{{ s[-1] }}|{{ s[::-1] }}|{{ s[1:3] }}", R"({"s": "h\u00e9llo\ud83d\ude00"})") ==
          "6|\xc3\xa9|\xf0\x9f\x98\x80|\xf0\x9f\x98\x80oll\xc3\xa9h|\xc3\xa9l");
    CHECK(render("{{ s.split('</think>')[-1].lstrip('\\n') }}", R"({"s": "a</think>\n\nb"})") == "b");
    CHECK(render("{{ 'a,b,,c'.split(',') }}|{{ '  x  y '.split() }}|{{ 'a-b-c'.rsplit('-', 1) }}") ==
          "['a', 'b', '', 'c']|['x', 'y']|['a-b', 'c']");
    CHECK(render("{{ 'Hello'.startswith('He') }}|{{ 'x'.upper() }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'abc'.find('c') }}") ==
          "True|X|bXb|2");
}

TEST_CASE("for loops scope their assignments and expose loop") {
    CHECK(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}") == "1");
    CHECK(render("{% for i in [1, 2] %}{{ x }}{% set x = i %}{% endfor %}", R"({"x": 9})") == "99");
    CHECK(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}") == "6");
    CHECK(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{{ ',' if not loop.last }}{% endfor %}") == "3,7");
    CHECK(render("{% for i in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.previtem }}{% endfor %}") ==
          "1221a30b");
    CHECK(render("{% for i in [] %}x{% else %}empty{% endfor %}") == "empty");
    CHECK(render("{% for i in range(10) if i is odd %}{{ i }}{% if i > 4 %}{% break %}{% endif %}{% endfor %}") == "135");
    CHECK(render("{% for i in range(5) %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}") == "0134");
    CHECK(render("{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "A": 2}})") ==
          "A=2;b=1;");
    CHECK(render("{% for i in [1, 2] %}{{ loop.cycle('a', 'b') }}{% endfor %}") == "ab");
    CHECK(render("{% for x in t recursive %}{{ x.n }}{% if x.c %}({{ loop(x.c) }}){% endif %}{% endfor %}",
                 R"({"t": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3}]})") == "1(2)3");
}

TEST_CASE("macros take defaults, keywords, caller and see late top-level assignments") {
    CHECK(render("{% macro m(a, b='d') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}|{{ m(1, b=2) }}|{{ m() }}") == "1d|12|d");
    CHECK(render("{% macro m() %}{{ flag }}{% endmacro %}{% set flag = 'late' %}{{ m() }}") == "late");
    CHECK(render("{% macro m(x) %}[{{ caller() }}{{ x }}]{% endmacro %}{% call m(1) %}in{% endcall %}") == "[in1]");
    CHECK(render("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}") == "(1, 2){'k': 3}");
    CHECK(render("{% set x %}a{{ 1 }}b{% endset %}{{ x }}|{% filter upper %}up{% endfilter %}") == "a1b|UP");
}

TEST_CASE("Undefined prints empty, is falsy and fails where jinja2 fails") {
    CHECK(render("[{{ missing }}]{{ missing | length }}{{ 'y' if missing else 'n' }}{{ missing is defined }}") == "[]0nFalse");
    CHECK(render("{{ d.nokey is defined }}|{{ d['nokey'] }}|{{ d.k }}", R"({"d": {"k": 1}})") == "False||1");
    CHECK(render("{% for x in missing %}x{% endfor %}{{ missing | default('dflt') }}") == "dflt");
    CHECK(failure("{{ missing + 1 }}").first == Status::invalid_argument);
    CHECK(failure("{{ missing.attr }}").second.find("'missing' is undefined") != std::string::npos);
    CHECK(failure("{{ missing() }}").first == Status::invalid_argument);
}

TEST_CASE("dict attributes fall back to items and methods win over keys") {
    CHECK(render("{{ m.content }}|{{ m.get('role') }}|{{ m.get('x', 'dflt') }}|{{ 'role' in m }}",
                 R"({"m": {"role": "user", "content": "hi"}})") == "hi|user|dflt|True");
    CHECK(render("{{ d['items'] is callable }}|{{ d.items() | list }}", R"({"d": {"a": 1}})") ==
          "True|[('a', 1)]");
    CHECK(render("{% set l = [] %}{% set _ = l.append(1) %}{{ l }}{{ l.pop(0) }}{{ l }}") == "[1]1[]");
}

TEST_CASE("tojson writes json.dumps with sorted keys and HTML-safe escapes") {
    CHECK(render("{{ v | tojson }}", R"({"v": {"b": [1, 2.5, true, null], "a": "<&'\u00e9>"}})") ==
          R"({"a": "\u003c\u0026\u0027\u00e9\u003e", "b": [1, 2.5, true, null]})");
    CHECK(render("{{ v | tojson(indent=2) }}", R"({"v": {"a": [1], "e": {}}})") ==
          "{\n  \"a\": [\n    1\n  ],\n  \"e\": {}\n}");
    // tojson takes only indent, as jinja2's does.
    CHECK(failure("{{ 1 | tojson(ensure_ascii=false) }}").second.find("ensure_ascii") != std::string::npos);
    // Markup from tojson escapes the plain str it is added to, as markupsafe does.
    CHECK(render("{{ '<a>' + 1 | tojson }}") == "&lt;a&gt;1");
}

TEST_CASE("filters behave as jinja2's") {
    CHECK(render("{{ '  x ' | trim }}|{{ 'ab' | upper }}|{{ 'hello world' | title }}|{{ 'aBC' | capitalize }}") ==
          "x|AB|Hello World|Abc");
    CHECK(render("{{ [3, 1, 2] | sort }}|{{ [3, 1, 2] | sort(reverse=true) | first }}|{{ [1, 2] | last }}") ==
          "[1, 2, 3]|3|2");
    CHECK(render("{{ ['a', 'A', 'b'] | unique | list }}|{{ [1, 2, 3] | sum }}|{{ [4, 2] | min }}|{{ [4, 2] | max }}") ==
          "['a', 'b']|6|2|4");
    CHECK(render("{{ items | map(attribute='n') | join(',') }}|{{ items | selectattr('n', 'gt', 1) | list | length }}",
                 R"({"items": [{"n": 1}, {"n": 2}, {"n": 3}]})") == "1,2,3|2");
    CHECK(render("{{ [1, 2, 3, 4] | select('even') | list }}|{{ [1, 2, 3] | reject('equalto', 2) | list }}") ==
          "[2, 4]|[1, 3]");
    CHECK(render("{{ '42' | int + 1 }}|{{ '4.5' | int }}|{{ 'x' | int(7) }}|{{ '2.5' | float }}|{{ 2.5 | round }}|{{ 3.14159 | round(2) }}") ==
          "43|4|7|2.5|2.0|3.14");
    CHECK(render("{{ 'a\nb' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}") == "a\n  b|  a\n  b");
    CHECK(render("{{ [1, 2, 3] | batch(2) | list }}|{{ 'a b  c' | wordcount }}|{{ '%s-%d' | format('x', 3) }}") ==
          "[[1, 2], [3]]|3|x-3");
    CHECK(render("{{ '<b>' | escape }}|{{ -3 | abs }}|{{ [1, 2] | reverse | list }}|{{ d | items | list }}",
                 R"({"d": {"k": 1}})") == "&lt;b&gt;|3|[2, 1]|[('k', 1)]");
}

TEST_CASE("tests behave as jinja2's") {
    CHECK(render("{{ 1 is number }}{{ true is number }}{{ true is boolean }}{{ 1 is integer }}{{ 1.0 is float }}") ==
          "TrueTrueTrueTrueTrue");
    CHECK(render("{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ none is none }}") ==
          "TrueTrueTrueTrueTrue");
    CHECK(render("{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ false is false }}{{ 2 is in [1, 2] }}{{ 'a' is not upper }}") ==
          "TrueTrueTrueTrueTrue");
}

TEST_CASE("syntax errors are Status::format naming the line") {
    auto [status, message] = failure("line one\n{% if x %}\nno end");
    CHECK(status == Status::format);
    CHECK(message.find("line 3") != std::string::npos);
    CHECK(message.find("'if'") != std::string::npos);
    CHECK(failure("{{ 1 + }}").first == Status::format);
    CHECK(failure("{% for %}{% endfor %}").first == Status::format);
    CHECK(failure("{{ (1 }}").first == Status::format);
    CHECK(failure("{# never closed").second.find("comment") != std::string::npos);
    CHECK(failure("{% frobnicate %}").first == Status::format);
    CHECK(failure("{{ 'unterminated }}").first == Status::format);
    CHECK(failure("{% endif %}").first == Status::format);
    CHECK_THROWS_AS(lex_template("\xff\xfe"), Error);
}

TEST_CASE("unsupported constructs are Status::unsupported naming them") {
    auto [status, message] = failure("\n{{ x | frobnicate }}");
    CHECK(status == Status::unsupported);
    CHECK(message.find("line 2") != std::string::npos);
    CHECK(message.find("'frobnicate'") != std::string::npos);
    CHECK(failure("{{ 'x' | truncate(3) }}").first == Status::unsupported);
    CHECK(failure("{% include 'other.j2' %}").first == Status::unsupported);
    CHECK(failure("{% extends 'base' %}").first == Status::unsupported);
    CHECK(failure("{{ 'x'.encode() }}").first == Status::unsupported);
    CHECK(failure("{{ x is frobnicated }}").first == Status::unsupported);
}

TEST_CASE("raise_exception and runtime type errors are invalid_argument") {
    auto [status, message] = failure("{{ raise_exception('Roles must alternate') }}");
    CHECK(status == Status::invalid_argument);
    CHECK(message == "Roles must alternate");
    auto type_error = failure("\n\n{{ {} + 'a' }}");
    CHECK(type_error.first == Status::invalid_argument);
    CHECK(type_error.second.find("line 3") != std::string::npos);
    CHECK(failure("{{ 1 / 0 }}").first == Status::invalid_argument);
    CHECK(failure("{{ 'a' + 1 }}").first == Status::invalid_argument);
    CHECK(failure("{% set a, b = [1] %}").first == Status::invalid_argument);
}

TEST_CASE("limits stop runaway templates with a clear error") {
    RenderLimits small;
    small.max_steps = 10000;
    auto loop = failure("{% for i in range(100) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}", "{}", small);
    CHECK(loop.first == Status::invalid_argument);
    CHECK(loop.second.find("steps") != std::string::npos);
    CHECK(failure("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}").second.find("recursion") != std::string::npos);
    RenderLimits tiny_output;
    tiny_output.max_output_bytes = 1000;
    CHECK(failure("{{ 'x' * 2000 }}", "{}", tiny_output).second.find("longer than") != std::string::npos);
    CHECK(failure("{% for i in range(2000) %}x{% endfor %}", "{}", tiny_output).first == Status::invalid_argument);
    CHECK(failure("{{ range(10**12) | length }}").second.find("steps") != std::string::npos);
    // Deep nesting is refused by the parser before it can exhaust the stack.
    CHECK(failure("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").first == Status::format);
    CHECK(failure("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}").first == Status::format);
    CHECK(failure(std::string(3000, '{') + "% if 1 %}").first != Status::ok);
    // Recursion through macros and nested expressions is bounded as well.
    RenderLimits shallow;
    shallow.max_nesting = 50;
    CHECK(failure("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "{}", shallow).second.find("nests deeper") !=
          std::string::npos);
}

TEST_CASE("random arithmetic agrees with Python's integer rules") {
    std::mt19937_64 rng(test::test_seed());
    std::uniform_int_distribution<int64_t> dist(-1000, 1000);
    for (int i = 0; i < 200; ++i) {
        int64_t a = dist(rng), b = dist(rng);
        if (b == 0) b = 7;
        CAPTURE(a);
        CAPTURE(b);
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        int64_t r = a - q * b;
        std::string vars = "{\"a\": " + std::to_string(a) + ", \"b\": " + std::to_string(b) + "}";
        CHECK(render("{{ a // b }} {{ a % b }} {{ a + b }}", vars) ==
              std::to_string(q) + " " + std::to_string(r) + " " + std::to_string(a + b));
    }
}

TEST_CASE("apply_chat_template checks its JSON and renders the built-in formats") {
    ChatRequest r;
    r.template_source = builtin_format_source("chatml");
    r.messages_json = R"([{"role": "user", "content": "hi"}])";
    CHECK(apply_chat_template(r) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    r.messages_json = R"({"role": "user"})";
    CHECK_THROWS_AS(apply_chat_template(r), Error);
    r.messages_json = "[{]";
    try {
        apply_chat_template(r);
        FAIL("malformed JSON was accepted");
    } catch (const Error& e) {
        CHECK(e.status() == Status::invalid_argument);
        CHECK(std::string(e.what()).find("messages_json") != std::string::npos);
    }
    r.messages_json = "[]";
    r.extra_json = "[1]";
    CHECK_THROWS_AS(apply_chat_template(r), Error);
    CHECK(builtin_format_source("no-such-format") == nullptr);
    CHECK(std::string(builtin_format_names()) == "chatml,llama3,deepseek3,kimi-k2");
}
