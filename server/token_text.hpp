// token_text.hpp: what the engines need of the vocabulary (safe to call from any thread once
// the model is loaded).
#pragma once

#include <cstdint>
#include <string>

namespace server {

class TokenText {
public:
    virtual ~TokenText() = default;
    virtual std::string piece(int32_t token) = 0;  // the bytes the token contributes
    virtual bool is_end_of_generation(int32_t token) = 0;
};

}  // namespace server
