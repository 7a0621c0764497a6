// The one compute thread that all of a worker's connections share. A request's stage work runs
// there while the io thread keeps receiving, answering heartbeats and sending them; the answer
// comes back to the io thread, where the connection's coroutine resumes. One thread, so that
// two sequences never compete for the same cores and memory bandwidth.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>

#include "transport/connection.hpp"
#include "transport/messages.hpp"

namespace strata::pipeline::detail {

class ComputeThread {
public:
    explicit ComputeThread(boost::asio::io_context& io) : io_(io) {}
    ~ComputeThread();  // waits for the job in progress
    ComputeThread(const ComputeThread&) = delete;
    ComputeThread& operator=(const ComputeThread&) = delete;

    // Runs `job` on the compute thread, behind the jobs queued before it; resumes on the io
    // thread with its answer, or with the error answer for what it threw.
    transport::Task<transport::Message> run(std::function<transport::Message()> job);

private:
    boost::asio::io_context& io_;
    boost::asio::thread_pool pool_{1};
};

}  // namespace strata::pipeline::detail
