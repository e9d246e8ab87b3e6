// knit/asio.hpp: everything knit offers on Boost.Asio: asio_host (the pool's completions on
// an io_context) and async_run (a pool call as an Asio asynchronous operation).
#pragma once

#include "knit/asio_host.hpp"
#include "knit/async_run.hpp"
