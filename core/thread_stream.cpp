#include "core/thread_stream.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/stopwatch.hpp"

namespace dsgd {

namespace {

class ThreadStream final : public Stream, public StreamPosts {
 public:
  ThreadStream(Comm& caller, std::unique_ptr<Comm> stream_comm, StreamBody body, double timeout_s)
      : caller_(caller), comm_(std::move(stream_comm)), body_(std::move(body)), timeout_s_(timeout_s) {
    thread_ = std::thread([this] { run(); });
  }

  ~ThreadStream() override {
    if (!thread_.joinable()) return;
    if (std::uncaught_exceptions() == 0 && !joined_) {
      try {
        join(Category::kWait);
      } catch (...) {  // a destructor must not throw; the caller's own failure is the one that matters
      }
    }
    {
      const std::lock_guard lock(mutex_);
      abandoned_ = true;
    }
    changed_.notify_all();
    thread_.join();  // the body's own waits are bounded by the timeout
  }

  void post() override {
    {
      const std::lock_guard lock(mutex_);
      ++posted_;
    }
    changed_.notify_all();
  }

  void take() override {
    const Stopwatch watch;
    std::unique_lock lock(mutex_);
    const bool ready =
        changed_.wait_until(lock, deadline(timeout_s_), [this] { return posted_ > taken_ || abandoned_; });
    lock.unlock();
    comm_->charge(Category::kWait, watch.elapsed_s());
    lock.lock();
    if (abandoned_) throw CommError("rank " + std::to_string(comm_->rank()) + "'s stream: its caller gave it up");
    if (!ready) {
      throw TimeoutError(waited_text(comm_->rank(), timeout_s_, "in its stream for its caller to post work"));
    }
    ++taken_;
  }

  StreamResult join(Category category) override {
    DSGD_ENFORCE(!joined_, "a stream is joined once");
    joined_ = true;
    const Stopwatch watch;
    {
      std::unique_lock lock(mutex_);
      // The body's own waits end within the timeout, so it ends within twice that unless it computes for long.
      if (!changed_.wait_until(lock, deadline(2 * timeout_s_), [this] { return done_; })) {
        throw TimeoutError(waited_text(caller_.rank(), 2 * timeout_s_, "for its stream to end"));
      }
    }
    thread_.join();
    StreamResult result;
    result.joined_s = watch.elapsed_s();
    caller_.charge(category, result.joined_s);
    if (error_) std::rethrow_exception(error_);
    result.stream = comm_->breakdown();
    caller_.count_sent(comm_->bytes_sent());  // the stream's messages are the rank's bytes on the wire
    return result;
  }

 private:
  void run() {
    try {
      body_(*comm_, *this);
    } catch (...) {
      error_ = std::current_exception();  // rethrown by join(), on the caller's thread
    }
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
  }

  static SteadyClock::time_point deadline(double seconds) {
    return SteadyClock::now() +
           std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
  }

  Comm& caller_;
  std::unique_ptr<Comm> comm_;
  StreamBody body_;
  double timeout_s_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  long posted_ = 0;  // under mutex_, as are taken_, abandoned_ and done_
  long taken_ = 0;
  bool abandoned_ = false;
  bool done_ = false;
  bool joined_ = false;       // the caller's thread only
  std::exception_ptr error_;  // written by the stream before done_, read by join() after it
};

}  // namespace

StreamPtr start_thread_stream(Comm& caller, std::unique_ptr<Comm> stream_comm, StreamBody body, double timeout_s) {
  return std::make_unique<ThreadStream>(caller, std::move(stream_comm), std::move(body), timeout_s);
}

}  // namespace dsgd
