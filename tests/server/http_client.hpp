// A small blocking HTTP/1.1 client over a raw socket: the tests control every byte sent and
// see every byte received.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace knit_test {

struct http_response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  // The header's value, or "" when absent. `name` in lower case.
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// How reading one response ended.
enum class read_outcome {
  complete,        // a whole response (status line, headers, Content-Length bytes of body)
  closed_cleanly,  // the server closed (FIN or RST) before sending any byte of a response
  partial,         // the connection ended in the middle of a response: a lost response
  timed_out,       // nothing complete within the deadline
  malformed,       // bytes that are not an HTTP/1.1 response with a Content-Length
};

const char* to_string(read_outcome outcome);

// Builds a request. A body adds Content-Length; `extra` is inserted verbatim (each line
// ending in \r\n); `close` adds Connection: close.
std::string make_request(std::string_view method, std::string_view target,
                         std::string_view body = {}, std::string_view extra = {},
                         bool close = false);

// One TCP connection to 127.0.0.1:port. Every blocking call has a deadline (SO_RCVTIMEO /
// SO_SNDTIMEO), so a misbehaving server fails a test instead of hanging it.
class connection {
 public:
  explicit connection(std::uint16_t port,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~connection();

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Writes all of `data`. False if the server has closed or reset the connection.
  bool send(std::string_view data);

  // Reads one response. `head_request`: the response has no body (HEAD).
  read_outcome read_response(http_response& out, bool head_request = false);

  // Reads up to and including `delimiter` (e.g. an interim "100 Continue" head). nullopt if
  // the connection ends or the timeout passes first.
  std::optional<std::string> read_until(std::string_view delimiter);

  // Sends `raw` (any bytes, well-formed or not) and reads one response: nullopt unless the
  // bytes went out and a complete response came back.
  std::optional<http_response> exchange(std::string_view raw, bool head_request = false);

  // Convenience: exchange(make_request(method, target, body)).
  std::optional<http_response> request(std::string_view method, std::string_view target,
                                       std::string_view body = {});

  // Waits until the server closes the connection. True when it did (EOF or reset) within
  // the timeout; `received` gets any bytes that arrived first.
  bool wait_closed(std::string* received = nullptr);

  // Half-close: tells the server we will send nothing more.
  void shutdown_send();

  // True when bytes (or the end of the stream) are waiting to be read right now: poll with
  // a zero timeout, nothing consumed.
  bool readable_now() const;

 private:
  // Reads more bytes into buffer_. 0 = EOF or reset, -1 = timeout.
  int fill();

  int fd_ = -1;
  std::string buffer_;  // received, not yet consumed
};

}  // namespace knit_test
