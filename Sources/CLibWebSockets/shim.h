// What Swift cannot import from libwebsockets 4.1.6, made importable. See ../../docs/architecture.md.
#ifndef PINWHEEL_LWS_SHIM_H
#define PINWHEEL_LWS_SHIM_H

#include <libwebsockets.h>

/// LWS_PRE is a function-like macro: the headroom every lws_write buffer needs before its payload.
static const size_t SHIM_LWS_PRE = LWS_PRE;

/// lwsl_* are variadic macros; this logs one preformatted line.
static inline void shim_lws_log(int level, const char *message) {
    _lws_log(level, "%s\n", message);
}

#endif
