// Compresses a whole outgoing message for permessage-deflate on the thread that encoded it.
//
// lws compresses a message on the service thread, in 1 KiB deflate output chunks that leave over
// separate POLLOUTs, each its own frame and send, and sets up and tears down zlib for every message
// (Pinwheel had it free the stream after each one, to keep idle sessions small). Here each thread
// keeps one compressor and resets it per message, the message leaves as one frame in one lws_write,
// and the service thread is left to write. The parameters are those the guard gives lws's own
// compressor (deflate_guard.h) at lws's level 1, so the output is what lws would send; a client may
// ask for a smaller window.
#include "deflate_guard.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// Raw deflate windows zlib makes: 2^9 bytes up to the guard's.
#define SMALLEST_WINDOW_BITS 9
#define WINDOW_SIZES (DEFLATE_GUARD_WINDOW_BITS - SMALLEST_WINDOW_BITS + 1)

// One thread's compressors, by window size, made when first needed.
struct compressors {
    z_stream *by_window[WINDOW_SIZES];
};

static pthread_key_t compressors_key;
static pthread_once_t compressors_key_once = PTHREAD_ONCE_INIT;

static void free_compressors(void *value) {
    struct compressors *compressors = value;
    for (int i = 0; i < WINDOW_SIZES; i++) {
        if (!compressors->by_window[i]) continue;
        deflateEnd(compressors->by_window[i]);
        free(compressors->by_window[i]);
    }
    free(compressors);
}

static void make_compressors_key(void) { pthread_key_create(&compressors_key, free_compressors); }

// This thread's compressor for `window_bits`, ready for a new message; NULL when memory ran out.
static z_stream *thread_compressor(int window_bits) {
    pthread_once(&compressors_key_once, make_compressors_key);
    struct compressors *compressors = pthread_getspecific(compressors_key);
    if (!compressors) {
        compressors = calloc(1, sizeof *compressors);
        if (!compressors || pthread_setspecific(compressors_key, compressors) != 0) {
            free(compressors);
            return NULL;
        }
    }
    z_stream **slot = &compressors->by_window[window_bits - SMALLEST_WINDOW_BITS];
    if (*slot) return deflateReset(*slot) == Z_OK ? *slot : NULL;
    z_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NULL;
    if (deflateInit2(stream, 1, Z_DEFLATED, -window_bits, DEFLATE_GUARD_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(stream);
        return NULL;
    }
    *slot = stream;
    return stream;
}

size_t deflate_guard_message_bound(size_t length) {
    // zlib's bound for a whole stream covers a raw one plus its sync flush (an empty stored block).
    return compressBound(length) + 8;
}

long deflate_guard_compress_message(const unsigned char *message, size_t length, int window_bits,
                                    unsigned char *out, size_t capacity) {
    if (window_bits < SMALLEST_WINDOW_BITS || window_bits > DEFLATE_GUARD_WINDOW_BITS) return -1;
    z_stream *stream = thread_compressor(window_bits);
    if (!stream) return -1;
    stream->next_in = (unsigned char *)message;
    stream->avail_in = (uInt)length;
    stream->next_out = out;
    stream->avail_out = (uInt)capacity;
    // A full buffer may hide output zlib still holds: count it as failure, never as a short message.
    if (deflate(stream, Z_SYNC_FLUSH) != Z_OK || stream->avail_in || !stream->avail_out) return -1;
    size_t produced = capacity - stream->avail_out;
    // RFC 7692 §7.2.1: the sync flush's empty stored block (00 00 ff ff) is left off the wire.
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    if (produced < 4 || memcmp(out + produced - 4, tail, 4) != 0) return -1;
    return (long)(produced - 4);
}
