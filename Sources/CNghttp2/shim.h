// The system libnghttp2 (libnghttp2-dev, 1.52 on Debian 12). Swift imports its functions,
// structs, unions and enums as they are; only macros with expressions would need a wrapper.
// Written against the 1.52 API: nghttp2_session_mem_recv/mem_send (the *2 variants are 1.60+)
// and no nghttp2_option_set_stream_reset_rate_limit (upstream 1.57; Debian backports it, but
// the server keeps its own limits so it does not depend on a distribution's patch).
#ifndef AASA_CNGHTTP2_H
#define AASA_CNGHTTP2_H

#include <nghttp2/nghttp2.h>

#endif
