// api_error.cpp: the error object and safe JSON text.
#include "api_error.hpp"

namespace server {

nlohmann::json error_body(const ApiError& error) {
    auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
    return {{"error",
             {{"message", error.what()}, {"type", error.type}, {"param", or_null(error.param)},
              {"code", or_null(error.code)}}}};
}

std::string json_text(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace server
