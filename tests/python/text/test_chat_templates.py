"""Chat templates (strata_chat_apply_template) against the Python jinja2 package: every real
template of the fixture set over a set of conversations, ~100 snippets exercising the Jinja
features one by one, random conversations, the built-in formats and the errors. Byte-for-byte
equality with jinja2 rendering as Hugging Face configures it (trim_blocks, lstrip_blocks, loop
controls, raise_exception, strftime_now); where jinja2 raises, strata must fail too."""
from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

import strata
from strata import StrataError

try:
    import jinja2
    import jinja2.ext  # noqa: F401
except ImportError as e:  # a usage error, not a skip: the reference is required
    raise pytest.UsageError(f"the Python package 'jinja2' is needed for {__name__} ({e}); pip install jinja2")

INVALID_ARGUMENT, FORMAT, UNSUPPORTED, NOT_FOUND = 1, 3, 4, 5


class RaisedByTemplate(Exception):
    pass


def _raise_exception(message: str) -> None:
    raise RaisedByTemplate(message)


def reference(source: str, messages: list, add_generation_prompt: bool, bos: str, eos: str,
              extra: Optional[dict] = None) -> tuple[Optional[str], Optional[BaseException]]:
    """jinja2's rendering, or the exception it raised."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    try:
        tpl = env.from_string(source)
        return tpl.render(messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos,
                          eos_token=eos, **(extra or {})), None
    except Exception as e:  # noqa: BLE001 - any failure of jinja2 is a failure strata must share
        return None, e


def ours(model: strata.Model, source: Optional[str], messages: list, add_generation_prompt: bool,
         extra: Optional[dict] = None) -> tuple[Optional[str], Optional[StrataError]]:
    try:
        return model.apply_chat_template(messages, add_generation_prompt, template=source, **(extra or {})), None
    except StrataError as e:
        return None, e


def assert_same(model: strata.Model, bos: str, eos: str, source: str, messages: list, agp: bool,
                extra: Optional[dict] = None, what: str = "") -> None:
    want, want_err = reference(source, messages, agp, bos, eos, extra)
    got, got_err = ours(model, source, messages, agp, extra)
    where = f"{what}: messages={json.dumps(messages)[:300]} agp={agp} extra={json.dumps(extra)[:200]}"
    if want_err is not None:
        assert got_err is not None, f"{where}: jinja2 raised {want_err!r}, strata rendered {got!r}"
        assert got_err.status in (INVALID_ARGUMENT, FORMAT, UNSUPPORTED), f"{where}: {got_err}"
        assert str(got_err.args and got_err) != "", where
        if isinstance(want_err, RaisedByTemplate):
            assert got_err.status == INVALID_ARGUMENT and str(want_err) in str(got_err), f"{where}: {got_err}"
        return
    assert got_err is None, f"{where}: jinja2 rendered {want!r}, strata failed: {got_err}"
    assert got == want, f"{where}:\n  jinja2 {want!r}\n  strata {got!r}"


@pytest.fixture(scope="module")
def vocab_model(fixtures_dir: Path) -> strata.Model:
    return strata.Model(fixtures_dir / "vocab" / "ggml-vocab-llama-bpe.gguf")


@pytest.fixture(scope="module")
def specials(vocab_model: strata.Model) -> tuple[str, str]:
    """The BOS and EOS texts the library passes to templates."""
    v = vocab_model.vocab
    bos = vocab_model.token_to_piece(v.bos).decode("utf-8") if v.bos >= 0 else ""
    eos = vocab_model.token_to_piece(v.eos).decode("utf-8") if v.eos >= 0 else ""
    return bos, eos


def fixture_templates(fixtures_dir: Path) -> list[Path]:
    paths = sorted((fixtures_dir / "chat-templates").glob("*.jinja"))
    assert len(paths) >= 8, "the chat-template fixtures are missing"
    return paths


TEMPLATE_NAMES = ["Kimi-K2-Instruct", "Kimi-K2-Thinking", "Kimi-K3", "Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B",
                  "deepseek-ai-DeepSeek-V3.1", "meta-llama-Llama-3.1-8B-Instruct", "moonshotai-Kimi-K2"]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather <now> & 'later' in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "Name"},
                                                          "days": {"type": "integer"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web",
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
]

UNICODE = "quotes ' and \" <tag> & ampersand, emoji \U0001F600 \u00fc\u00df\u4e2d\u6587\nsecond\tline \\ done"


def conversations() -> list[tuple[str, list, dict]]:
    call_dict = {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"city": "Paris <x>", "days": 3}}}
    call_str = {"id": "call_2", "type": "function",
                "function": {"name": "search", "arguments": "{\"q\": \"news & <b>\"}"}}
    return [
        ("system+user", [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello!"}], {}),
        ("multi-turn", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"},
                        {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"},
                        {"role": "assistant", "content": "four"}, {"role": "user", "content": "five"}], {}),
        ("no-system", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                       {"role": "user", "content": "c"}], {}),
        ("ends-with-assistant", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], {}),
        ("unicode", [{"role": "system", "content": UNICODE}, {"role": "user", "content": UNICODE}], {}),
        ("tool-call-dict", [{"role": "user", "content": "Weather in Paris?"},
                            {"role": "assistant", "content": "", "tool_calls": [call_dict]},
                            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny, 21C"},
                            {"role": "assistant", "content": "It is sunny."}], {"tools": TOOLS}),
        ("tool-call-string", [{"role": "user", "content": "news?"},
                              {"role": "assistant", "content": None, "tool_calls": [call_str]},
                              {"role": "tool", "tool_call_id": "call_2", "content": "{\"result\": \"ok\"}"}],
         {"tools": TOOLS}),
        ("two-tool-calls", [{"role": "user", "content": "both"},
                            {"role": "assistant", "content": "Calling.", "tool_calls": [call_dict, call_str]},
                            {"role": "tool", "tool_call_id": "call_1", "content": "r1"},
                            {"role": "tool", "tool_call_id": "call_2", "content": "r2"}], {}),
        ("tools-no-call", [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}], {"tools": TOOLS}),
        ("reasoning-content", [{"role": "user", "content": "q"},
                               {"role": "assistant", "content": "answer", "reasoning_content": "thinking hard"},
                               {"role": "user", "content": "q2"},
                               {"role": "assistant", "content": "a2", "reasoning_content": "more thought"}], {}),
        ("think-tags", [{"role": "user", "content": "q"},
                        {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nanswer"},
                        {"role": "user", "content": "q2"}], {}),
        ("qwen3-no-thinking", [{"role": "user", "content": "q"}], {"enable_thinking": False}),
        ("thinking-flag", [{"role": "user", "content": "q"}], {"thinking": True}),
        ("content-parts", [{"role": "user", "content": [{"type": "text", "text": "part one, "},
                                                        {"type": "text", "text": "part two"}]}], {}),
        ("date-string", [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
         {"date_string": "01 Jan 2025"}),
        ("named-user", [{"role": "user", "name": "alice", "content": "hi"}], {}),
        ("empty", [], {}),
    ]


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_fixture_templates_render_as_jinja2(name: str, fixtures_dir: Path, vocab_model: strata.Model,
                                            specials: tuple[str, str]) -> None:
    path = fixtures_dir / "chat-templates" / f"{name}.jinja"
    source = path.read_text(encoding="utf-8")
    bos, eos = specials
    checked = rendered = 0
    for what, messages, extra in conversations():
        for agp in (True, False):
            assert_same(vocab_model, bos, eos, source, messages, agp, extra, f"{name} / {what}")
            checked += 1
            rendered += reference(source, messages, agp, bos, eos, extra)[1] is None
    assert checked == 2 * len(conversations())
    assert rendered >= checked // 2, f"{name}: jinja2 itself failed on most conversations"


def test_every_fixture_template_is_covered(fixtures_dir: Path) -> None:
    assert sorted(p.stem for p in fixture_templates(fixtures_dir)) == sorted(TEMPLATE_NAMES)


# (template, variables): each compared with jinja2 through strata_chat_apply_template.
SNIPPETS: list[tuple[str, dict]] = [
    # text and whitespace control
    ("plain text only", {}),
    ("a\n  {% if true %}\n  b\n  {% endif %}\nc", {}),
    ("  {{ 'x' }}\n  {% if true %}y{% endif %}", {}),
    ("a\n  {%+ if true %}b{% endif %}", {}),
    ("a  \n\n {%- if true -%}  \n\n b {%- endif %}", {}),
    ("{% if true %}\n\nx{% endif %}\n", {}),
    ("x {{- ' y ' -}} z", {}),
    ("  {# comment #}\nafter\n\n", {}),
    ("{#- c -#}  \n  v", {}),
    ("{% raw %}{{ x }}{% if %}{% endraw %}", {}),
    ("line\r\nwindows\rmac", {}),
    ("{% for i in range(3) %}\n  {{ i }}\n{% endfor %}\n", {}),
    ("\t{% if true %}tab{% endif %}", {}),
    # literals and printing
    ("{{ 42 }}|{{ -7 }}|{{ 1.5 }}|{{ 1.0 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 123456789.123 }}|{{ 0.1 + 0.2 }}", {}),
    ("{{ true }}|{{ false }}|{{ none }}|{{ True }}|{{ None }}", {}),
    ("{{ [1, 'a', none, 1.5, true] }}|{{ (1,) }}|{{ () }}|{{ (1, 2) }}", {}),
    ("{{ {'k': 'v', 'n': [1, {'x': none}]} }}|{{ {} }}", {}),
    ("{{ \"it's\" }}|{{ ['it\\'s', 'say \"x\"', 'both \\' \"'] }}", {}),
    ("{{ ['tab\\there', 'nl\\n', 'back\\\\slash', 'uni\u00e9\U0001F600'] }}", {}),
    ("{{ 'a\\x41\\u00e9\\n' }}|{{ 'ab' 'cd' }}", {}),
    ("{{ v }}", {"v": {"nested": [1, 2.0, "s", None, True, {"k": []}]}}),
    # arithmetic
    ("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}", {}),
    ("{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 7 / 2 }}|{{ 6 / 3 }}", {}),
    ("{{ 7.5 // 2 }}|{{ -7.5 % 2 }}|{{ 1 + 1.0 }}|{{ true + 1 }}|{{ 2 * 0.5 }}", {}),
    ("{{ 'ab' * 3 }}|{{ [1] * 3 }}|{{ 3 * 'x' }}|{{ [1] + [2] }}|{{ 'a' + 'b' }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true ~ [1] }}|{{ missing ~ 'x' }}", {}),
    ("{{ '%s and %d' % ('x', 3) }}|{{ '%05.2f' % 3.14159 }}|{{ '%r' % 'q' }}", {}),
    # comparisons and logic
    ("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 1 == 1.0 }}|{{ 'a' != 'b' }}|{{ [1, 2] < [1, 3] }}", {}),
    ("{{ 'b' in 'abc' }}|{{ 2 not in [1] }}|{{ 'k' in {'k': 1} }}|{{ 'x' in missing }}", {}),
    ("{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ not 0 }}|{{ none or [] or 'last' }}|{{ '' and 1 }}", {}),
    ("{{ 'yes' if 0 else 'no' }}|{{ 'yes' if 0 }}|{{ 'a' if 1 else 'b' if 0 else 'c' }}", {}),
    ("{{ not x is defined }}|{{ x is not defined }}|{{ -1 | abs }}", {}),
    # strings by code point
    ("{{ s | length }}|{{ s[1] }}|{{ s[-1] }}|{{ s[::-1] }}|{{ s[1:3] }}|{{ s[:-1] }}|{{ s[::2] }}",
     {"s": "h\u00e9llo\U0001F600"}),
    ("{{ s.upper() }}|{{ s.lower() }}|{{ s.title() }}|{{ s.capitalize() }}|{{ s.swapcase() }}",
     {"s": "hEllo wORLD \u00e9t\u00e9"}),
    ("{{ s.split() }}|{{ s.split(',') }}|{{ s.split(',', 1) }}|{{ s.rsplit(',', 1) }}|{{ s.strip() }}",
     {"s": "  a,b ,, c  "}),
    ("{{ s.lstrip('x') }}|{{ s.rstrip('yx') }}|{{ s.strip('xy') }}", {"s": "xxhixyy"}),
    ("{{ s.startswith('ab') }}|{{ s.endswith(('z', 'c')) }}|{{ s.find('c') }}|{{ s.rfind('b') }}|{{ s.count('b') }}",
     {"s": "abcabc"}),
    ("{{ s.replace('a', '<') }}|{{ s.replace('a', '', 1) }}|{{ '-'.join(['a', 'b']) }}|{{ s.index('b') }}",
     {"s": "banana"}),
    ("{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{0}{name}'.format('r', name='n') }}", {}),
    ("{{ 'abc'.isalpha() }}{{ '12'.isdigit() }}{{ ' '.isspace() }}{{ 'ab'.islower() }}{{ 'AB'.isupper() }}", {}),
    ("{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ 'x=y=z'.partition('=') }}|{{ '5'.zfill(3) }}|{{ 'x'.center(5) }}|", {}),
    ("{{ s.split('</think>')[-1].lstrip('\\n') }}", {"s": "a</think>\n\nb"}),
    # filters
    ("{{ '  x ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}", {}),
    ("{{ 'hello wORLD-foo(bar' | title }}|{{ 'aBC dEF' | capitalize }}", {}),
    ("{{ [3, 1, 2] | sort }}|{{ [3, 1, 2] | sort(reverse=true) }}|{{ ['b', 'A', 'a'] | sort }}"
     "|{{ ['b', 'A', 'a'] | sort(case_sensitive=true) }}", {}),
    ("{{ items | sort(attribute='n') | map(attribute='n') | list }}", {"items": [{"n": 3}, {"n": 1}, {"n": 2}]}),
    ("{{ [1, 2] | first }}|{{ [1, 2] | last }}|{{ 'abc' | first }}|{{ [] | first }}|{{ 'abc' | last }}", {}),
    ("{{ [1, 2, 3] | length }}|{{ 'abc' | count }}|{{ {'a': 1} | length }}|{{ missing | length }}", {}),
    ("{{ [1, 2, 3] | join }}|{{ [1, 2, 3] | join(', ') }}|{{ items | join('/', attribute='n') }}",
     {"items": [{"n": "a"}, {"n": "b"}]}),
    ("{{ 'abc' | list }}|{{ {'a': 1, 'b': 2} | list }}|{{ [1, 2] | reverse | list }}|{{ 'abc' | reverse }}", {}),
    ("{{ ['a', 'A', 'b', 'a'] | unique | list }}|{{ ['a', 'A'] | unique(case_sensitive=true) | list }}", {}),
    ("{{ [1, 2, 3] | sum }}|{{ [1.5, 2] | sum }}|{{ items | sum(attribute='n') }}|{{ [1] | sum(start=10) }}",
     {"items": [{"n": 1}, {"n": 2}]}),
    ("{{ [4, 2, 9] | min }}|{{ [4, 2, 9] | max }}|{{ ['b', 'A'] | min }}|{{ [] | max }}", {}),
    ("{{ items | map(attribute='n') | join(',') }}|{{ ['a', 'b'] | map('upper') | list }}",
     {"items": [{"n": 1}, {"n": 2}]}),
    ("{{ items | selectattr('n', 'gt', 1) | list }}|{{ items | rejectattr('n', 'equalto', 2) | list }}"
     "|{{ items | selectattr('flag') | list }}",
     {"items": [{"n": 1, "flag": True}, {"n": 2, "flag": False}, {"n": 3}]}),
    ("{{ [1, 2, 3, 4] | select('even') | list }}|{{ [1, 0, 2] | select | list }}"
     "|{{ [1, 2, 3] | reject('equalto', 2) | list }}|{{ ['a', 'b'] | select('in', ['a']) | list }}", {}),
    ("{{ '42' | int + 1 }}|{{ '4.5' | int }}|{{ 'x' | int(7) }}|{{ 4.9 | int }}|{{ true | int }}|{{ ' 12 ' | int }}", {}),
    ("{{ '2.5' | float }}|{{ 'x' | float }}|{{ 3 | float }}|{{ '1e3' | float }}", {}),
    ("{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 3.14159 | round(2) }}|{{ 2.1 | round(0, 'ceil') }}"
     "|{{ 2.9 | round(method='floor') }}|{{ 3 | round }}", {}),
    ("{{ -3 | abs }}|{{ -2.5 | abs }}|{{ 5 | string }}|{{ none | string }}|{{ [1] | string }}", {}),
    ("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}"
     "|{{ 'a\\nb' | indent('> ') }}", {}),
    ("{{ [1, 2, 3] | batch(2) | list }}|{{ [1, 2, 3] | batch(2, 'x') | list }}", {}),
    ("{{ 'a b  c, d-e' | wordcount }}|{{ '%s-%d' | format('x', 3) }}|{{ '%(a)s' | format(a='k') }}", {}),
    ("{{ '<b>&\"\\'' | escape }}|{{ '<b>' | e }}|{{ '<b>' | safe }}|{{ ('<b>' | safe) + '<i>' }}", {}),
    ("{{ d | items | list }}|{{ d | dictsort }}|{{ d | dictsort(reverse=true) }}|{{ d | dictsort(by='value') }}",
     {"d": {"b": 1, "A": 3, "c": 2}}),
    ("{{ missing | default('dflt') }}|{{ '' | default('e') }}|{{ '' | default('e', true) }}|{{ 0 | d(5, true) }}", {}),
    ("{{ 'x' | center(7) }}|{{ items | map(attribute='z', default='-') | list }}", {"items": [{"n": 1}]}),
    ("{{ d | attr('k') }}|{{ 'abc' | replace('b', 'B') }}|{{ 1 | replace('1', 'one') }}", {"d": {"k": 1}}),
    # tojson
    ("{{ v | tojson }}", {"v": {"b": [1, 2.5, True, None], "a": "<&'\u00e9\U0001F600>", "c": {"z": 1, "y": 2}}}),
    ("{{ v | tojson(indent=2) }}|{{ v | tojson(4) }}", {"v": {"a": [1, {}], "e": {}, "l": []}}),
    ("{{ 'x\\n\"y\"\\t\\u0001\\u007f' | tojson }}|{{ [1.0, 1e-7, 1e20] | tojson }}", {}),
    ("{{ '<a>' + 1 | tojson + '<b>' }}|{{ 'a' ~ [1] | tojson ~ '<' }}", {}),
    # tests
    ("{{ 1 is number }}{{ true is number }}{{ true is boolean }}{{ 1 is integer }}{{ 1.0 is float }}{{ 1 is float }}", {}),
    ("{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ none is none }}"
     "{{ missing is iterable }}{{ 1 is iterable }}", {}),
    ("{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ 4 is even }}{{ false is false }}{{ true is true }}{{ 2 is in [1, 2] }}", {}),
    ("{{ 'a' is lower }}{{ 'A' is upper }}{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is ge 2 }}"
     "{{ none is sameas none }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}", {}),
    ("{{ x is defined }}{{ x is undefined }}{{ x.y is defined }}{{ d.k is defined }}{{ d.z is defined }}",
     {"x": {"y": 1}, "d": {"k": None}}),
    # for loops
    ("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}", {}),
    ("{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}", {"x": 9}),
    ("{% set ns = namespace(n=0, items=[]) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
     "{% set _ = ns.items.append(i) %}{% endfor %}{{ ns.n }}{{ ns.items }}", {}),
    ("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{{ ',' if not loop.last }}{% endfor %}", {}),
    ("{% for i in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}", {}),
    ("{% for i in [] %}x{% else %}empty{% endfor %}|{% for i in [1] if i > 5 %}x{% else %}none{% endfor %}", {}),
    ("{% for i in range(10) if i is odd %}{{ i }}{{ loop.index }}{% if i > 4 %}{% break %}{% endif %}{% endfor %}", {}),
    ("{% for i in range(5) %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("{% for i in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.depth }}{% endfor %}", {}),
    ("{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}|{% for i in range(3) %}{{ i }}{% endfor %}", {}),
    ("{% for x in t recursive %}{{ x.n }}{{ loop.depth }}{% if x.c %}({{ loop(x.c) }}){% endif %}{% endfor %}",
     {"t": [{"n": 1, "c": [{"n": 2, "c": [{"n": 4}]}]}, {"n": 3}]}),
    ("{% for m in messages %}{{ m }}{% endfor %}{% for i in [1] %}{% for j in [2] %}{{ loop.index }}{{ i }}{{ j }}"
     "{% endfor %}{% endfor %}", {}),
    ("{% for i in [3, 1, 3] %}{% if loop.changed(i) %}{{ i }}{% endif %}{% endfor %}", {}),
    # set, macros, call, filter blocks
    ("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (3, 4) %}{{ c }}", {}),
    ("{% set x %}a{{ 1 }}b{% endset %}{{ x }}|{% set y | upper %}up{% endset %}{{ y }}", {}),
    ("{% macro m(a, b='d', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, c=2) }}|{{ m() }}", {}),
    ("{% macro m() %}{{ flag }}{% endmacro %}{% set flag = 'late' %}{{ m() }}", {}),
    ("{% macro m(x) %}[{{ caller() }}{{ x }}]{% endmacro %}{% call m(1) %}in{% endcall %}", {}),
    ("{% macro m(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(y) m(4) %}got {{ y }}{% endcall %}", {}),
    ("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}", {}),
    ("{% macro outer(v) %}{% macro inner() %}<{{ v }}>{% endmacro %}{{ inner() }}{% endmacro %}{{ outer(5) }}", {}),
    ("{% filter upper %}up {{ 'x' }}{% endfilter %}|{% filter replace('a', 'b') | upper %}aa{% endfilter %}", {}),
    ("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}", {}),
    # dicts, lists, namespaces
    ("{{ m.content }}|{{ m.get('role') }}|{{ m.get('x', 'dflt') }}|{{ m.get('x') }}|{{ 'role' in m }}|{{ m['role'] }}",
     {"m": {"role": "user", "content": "hi"}}),
    ("{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.items() | list }}|{{ d['items'] is callable }}",
     {"d": {"a": 1, "items": 2}}),
    ("{% set l = [3] %}{% set _ = l.append(1) %}{{ l }}{{ l.pop(0) }}{{ l }}{{ l.index(1) }}{{ [1, 1].count(1) }}", {}),
    ("{% set d = {'a': 1} %}{% set _ = d.update({'b': 2}) %}{{ d }}{{ d.pop('a') }}{{ d }}{{ d.setdefault('c', 3) }}", {}),
    ("{% set ns = namespace(a=1) %}{{ ns.a }}{{ ns.missing }}{% set ns.b = [ns.a] %}{{ ns.b }}", {}),
    ("{{ dict(a=1, b='x') }}|{{ namespace({'k': 2}).k }}|{{ [1, 2, 3][1:] }}|{{ [1, 2, 3][-2:] }}", {}),
    ("{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}"
     "{% set j = joiner('|') %}{{ j() }}x{{ j() }}y", {}),
    ("{{ x[0] }}|{{ x.0 }}|{{ x[5] }}|{{ x[-1] }}", {"x": [1, 2]}),
    ("{{ (m.content or '') | length }}|{{ m.tool_calls | length }}", {"m": {"content": None}}),
    ("{{ none.x }}|{{ none.x is defined }}|{{ d | attr('get') is callable }}", {"d": {}}),
]


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_snippet_renders_as_jinja2(index: int, vocab_model: strata.Model, specials: tuple[str, str]) -> None:
    source, variables = SNIPPETS[index]
    bos, eos = specials
    assert_same(vocab_model, bos, eos, source, [], True, variables, f"snippet {index} {source!r}")


# Snippets that jinja2 rejects: strata must reject them too (status checked by assert_same).
FAILING_SNIPPETS: list[tuple[str, dict]] = [
    ("{{ missing + 1 }}", {}),
    ("{{ missing.attr }}", {}),
    ("{{ missing() }}", {}),
    ("{{ {} + 'a' }}", {}),
    ("{{ 'a' + 1 }}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{{ 1 // 0 }}", {}),
    ("{{ 1 < 'a' }}", {}),
    ("{{ 1 | tojson(ensure_ascii=false) }}", {}),
    ("{{ missing | tojson }}", {}),
    ("{% set a, b = [1] %}", {}),
    ("{% set x = 1 %}{% set x.y = 2 %}", {}),
    ("{{ raise_exception('Conversation roles must alternate user/assistant') }}", {}),
    ("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}),
    ("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", {}),
    ("{{ 'abc'.index('z') }}", {}),
    ("{{ [].pop() }}", {}),
    ("{{ x | dictsort }}", {"x": [1]}),
    ("{{ 'x' | frobnicate }}", {}),
    ("{% if x %}unclosed", {}),
    ("{% for %}", {}),
    ("{{ 1 + }}", {}),
    ("{# unclosed comment", {}),
    ("{% endfor %}", {}),
    ("{{ (1 }}", {}),
    ("{% frobnicate %}", {}),
    ("{{ x is frobnicated }}", {}),
]


@pytest.mark.parametrize("index", range(len(FAILING_SNIPPETS)))
def test_failing_snippet_fails_as_in_jinja2(index: int, vocab_model: strata.Model, specials: tuple[str, str]) -> None:
    source, variables = FAILING_SNIPPETS[index]
    bos, eos = specials
    want, err = reference(source, [], True, bos, eos, variables)
    assert err is not None, f"jinja2 rendered {source!r} as {want!r}: the case is wrong"
    assert_same(vocab_model, bos, eos, source, [], True, variables, f"failing snippet {source!r}")


def random_text(rng: np.random.Generator) -> str:
    pieces = ["hello", "world", " ", "\n", "<", ">", "&", "'", '"', "\\", "\u00e9", "\U0001F600", "\u4e2d",
              "</think>", "<think>", "<tool_response>", "{", "}", "%", "#", "\t", "  "]
    return "".join(pieces[i] for i in rng.integers(0, len(pieces), size=int(rng.integers(0, 12))))


def random_conversation(rng: np.random.Generator) -> tuple[list, dict]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": random_text(rng)})
    for turn in range(int(rng.integers(1, 5))):
        messages.append({"role": "user", "content": random_text(rng)})
        if rng.random() < 0.8:
            m: dict[str, Any] = {"role": "assistant", "content": random_text(rng)}
            if rng.random() < 0.3:
                m["reasoning_content"] = random_text(rng)
            if rng.random() < 0.2:
                args: Any = {"q": random_text(rng), "n": int(rng.integers(0, 100))}
                if rng.random() < 0.5:
                    args = json.dumps(args)
                m["tool_calls"] = [{"id": f"call_{turn}", "type": "function",
                                    "function": {"name": "search", "arguments": args}}]
            messages.append(m)
            if "tool_calls" in m:
                messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": random_text(rng)})
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        extra["tools"] = TOOLS
    if rng.random() < 0.2:
        extra["enable_thinking"] = bool(rng.random() < 0.5)
    return messages, extra


def test_random_conversations_render_as_jinja2(seed: int, fixtures_dir: Path, vocab_model: strata.Model,
                                               specials: tuple[str, str]) -> None:
    rng = np.random.default_rng(seed)
    bos, eos = specials
    sources = {p.stem: p.read_text(encoding="utf-8") for p in fixture_templates(fixtures_dir)}
    for i in range(40):
        messages, extra = random_conversation(rng)
        agp = bool(rng.random() < 0.5)
        for name, source in sources.items():
            assert_same(vocab_model, bos, eos, source, messages, agp, extra, f"seed {seed} case {i} {name}")


# Built-in formats against the real template of each family, on plain conversations.
BUILTIN_FAMILIES = {
    "chatml": "Qwen-Qwen3-0.6B",
    "llama3": "meta-llama-Llama-3.1-8B-Instruct",
    "deepseek3": "deepseek-ai-DeepSeek-V3.1",
    "kimi-k2": "Kimi-K2-Instruct",
}


def plain_conversations() -> list[list[dict]]:
    return [
        [{"role": "user", "content": "Hello!"}],
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}],
        [{"role": "system", "content": "S"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
         {"role": "user", "content": UNICODE}],
        [{"role": "user", "content": " padded \n"}, {"role": "assistant", "content": "x"},
         {"role": "user", "content": "y"}],
    ]


def test_builtin_formats_are_listed() -> None:
    assert strata.chat_builtin_formats() == ["chatml", "llama3", "deepseek3", "kimi-k2"]


@pytest.mark.parametrize("name", sorted(BUILTIN_FAMILIES))
def test_builtin_format_matches_its_family(name: str, fixtures_dir: Path, vocab_model: strata.Model,
                                           specials: tuple[str, str]) -> None:
    real = (fixtures_dir / "chat-templates" / f"{BUILTIN_FAMILIES[name]}.jinja").read_text(encoding="utf-8")
    bos, eos = specials
    for messages in plain_conversations():
        for agp in (True, False):
            want, err = reference(real, messages, agp, bos, eos)
            assert err is None, err
            got = vocab_model.apply_chat_template(messages, agp, template=name)
            assert got == want, f"{name} {messages} agp={agp}:\n  real   {want!r}\n  strata {got!r}"


def test_model_template_is_used_when_none_is_given(tmp_path: Path, fixtures_dir: Path) -> None:
    source = (fixtures_dir / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581a", "\u2581b"]
    w = strata.Writer()
    w.set("general.architecture", "llama")
    w.set("tokenizer.ggml.model", "llama")
    w.set("tokenizer.ggml.tokens", tokens)
    w.set("tokenizer.ggml.scores", np.zeros(len(tokens), dtype=np.float32))
    w.set("tokenizer.ggml.token_type", np.asarray([2, 3, 3] + [6] * 256 + [1, 1], dtype=np.int32))
    w.set("tokenizer.ggml.bos_token_id", 1, type="u32")
    w.set("tokenizer.ggml.eos_token_id", 2, type="u32")
    w.set("tokenizer.chat_template", source)
    path = tmp_path / "vocab-with-template.gguf"
    w.write(path)
    m = strata.Model(path)
    messages = [{"role": "user", "content": "hi"}]
    want, err = reference(source, messages, True, "<s>", "</s>")
    assert err is None
    assert m.apply_chat_template(messages) == want
    # bos_token and eos_token are the vocabulary's texts.
    assert m.apply_chat_template(messages, template="{{ bos_token }}|{{ eos_token }}") == "<s>|</s>"
    # A format name overrides the model's template.
    assert m.apply_chat_template(messages, template="chatml") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_model_without_template_says_so(vocab_model: strata.Model) -> None:
    with pytest.raises(StrataError) as e:
        vocab_model.apply_chat_template([{"role": "user", "content": "hi"}])
    assert e.value.status == NOT_FOUND
    assert "chat template" in str(e.value) and "ggml-vocab-llama-bpe.gguf" in str(e.value)


def _raw_call(model: strata.Model, template: Optional[bytes], messages: Optional[bytes], extra: Optional[bytes] = None
              ) -> tuple[int, str]:
    import ctypes
    from strata import _lib
    n = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(4096)
    st = _lib.fn("strata_chat_apply_template")(model._handle(), template, messages, 1, extra, buf, 4096,
                                               ctypes.byref(n))
    return st, (_lib.last_error() if st else buf.raw[:n.value].decode())


def test_errors_carry_status_and_message(vocab_model: strata.Model) -> None:
    t = b"{{ messages | length }}"
    st, msg = _raw_call(vocab_model, t, b"[{\"role\": ")
    assert st == INVALID_ARGUMENT and "messages_json" in msg and "JSON" in msg
    st, msg = _raw_call(vocab_model, t, b"{\"role\": \"user\"}")
    assert st == INVALID_ARGUMENT and "array" in msg
    st, msg = _raw_call(vocab_model, t, b"[\"\xff\xfe\"]")
    assert st == INVALID_ARGUMENT and "messages_json" in msg
    st, msg = _raw_call(vocab_model, t, b"[]", b"[1, 2]")
    assert st == INVALID_ARGUMENT and "extra_json" in msg
    st, msg = _raw_call(vocab_model, t, None)
    assert st == INVALID_ARGUMENT and "messages_json" in msg
    st, msg = _raw_call(vocab_model, b"line 1\n{% for m in messages %}\n{{ m ", b"[]")
    assert st == FORMAT and "line 3" in msg
    st, msg = _raw_call(vocab_model, b"{% if true %}never closed", b"[]")
    assert st == FORMAT and "'if'" in msg
    st, msg = _raw_call(vocab_model, b"\n\n{{ 'x' | truncate(2) }}", b"[]")
    assert st == UNSUPPORTED and "line 3" in msg and "'truncate'" in msg
    st, msg = _raw_call(vocab_model, b"{% include 'x.j2' %}", b"[]")
    assert st == UNSUPPORTED and "include" in msg
    st, msg = _raw_call(vocab_model, b"{{ raise_exception('no tools here') }}", b"[]")
    assert st == INVALID_ARGUMENT and msg == "no tools here"
    st, msg = _raw_call(vocab_model, b"{% for i in range(100000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                        b"[]")
    assert st == INVALID_ARGUMENT and "steps" in msg
    st, msg = _raw_call(vocab_model, b"{{ 'x' * 100000000 }}", b"[]")
    assert st == INVALID_ARGUMENT and "bytes" in msg
    st, msg = _raw_call(vocab_model, b"{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", b"[]")
    assert st == INVALID_ARGUMENT and "recursion" in msg


def test_buffer_too_small_reports_the_length(vocab_model: strata.Model) -> None:
    import ctypes
    from strata import _lib
    n = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(4)
    st = _lib.fn("strata_chat_apply_template")(vocab_model._handle(), b"0123456789", b"[]", 1, None, buf, 4,
                                               ctypes.byref(n))
    assert st == 6 and n.value == 10
    buf = ctypes.create_string_buffer(11)
    assert _lib.fn("strata_chat_apply_template")(vocab_model._handle(), b"0123456789", b"[]", 1, None, buf, 11,
                                                 ctypes.byref(n)) == 0
    assert buf.value == b"0123456789"
