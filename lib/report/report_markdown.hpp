// The readable rendering of a report file. It is rendered from the JSON text itself (after
// validation), so the Markdown can only say what the file says: bytes in IEC units beside the
// exact count, publisher labels under "publisher labels (unverified)", configured and observed
// transport settings side by side, every derived figure beside the figures it came from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::report {

struct MarkdownImage {
    std::string caption;  // "Memory over time (head)"
    std::string path;     // relative to the Markdown file
};

// Throws Error format listing the problems when the text is not a valid report.
std::string render_markdown(std::string_view report_json, const std::vector<MarkdownImage>& images = {});

}  // namespace strata::report
