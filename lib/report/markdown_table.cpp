#include "report/markdown_table.hpp"

namespace strata::report {

std::string md_cell(const std::string& text, size_t max_chars) {
    std::string out;
    size_t n = 0;
    for (char c : text) {
        if (n >= max_chars) {
            out += "...";
            break;
        }
        if (c == '|') out += "\\|";
        else if (c == '\n' || c == '\r') out += ' ';
        else out += c;
        ++n;
    }
    return out;
}

std::string md_code(const std::string& text) {
    std::string t = text;
    for (char& c : t)
        if (c == '`') c = '\'';
    return "`" + md_cell(t, 1000) + "`";
}

std::string MarkdownTable::str() const {
    auto line = [](const std::vector<std::string>& cells, size_t n) {
        std::string s = "|";
        for (size_t i = 0; i < n; ++i) s += " " + (i < cells.size() ? cells[i] : std::string()) + " |";
        return s + "\n";
    };
    const size_t n = header_.size();
    std::string out = line(header_, n) + "|";
    for (size_t i = 0; i < n; ++i) out += "---|";
    out += "\n";
    for (const auto& r : rows_) out += line(r, n);
    return out;
}

}  // namespace strata::report
