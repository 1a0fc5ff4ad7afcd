#include "sim/harness/worker_pool.h"

namespace lockbench::sim {

WorkerPool::WorkerPool(int threads) {
    for (int t = 1; t < threads; ++t) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() {
    {
        const std::lock_guard<std::mutex> hold(mutex_);
        stop_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
}

void WorkerPool::run(std::size_t n, const std::function<void(std::size_t)>& task) {
    {
        const std::lock_guard<std::mutex> hold(mutex_);
        task_ = &task;
        n_ = n;
        next_ = 0;
        error_ = nullptr;
        busy_ = static_cast<int>(threads_.size());
        ++batch_;
    }
    start_.notify_all();
    work();
    std::unique_lock<std::mutex> hold(mutex_);
    finished_.wait(hold, [this] { return busy_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

// Takes the batch's next task until none is left. n_ and task_ are set before the batch
// starts and stay until every thread has left it.
void WorkerPool::work() {
    for (std::size_t i = next_++; i < n_; i = next_++) {
        try {
            (*task_)(i);
        } catch (...) {
            const std::lock_guard<std::mutex> hold(mutex_);
            if (!error_) error_ = std::current_exception();
            next_ = n_;
        }
    }
}

void WorkerPool::loop() {
    std::size_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> hold(mutex_);
            start_.wait(hold, [&] { return stop_ || batch_ != seen; });
            if (stop_) return;
            seen = batch_;
        }
        work();
        const std::lock_guard<std::mutex> hold(mutex_);
        if (--busy_ == 0) finished_.notify_all();
    }
}

}  // namespace lockbench::sim
