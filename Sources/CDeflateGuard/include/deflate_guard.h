// The permessage-deflate guard's entry points. CLibWebSockets' shim.h includes this header, so Swift
// sees them through the one module that imports libwebsockets.
#ifndef PINWHEEL_DEFLATE_GUARD_H
#define PINWHEEL_DEFLATE_GUARD_H

#include <libwebsockets.h>

/// The window (log2 bytes) and memLevel of the compressor lws makes for each message sent. A block
/// then holds at most 2^(memLevel + 6) - 1 symbols, which LWSConnection's fragment size depends on.
#define DEFLATE_GUARD_WINDOW_BITS 12
#define DEFLATE_GUARD_MEM_LEVEL 7

/// lws's permessage-deflate callback for servers and clients alike: received frames pass through
/// untouched, RSV1 and all, for deflate_guard_inflate_message to inflate whole; sending is lws's, with
/// its peer-reachable assertion turned into a failed connection instead of an aborted process.
int deflate_guard_callback(struct lws_context *context, const struct lws_extension *ext, struct lws *wsi,
                           enum lws_extension_callback_reasons reason, void *user, void *in, size_t len);

/// How the next lws_write on this thread goes out on a connection with permessage-deflate: set it
/// around one lws_write of a whole message, on the lws service thread, and back to
/// DEFLATE_GUARD_LWS_COMPRESSES after.
enum deflate_guard_send_mode {
    /// lws compresses the message (its own default).
    DEFLATE_GUARD_LWS_COMPRESSES = 0,
    /// The message goes out as it is, RSV1 clear, which RFC 7692 allows on any message.
    DEFLATE_GUARD_UNCOMPRESSED = 1,
    /// The payload is already a compressed message (deflate_guard_compress_message): it goes out as
    /// it is, with RSV1 set.
    DEFLATE_GUARD_PRECOMPRESSED = 2,
};
void deflate_guard_set_send_mode(enum deflate_guard_send_mode mode);

/// Room `deflate_guard_compress_message` may need for a message of `length` bytes.
size_t deflate_guard_message_bound(size_t length);

/// Compresses `length` bytes of `message` as one permessage-deflate message with a window of
/// 2^`window_bits` bytes (8 to DEFLATE_GUARD_WINDOW_BITS), without the sync-flush tail the wire leaves
/// off, into `out`. Any thread; each keeps one compressor.
/// - Returns: bytes written, or -1 (no memory, a window size out of range, or `capacity` below the
///   bound).
long deflate_guard_compress_message(const unsigned char *message, size_t length, int window_bits,
                                    unsigned char *out, size_t capacity);

/// Why deflate_guard_inflate_message gave no message.
enum deflate_guard_inflate_failure {
    /// Not a permessage-deflate message: a bad block, symbol or distance, or cut off inside a block.
    DEFLATE_GUARD_INFLATE_CORRUPT = -1,
    /// It inflates to more than the limit.
    DEFLATE_GUARD_INFLATE_TOO_LARGE = -2,
    DEFLATE_GUARD_INFLATE_NO_MEMORY = -3,
};

/// Inflates `length` bytes of one compressed permessage-deflate message (without the sync-flush tail
/// the wire leaves off, and with no context from earlier messages), refusing more than `limit`
/// inflated bytes. Any thread; each keeps one inflater and one output buffer.
/// - Returns: the inflated length, with `*inflated` pointing at the bytes, valid until this thread's
///   next call; or a negative `deflate_guard_inflate_failure`.
long deflate_guard_inflate_message(const unsigned char *message, size_t length, size_t limit,
                                   const unsigned char **inflated);

/// 1 when the guard failed `wsi` (and forgets it), else 0. Call on that connection's CLOSED, on the
/// lws service thread.
int deflate_guard_take_trip(struct lws *wsi);

#endif
