// Whole permessage-deflate messages compressed and inflated by the thread that has them, with ISA-L's
// igzip (and zlib for short messages inflated), instead of in lws's 1 KiB pieces on the service thread.
// See docs/libwebsockets.md.
#ifndef PINWHEEL_MESSAGE_DEFLATE_H
#define PINWHEEL_MESSAGE_DEFLATE_H

#include <stddef.h>

/// The largest window (log2 bytes) messages are compressed with: 4 KiB, enough for batches of a few
/// KiB, and always safe for a peer, whose inflater takes any window up to the one negotiated.
#define MESSAGE_DEFLATE_WINDOW_BITS 12

/// Room `message_deflate_compress` may need for a message of `length` bytes.
size_t message_deflate_bound(size_t length);

/// Compresses `length` bytes of `message` as one permessage-deflate message with a window of
/// 2^`window_bits` bytes (8 to MESSAGE_DEFLATE_WINDOW_BITS), without the sync-flush tail the wire
/// leaves off, into `out`. Any thread; each keeps one compressor.
/// - Returns: bytes written, or -1 (no memory, a window size out of range, or `capacity` below the
///   bound).
long message_deflate_compress(const unsigned char *message, size_t length, int window_bits, unsigned char *out,
                              size_t capacity);

/// Why message_deflate_inflate gave no message.
enum message_inflate_failure {
    /// Not a permessage-deflate message: a bad block, symbol or distance, or cut off inside a block.
    MESSAGE_INFLATE_CORRUPT = -1,
    /// It inflates to more than the limit.
    MESSAGE_INFLATE_TOO_LARGE = -2,
    MESSAGE_INFLATE_NO_MEMORY = -3,
};

/// Inflates `length` bytes of one compressed permessage-deflate message (without the sync-flush tail
/// the wire leaves off, and with no context from earlier messages), refusing more than `limit`
/// inflated bytes. Any thread; each keeps one inflater and one output buffer.
/// - Returns: the inflated length, with `*inflated` pointing at the bytes, valid until this thread's
///   next call; or a negative `message_inflate_failure`.
long message_deflate_inflate(const unsigned char *message, size_t length, size_t limit,
                             const unsigned char **inflated);

#endif
