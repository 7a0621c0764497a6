// A Markdown table builder: cells are escaped so that a '|' or a newline in a value (a path, a
// model's output) cannot break the table.
#pragma once

#include <string>
#include <vector>

namespace strata::report {

class MarkdownTable {
public:
    explicit MarkdownTable(std::vector<std::string> header) : header_(std::move(header)) {}
    MarkdownTable& row(std::vector<std::string> cells) {
        rows_.push_back(std::move(cells));
        return *this;
    }
    bool empty() const { return rows_.empty(); }
    std::string str() const;

private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

// Text made safe for one table cell: '|' escaped, newlines as spaces, cut to max_chars.
std::string md_cell(const std::string& text, size_t max_chars = 200);

// `code` span (backticks inside are replaced).
std::string md_code(const std::string& text);

}  // namespace strata::report
