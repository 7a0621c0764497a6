// Python str operations on UTF-8 text. Case mapping covers ASCII, Latin-1, Latin Extended-A,
// Greek and Cyrillic (the scripts chat templates and their messages case-map in practice);
// other scripts are left as they are.
#include <algorithm>

#include "chat/jinja_builtins.hpp"
#include "chat/jinja_error.hpp"

namespace strata::chat {

namespace {

uint32_t to_lower_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x130) return 'i';
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
        if (c == 0x178) return 0xFF;
        if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (c >= 0x460 && c <= 0x4FF && c != 0x482 && !(c >= 0x483 && c <= 0x489) && !(c >= 0x4C0 && c <= 0x4CF))
        return (c & 1) ? c : c + 1;
    return c;
}

uint32_t to_upper_cp(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
    if (c == 0xB5) return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c >= 0x100 && c <= 0x17F) {
        if (c == 0x131) return 'I';
        if (c == 0x17F) return 'S';
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
        if (c == 0x130 || c == 0x138 || c == 0x149 || c == 0x178) return c;
        return (c & 1) ? c - 1 : c;
    }
    if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
    if (c == 0x3C2) return 0x3A3;
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 37;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 63;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if (c >= 0x460 && c <= 0x4FF && c != 0x482 && !(c >= 0x483 && c <= 0x489) && !(c >= 0x4C0 && c <= 0x4CF))
        return (c & 1) ? c - 1 : c;
    return c;
}

bool is_cased(uint32_t c) { return to_lower_cp(c) != c || to_upper_cp(c) != c || c == 0xDF; }

std::string map_cps(std::string_view s, uint32_t (*f)(uint32_t)) {
    std::string out;
    out.reserve(s.size());
    for (uint32_t cp : utf8_decode(s)) {
        if (f == to_upper_cp && cp == 0xDF) {  // ß -> SS, as Python's full case mapping
            out += "SS";
            continue;
        }
        utf8_append(out, f(cp));
    }
    return out;
}

}  // namespace

bool py_isspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string py_lower(std::string_view s) { return map_cps(s, to_lower_cp); }
std::string py_upper(std::string_view s) { return map_cps(s, to_upper_cp); }

std::string py_capitalize(std::string_view s) {
    auto cps = utf8_decode(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) utf8_append(out, i == 0 ? to_upper_cp(cps[i]) : to_lower_cp(cps[i]));
    return out;
}

std::string py_title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (uint32_t cp : utf8_decode(s)) {
        const bool cased = is_cased(cp);
        utf8_append(out, cased ? (previous_cased ? to_lower_cp(cp) : to_upper_cp(cp)) : cp);
        previous_cased = cased;
    }
    return out;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    auto cps = utf8_decode(s);
    std::vector<uint32_t> set;
    if (chars) set = utf8_decode(*chars);
    auto strip_me = [&](uint32_t cp) {
        return chars ? std::find(set.begin(), set.end(), cp) != set.end() : py_isspace(cp);
    };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strip_me(cps[b])) ++b;
    if (right)
        while (e > b && strip_me(cps[e - 1])) --e;
    return utf8_encode(cps, b, e);
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right, int line) {
    std::vector<std::string> parts;
    if (sep) {
        if (sep->empty()) runtime_error(line, "empty separator");
        if (!from_right) {
            size_t pos = 0;
            while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
                size_t hit = s.find(*sep, pos);
                if (hit == std::string_view::npos) break;
                parts.emplace_back(s.substr(pos, hit - pos));
                pos = hit + sep->size();
            }
            parts.emplace_back(s.substr(pos));
        } else {
            size_t end = s.size();
            std::vector<std::string> rev;
            while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
                if (end < sep->size()) break;
                size_t hit = s.rfind(*sep, end - sep->size());
                if (hit == std::string_view::npos) break;
                rev.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
                end = hit;
            }
            rev.emplace_back(s.substr(0, end));
            parts.assign(rev.rbegin(), rev.rend());
        }
        return parts;
    }
    auto cps = utf8_decode(s);
    if (!from_right) {
        size_t i = 0;
        while (true) {
            while (i < cps.size() && py_isspace(cps[i])) ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t e = cps.size();
                while (e > i && py_isspace(cps[e - 1])) --e;
                parts.push_back(utf8_encode(cps, i, e));
                break;
            }
            size_t j = i;
            while (j < cps.size() && !py_isspace(cps[j])) ++j;
            parts.push_back(utf8_encode(cps, i, j));
            i = j;
        }
        return parts;
    }
    std::vector<std::string> rev;
    size_t e = cps.size();
    while (true) {
        while (e > 0 && py_isspace(cps[e - 1])) --e;
        if (e == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(rev.size()) >= maxsplit) {
            size_t b = 0;
            while (b < e && py_isspace(cps[b])) ++b;
            rev.push_back(utf8_encode(cps, b, e));
            break;
        }
        size_t b = e;
        while (b > 0 && !py_isspace(cps[b - 1])) --b;
        rev.push_back(utf8_encode(cps, b, e));
        e = b;
    }
    parts.assign(rev.rbegin(), rev.rend());
    return parts;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement around every character.
        auto cps = utf8_decode(s);
        int64_t done = 0;
        for (size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || done < count) {
                out += repl;
                ++done;
            }
            if (i < cps.size()) utf8_append(out, cps[i]);
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t hit = s.find(old, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos));
        out.append(repl);
        pos = hit + old.size();
        ++done;
    }
    out.append(s.substr(pos));
    return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> lines;
    auto cps = utf8_decode(s);
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
        uint32_t c = cps[i];
        bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                   c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!brk) continue;
        size_t end = i;
        if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        lines.push_back(utf8_encode(cps, start, keepends ? i + 1 : end));
        start = i + 1;
    }
    if (start < cps.size()) lines.push_back(utf8_encode(cps, start, cps.size()));
    return lines;
}

}  // namespace strata::chat
