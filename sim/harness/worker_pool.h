// A fixed set of threads that run one batch of tasks at a time (explore's schedules, its
// shrinks). The threads live as long as the pool, so that what each one caches (its Lua states
// with their compiled scripts, its allocator's free lists) lasts across batches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lockbench::sim {

class WorkerPool {
public:
    // `threads` in all, the caller of run() counted: threads - 1 are started.
    explicit WorkerPool(int threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Runs task(i) for every i below n, on the pool's threads and the caller's, and returns once
    // every one has ended. The first exception is rethrown here (the tasks not yet begun are
    // dropped).
    void run(std::size_t n, const std::function<void(std::size_t)>& task);

    // The results of fn(i) for every i below n, by index, whatever order the threads took.
    template <class T, class F>
    std::vector<T> map(std::size_t n, F fn) {
        std::vector<T> out(n);
        run(n, [&](std::size_t i) { out[i] = fn(i); });
        return out;
    }

private:
    void work();
    void loop();

    std::mutex mutex_;
    std::condition_variable start_, finished_;
    const std::function<void(std::size_t)>* task_ = nullptr;
    std::size_t n_ = 0;
    std::atomic<std::size_t> next_{0};
    std::size_t batch_ = 0;  // which batch the threads are to run
    int busy_ = 0;           // threads still in the current batch
    bool stop_ = false;
    std::exception_ptr error_;
    std::vector<std::thread> threads_;
};

}  // namespace lockbench::sim
