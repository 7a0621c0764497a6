// text_stream.cpp: holding back split UTF-8 characters and possible stop-string starts.
#include "text_stream.hpp"

#include <algorithm>
#include <utility>

namespace server {

size_t incomplete_utf8_tail(std::string_view text) {
    // Look back at most 3 bytes for the lead byte of the last character.
    const size_t n = text.size();
    for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
        const unsigned char c = static_cast<unsigned char>(text[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking
        size_t need = 1;
        if ((c & 0xE0) == 0xC0) need = 2;
        else if ((c & 0xF0) == 0xE0) need = 3;
        else if ((c & 0xF8) == 0xF0) need = 4;
        return need > back ? back : 0;  // an invalid lead byte counts as complete (sent as U+FFFD)
    }
    return 0;
}

std::string TextStream::push(std::string_view bytes) {
    if (stopped_) return {};
    pending_.append(bytes);
    // Earliest stop string in what is pending; nothing before pending_ can hold one (see below).
    size_t cut = std::string::npos;
    for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, cut);
        pending_.clear();
        return out;
    }
    // Hold back the longest tail that a stop string begins with, so that a stop string is
    // always found whole inside pending_, and an unfinished character.
    size_t hold = incomplete_utf8_tail(pending_);
    for (const auto& s : stops_) {
        for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len) {
            if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
        }
    }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string TextStream::flush() {
    if (stopped_) return {};
    return std::exchange(pending_, std::string());
}

}  // namespace server
