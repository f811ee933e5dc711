// The permessage-deflate guard's entry points. CLibWebSockets' shim.h includes this header, so Swift
// sees them through the one module that imports libwebsockets.
#ifndef PINWHEEL_DEFLATE_GUARD_H
#define PINWHEEL_DEFLATE_GUARD_H

#include <libwebsockets.h>

/// lws's permessage-deflate callback, with its two peer-reachable assertions turned into a failed
/// connection instead of an aborted process.
/// The window (log2 bytes) and memLevel of the compressor lws makes for each message sent. A block
/// then holds at most 2^(memLevel + 6) - 1 symbols, which LWSConnection's fragment size depends on.
#define DEFLATE_GUARD_WINDOW_BITS 12
#define DEFLATE_GUARD_MEM_LEVEL 7

int deflate_guard_callback(struct lws_context *context, const struct lws_extension *ext, struct lws *wsi,
                           enum lws_extension_callback_reasons reason, void *user, void *in, size_t len);

/// While `yes` is 1, messages written on this thread go out uncompressed (RSV1 clear), which RFC 7692
/// allows on any message; set it around one lws_write of a whole message, on the lws service thread.
void deflate_guard_send_uncompressed(int yes);

/// 1 when the guard failed `wsi` (and forgets it), else 0. Call on that connection's CLOSED, on the
/// lws service thread.
int deflate_guard_take_trip(struct lws *wsi);

#endif
