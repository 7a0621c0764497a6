// The global names every template sees: range, namespace, dict, cycler, joiner, lipsum (not
// supported), and the two Hugging Face adds: raise_exception(message) and strftime_now(format).
#pragma once

#include <memory>

#include "chat/jinja_eval.hpp"

namespace strata::chat {

std::shared_ptr<Scope> make_globals();

}  // namespace strata::chat
