#include "pipeline/worker_compute.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "pipeline/worker_reply.hpp"

namespace strata::pipeline::detail {
namespace asio = boost::asio;
using transport::Message;

ComputeThread::~ComputeThread() { pool_.join(); }

transport::Task<Message> ComputeThread::run(std::function<Message()> job) {
    auto initiate = [this, job = std::move(job)](auto handler) mutable {
        // The work guard keeps io.run() going while the answer is on its way back.
        asio::post(pool_, [this, job = std::move(job), handler = std::move(handler),
                           work = asio::make_work_guard(io_)]() mutable {
            Message answer;
            try {
                answer = job();
            } catch (...) {
                answer = current_exception_reply();
            }
            asio::post(io_, [handler = std::move(handler), answer = std::move(answer)]() mutable {
                handler(std::move(answer));
            });
        });
    };
    // GCC 12: the awaited operation is a named object (see transport/handshake.cpp).
    auto operation = asio::async_initiate<const asio::use_awaitable_t<>&, void(Message)>(std::move(initiate),
                                                                                        asio::use_awaitable);
    Message answer = co_await std::move(operation);
    co_return answer;
}

}  // namespace strata::pipeline::detail
