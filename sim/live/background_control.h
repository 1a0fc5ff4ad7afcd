// The client's side of a "task": "background" pause: the nemesis signals the client process,
// a thread of the client's own holds or releases its background tasks and says so.
//
//   Nemesis ──SIGUSR1──► client pid ──sigwait thread──► BackgroundGate::hold()
//           ◄──"held\n"── (its own connection to the nemesis socket, "background N")
//           ──SIGUSR2──►                              ──► BackgroundGate::release()
//           ◄──"released\n"──
//
// The signals are blocked in every thread of the client (this is constructed before any
// thread starts, and threads inherit the mask), so only the sigwait thread takes them: a
// signal handler could not lock the gate's mutex.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "sim/live/live_env.h"

namespace lockbench {

class BackgroundControl {
public:
    // Blocks SIGUSR1 and SIGUSR2, connects to the nemesis as client `client`'s background
    // channel, and starts the thread that takes the signals.
    BackgroundControl(const std::string& socket_path, int client, std::shared_ptr<BackgroundGate> gate);
    ~BackgroundControl();
    BackgroundControl(const BackgroundControl&) = delete;
    BackgroundControl& operator=(const BackgroundControl&) = delete;

private:
    void take_signals();

    std::shared_ptr<BackgroundGate> gate_;
    int fd_ = -1;
    std::atomic<bool> stopping_{false};  // set before the destructor's own SIGUSR2
    std::thread thread_;
};

}  // namespace lockbench
