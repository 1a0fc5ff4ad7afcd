// One proxied connection's two pipes; see link_connection.h for the data path.
#include "faults/link_connection.h"

#include <asio/write.hpp>

#include <cassert>
#include <utility>

namespace lockbench {

using asio::ip::tcp;

LinkConnection::Pipe::Pipe(tcp::socket& from, tcp::socket& to)
    : from(from), to(to), timer(from.get_executor()) {}

LinkConnection::LinkConnection(tcp::socket client, tcp::socket server, std::mt19937_64& rng,
                               OnEnded on_ended, std::shared_ptr<Traffic> traffic)
    : client_(std::move(client)),
      server_(std::move(server)),
      pipes_{{Pipe(client_, server_), Pipe(server_, client_)}},
      rng_(rng),
      on_ended_(std::move(on_ended)),
      traffic_(std::move(traffic)) {}

void LinkConnection::start(LinkFault upstream, LinkFault downstream) {
    pipe(Direction::upstream).fault = upstream;
    pipe(Direction::downstream).fault = downstream;
    // Without NODELAY a small reply written right after another waits for an ACK, and the
    // proxy would add latency that no fault asked for.
    std::error_code ignored;
    client_.set_option(tcp::no_delay(true), ignored);
    server_.set_option(tcp::no_delay(true), ignored);
    for (Pipe& p : pipes_) read_next(p);
}

void LinkConnection::set_fault(Direction direction, LinkFault fault) {
    assert(fault.kind != LinkFault::Kind::reset);  // the link resets whole connections
    Pipe& p = pipe(direction);
    p.fault = fault;
    if (fault.kind == LinkFault::Kind::pass || fault.kind == LinkFault::Kind::delay)
        release_held(p);
}

void LinkConnection::close() {
    if (closed_) return;
    closed_ = true;
    // Pending reads, writes and timers complete with operation_aborted; their handlers hold
    // this object alive until then and do nothing once closed_ is set.
    std::error_code ignored;
    for (Pipe& p : pipes_) p.timer.cancel();
    client_.close(ignored);
    server_.close(ignored);
}

void LinkConnection::reset() {
    if (closed_) return;
    // Linger on with a zero timeout makes close() send RST instead of FIN.
    std::error_code ignored;
    client_.set_option(asio::socket_base::linger(true, 0), ignored);
    server_.set_option(asio::socket_base::linger(true, 0), ignored);
    close();
}

void LinkConnection::read_next(Pipe& p) {
    p.from.async_read_some(asio::buffer(p.buffer),
                           [self = shared_from_this(), &p](std::error_code ec, std::size_t n) {
                               self->on_read(p, ec, n);
                           });
}

void LinkConnection::on_read(Pipe& p, std::error_code ec, std::size_t n) {
    if (closed_) return;
    if (ec == asio::error::eof) {
        admit(p, Chunk{.end_of_stream = true});  // no more reads on this side
        return;
    }
    if (ec) {
        end(true);  // a reset from one peer is passed on to the other as a reset
        return;
    }
    admit(p, Chunk{.bytes = std::vector<char>(p.buffer.begin(), p.buffer.begin() + n)});
    read_next(p);
}

void LinkConnection::admit(Pipe& p, Chunk chunk) {
    const auto now = LinkClock::now();
    ChunkFate fate = fate_of_chunk(p.fault, now, p.last_due, rng_);
    // A blackhole swallows bytes but passes the end of stream on, so a client that gives up
    // and closes does not leave its server connection open behind it.
    if (fate.kind == ChunkFate::Kind::drop && chunk.end_of_stream)
        fate = {ChunkFate::Kind::deliver, std::max(now, p.last_due)};
    if (fate.kind == ChunkFate::Kind::drop) return;
    chunk.held = fate.kind == ChunkFate::Kind::hold;
    if (traffic_ && !chunk.end_of_stream) {
        const long long n = ++*traffic_->order;
        if (&p == &pipe(Direction::upstream)) {
            traffic_->last_request = n;
            if (traffic_->first_request <= traffic_->mark) traffic_->first_request = n;
        } else if (chunk.held) {
            traffic_->last_held_answer = n;
        }
    }
    chunk.due = fate.due;
    if (!chunk.held) p.last_due = chunk.due;
    p.queue.push_back(std::move(chunk));
    write_next(p);
}

// Held chunks get their due times now, in queue order, as if they had just been read.
void LinkConnection::release_held(Pipe& p) {
    const auto now = LinkClock::now();
    for (Chunk& chunk : p.queue) {
        if (!chunk.held) continue;
        chunk.held = false;
        chunk.due = fate_of_chunk(p.fault, now, p.last_due, rng_).due;
        p.last_due = chunk.due;
    }
    write_next(p);
}

void LinkConnection::write_next(Pipe& p) {
    if (closed_ || p.writing || p.queue.empty() || p.queue.front().held) return;
    Chunk& front = p.queue.front();
    if (front.due > LinkClock::now()) {
        p.writing = true;
        p.timer.expires_at(front.due);
        p.timer.async_wait([self = shared_from_this(), &p](std::error_code ec) {
            p.writing = false;
            if (!ec) self->write_next(p);
        });
        return;
    }
    if (front.end_of_stream) {
        end_stream(p);
        return;
    }
    p.writing = true;
    asio::async_write(p.to, asio::buffer(front.bytes),
                      [self = shared_from_this(), &p](std::error_code ec, std::size_t) {
                          self->on_written(p, ec);
                      });
}

void LinkConnection::on_written(Pipe& p, std::error_code ec) {
    p.writing = false;
    if (closed_) return;
    if (ec) {
        end(true);
        return;
    }
    p.queue.pop_front();
    write_next(p);
}

// Half-closes the receiving side; the connection ends once both streams have ended.
void LinkConnection::end_stream(Pipe& p) {
    p.queue.clear();  // nothing can follow an end of stream
    p.ended = true;
    std::error_code ignored;
    p.to.shutdown(tcp::socket::shutdown_send, ignored);
    if (pipes_[0].ended && pipes_[1].ended) end(false);
}

void LinkConnection::end(bool abortive) {
    if (closed_) return;
    abortive ? reset() : close();
    if (on_ended_) on_ended_(this);
}

}  // namespace lockbench
