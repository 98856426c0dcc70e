#include "runtime/ops/file_change_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace graspd::runtime {

namespace asio = boost::asio;

struct FileChangeWatch::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, int fd, std::chrono::milliseconds gap, std::function<void()> callback)
      : stream(io, fd), timer(io), min_gap(gap), on_change(std::move(callback)) {}

  asio::posix::stream_descriptor stream;
  asio::steady_timer timer;
  std::chrono::milliseconds min_gap;
  std::function<void()> on_change;
  std::array<char, 4096> buffer{};
  // Handlers of one watch may run on different io threads; the flags are shared between them.
  std::mutex mutex;
  bool cooling = false;  ///< a call happened less than min_gap ago
  bool pending = false;  ///< a change arrived while cooling
  bool stopped = false;

  void read() {
    stream.async_read_some(asio::buffer(buffer),
                           [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                             if (ec) return;  // cancelled at shutdown
                             self->changed();
                             self->read();
                           });
  }

  void changed() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopped) return;
      if (cooling) {
        pending = true;
        return;
      }
      cooling = true;
    }
    on_change();
    cool_down();
  }

  // Writes during the gap are folded into one call at its end.
  void cool_down() {
    timer.expires_after(min_gap);
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return;
      bool call = false;
      {
        std::lock_guard<std::mutex> lock(self->mutex);
        if (self->stopped) return;
        call = self->pending;
        self->pending = false;
        self->cooling = call;
      }
      if (!call) return;
      self->on_change();
      self->cool_down();
    });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopped = true;
    }
    asio::post(stream.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->timer.cancel();
      self->stream.close(ignored);
    });
  }
};

FileChangeWatch::FileChangeWatch(asio::io_context& io, const std::filesystem::path& file,
                                 std::chrono::milliseconds min_gap,
                                 std::function<void()> on_change) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("inotify: ") + std::strerror(errno));
  if (inotify_add_watch(fd, file.c_str(), IN_MODIFY) < 0) {
    auto reason = std::string("inotify watch on ") + file.string() + ": " + std::strerror(errno);
    ::close(fd);
    throw std::runtime_error(reason);
  }
  impl_ = std::make_shared<Impl>(io, fd, min_gap, std::move(on_change));
  impl_->read();
}

FileChangeWatch::~FileChangeWatch() {
  if (impl_) impl_->stop();
}

}  // namespace graspd::runtime
