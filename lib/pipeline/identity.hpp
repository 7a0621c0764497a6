// The model identity digest as the wire carries it (32 raw bytes in hello), from the 64 hex
// characters gguf::model_identity and strata_model_identity give.
#pragma once

#include <string>

#include "transport/messages.hpp"

namespace strata::pipeline {

// Throws invalid_argument unless `hex` is 64 hex characters.
transport::Digest parse_identity(const std::string& hex);

}  // namespace strata::pipeline
