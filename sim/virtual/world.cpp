#include "sim/virtual/world.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define LOCKBENCH_TSAN 1
#endif

namespace lockbench::sim {

namespace {

// ThreadSanitizer follows a switch of stacks only when told (each fiber is one of its
// fibers); without it, it sees one thread's stack change under it and reports nonsense.
void* tsan_new_fiber() {
#ifdef LOCKBENCH_TSAN
    return __tsan_create_fiber(0);
#else
    return nullptr;
#endif
}

void tsan_switch(void* to) {
#ifdef LOCKBENCH_TSAN
    if (to) __tsan_switch_to_fiber(to, 0);
#else
    (void)to;
#endif
}

void tsan_destroy(void* fiber) {
#ifdef LOCKBENCH_TSAN
    if (fiber) __tsan_destroy_fiber(fiber);
#else
    (void)fiber;
#endif
}

}  // namespace

World::World(std::uint64_t seed) : random_(seed) {
#ifdef LOCKBENCH_TSAN
    tsan_world_ = __tsan_get_current_fiber();
#endif
}

World::~World() {
    // Fibers still blocked are abandoned with their stacks: nothing on them owns anything
    // outside the world (their objects are destroyed with the world's owners).
    for (auto& f : fibers_) tsan_destroy(f->tsan_fiber_);
}

void World::at(VTime t, std::function<void()> f) {
    if (t < now_) t = now_;
    events_.push(Event{t, seq_++, std::move(f)});
}

Fiber* World::spawn(std::string name, std::function<void()> body, std::size_t stack_bytes) {
    auto fiber = std::make_unique<Fiber>();
    Fiber* f = fiber.get();
    f->name_ = std::move(name);
    f->body_ = std::move(body);
    f->stack_.reset(new char[stack_bytes]);
    f->context_ = boost::context::detail::make_fcontext(f->stack_.get() + stack_bytes, stack_bytes, &World::trampoline);
    f->tsan_fiber_ = tsan_new_fiber();
    fibers_.push_back(std::move(fiber));
    f->waiting_ = true;
    const std::uint64_t token = ++f->wake_id_;
    at(now_, [this, f, token] { wake(f, token); });
    return f;
}

// The first frame of every fiber: runs the body and catches the kill that unwinds it. The
// world passes itself on the first switch.
void World::trampoline(boost::context::detail::transfer_t from) {
    World* w = static_cast<World*>(from.data);
    w->world_context_ = from.fctx;
    Fiber* f = w->current_;
    try {
        if (!f->killed_) f->body_();
    } catch (const FiberKilled&) {
    } catch (...) {
        f->error_ = std::current_exception();  // rethrown by resume(), on the world's stack
    }
    f->finished_ = true;
    // Back to the world for good (an fcontext function must not return); its stack is freed there.
    tsan_switch(w->tsan_world_);
    boost::context::detail::jump_fcontext(w->world_context_, nullptr);
}

std::uint64_t World::prepare_wait() {
    Fiber* f = current_;
    if (!f) throw std::logic_error("World::prepare_wait outside a fiber");
    return ++f->wake_id_;
}

void World::wait() {
    Fiber* f = current_;
    if (f->killed_) {
        if (std::uncaught_exceptions() > 0) return;  // unwinding: nothing may block now
        throw FiberKilled{};
    }
    f->waiting_ = true;
    yield_to_world();
}

void World::wake(Fiber* f, std::uint64_t token) {
    if (!f || f->finished_ || !f->waiting_ || token != f->wake_id_) return;
    f->waiting_ = false;
    resume(f);
}

void World::sleep_until(VTime t) {
    Fiber* f = current_;
    const std::uint64_t token = prepare_wait();
    at(t, [this, f, token] { wake(f, token); });
    wait();
}

void World::kill(Fiber* f) {
    if (!f || f->finished_) return;
    f->killed_ = true;
    if (f == current_) throw FiberKilled{};
    // Let it unwind now, from the world, so that its destructors run in order.
    if (f->waiting_) {
        f->waiting_ = false;
        ++f->wake_id_;
        at(now_, [this, f] { resume(f); });
    }
}

void World::resume(Fiber* f) {
    current_ = f;
    tsan_switch(f->tsan_fiber_);
    f->context_ = boost::context::detail::jump_fcontext(f->context_, this).fctx;
    current_ = nullptr;
    if (f->finished_) f->stack_.reset();  // back on the world's stack: its own can go
    if (f->error_) std::rethrow_exception(std::exchange(f->error_, nullptr));
}

void World::yield_to_world() {
    Fiber* f = current_;
    tsan_switch(tsan_world_);
    world_context_ = boost::context::detail::jump_fcontext(world_context_, nullptr).fctx;
    // Back in the fiber, made current again by resume() (from wherever the world is now).
    if (f->killed_) throw FiberKilled{};
}

std::size_t World::end_all() {
    std::size_t n = 0;
    for (auto& f : fibers_)
        if (!f->finished_) {
            kill(f.get());
            ++n;
        }
    // Runs what is due now (the kills' resumptions among it) until every fiber has unwound;
    // anything later stays unrun.
    while (n && !events_.empty()) {
        Event e = std::move(const_cast<Event&>(events_.top()));
        events_.pop();
        if (e.t == now_) e.f();
        if (std::ranges::all_of(fibers_, [](const auto& x) { return x->finished_; })) break;
    }
    return n;
}

void World::run(VTime until) {
    while (!events_.empty() && events_.top().t <= until) {
        Event e = std::move(const_cast<Event&>(events_.top()));
        events_.pop();
        now_ = e.t;
        ++events_run_;
        e.f();
    }
    if (now_ < until && events_.empty()) now_ = until;
}

}  // namespace lockbench::sim
