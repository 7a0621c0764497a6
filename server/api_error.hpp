// api_error.hpp: an OpenAI-style error ({"error": {"message", "type", "param", "code"}}) with
// the HTTP status it is sent with. Thrown while a request is parsed or checked; the routes
// turn it into the response.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace server {

struct ApiError : std::runtime_error {
    ApiError(int status_code, std::string message, std::string error_type = "invalid_request_error",
             std::string error_param = "", std::string error_code = "")
        : std::runtime_error(message),
          status(status_code),
          type(std::move(error_type)),
          param(std::move(error_param)),
          code(std::move(error_code)) {}

    int status;
    std::string type;   // invalid_request_error, authentication_error, server_error, ...
    std::string param;  // the request field at fault ("" when none: JSON null)
    std::string code;   // a machine-readable reason ("" when none: JSON null)
};

// The error object's JSON.
nlohmann::json error_body(const ApiError& error);

// A bad request naming the field.
inline ApiError invalid_field(const std::string& field, const std::string& what) {
    return ApiError(400, "'" + field + "' " + what, "invalid_request_error", field, "invalid_value");
}

// JSON text of a value; invalid UTF-8 (a model may emit any bytes) becomes U+FFFD instead of
// an exception.
std::string json_text(const nlohmann::json& value);

}  // namespace server
