// roce-gen's run of a perftest test: the client options its command line makes, and perftest's
// printout hooked to the run (the header and address lines once the QPs are up, a row per size
// or per --run_infinitely period). Used by main and by the test that holds the printout against
// the real perftest's.
#pragma once

#include <functional>
#include <string>

#include "client/oob_server.hpp"
#include "client/perftest_client.hpp"
#include "client/traffic/perftest_text.hpp"
#include "apps/gen/options.hpp"

namespace roce::client {

ClientOptions client_options_of(const GenOptions& g);
// roce-gen --listen knows its test, as perftest's server does (ib_send_lat answers, ib_write_lat writes first).
ServedTest served_test_of(const GenOptions& g);
PerftestHeader client_header_of(const GenOptions& g, const ClientConnection& c);
PerftestStyle style_of(const GenOptions& g);
// Sets the printing hooks of `co`; `out` gets each piece of text as perftest would print it.
void print_as_perftest(ClientOptions& co, const GenOptions& g, const std::function<void(const std::string&)>& out);

}  // namespace roce::client
