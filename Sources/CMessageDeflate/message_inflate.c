// Inflates a whole incoming permessage-deflate message, for a server's connections and a client's
// alike: lws passes their frames on as they came (CPermessageDeflate), RSV1 and all.
//
// lws 4.1.6 would inflate a compressed message with zlib into 1 KiB pieces, each handed to the
// application in its own callback, and a server keeps reading pieces of a frame larger than its
// receive buffer through an extension "drain" that can stall with the service thread spinning
// (docs/libwebsockets.md). Every message inflates on its own: a server promises
// client_no_context_takeover in its upgrade response, and a client offers server_no_context_takeover.
//
// Two engines, by size. ISA-L's igzip inflates Pinwheel's batches about twice as fast as zlib, but
// starting it costs more than zlib's whole inflate of a viewport or an ack, a hundred bytes or so:
// shorter messages go through a zlib stream each thread keeps and resets.
#include "message_deflate.h"

#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdlib.h>
#include <zlib.h>

#include "vector_state.h"

// Each thread inflates into one buffer, whose bytes last until its next call: grown as a message
// needs, and brought back to this size before the next one.
#define KEPT_OUTPUT (64 * 1024)

// Compressed messages shorter than this inflate with zlib; 1.7 µs against 0.6 µs for igzip and zlib
// on a 96-byte viewport (docs/libwebsockets.md).
#define ZLIB_BELOW 1024

struct inflater {
    struct inflate_state state;
    z_stream zlib;
    int zlib_ready;
    unsigned char *output;
    size_t capacity;
};

static pthread_key_t inflater_key;
static pthread_once_t inflater_key_once = PTHREAD_ONCE_INIT;

static void free_inflater(void *pointer) {
    struct inflater *inflater = pointer;
    if (inflater->zlib_ready) inflateEnd(&inflater->zlib);
    free(inflater->output);
    free(inflater);
}

static void make_inflater_key(void) { pthread_key_create(&inflater_key, free_inflater); }

// This thread's inflater, made when first needed; NULL when memory ran out.
static struct inflater *thread_inflater(void) {
    pthread_once(&inflater_key_once, make_inflater_key);
    struct inflater *inflater = pthread_getspecific(inflater_key);
    if (inflater) return inflater;
    inflater = calloc(1, sizeof *inflater);
    if (!inflater || pthread_setspecific(inflater_key, inflater) != 0) {
        free(inflater);
        return NULL;
    }
    return inflater;
}

// Sets the thread's output buffer to `capacity` bytes, keeping what it holds; 0 when memory ran out.
static int resize_output(struct inflater *inflater, size_t capacity) {
    unsigned char *output = realloc(inflater->output, capacity);
    if (!output) return 0;
    inflater->output = output;
    inflater->capacity = capacity;
    return 1;
}

// Makes room after `produced` bytes of output: 0 when there is some, else a failure. A full buffer
// grows up to one byte past the limit, enough to tell a message that is too large.
static long make_room(struct inflater *inflater, size_t produced, size_t limit) {
    if (produced < inflater->capacity) return 0;
    if (produced > limit) return MESSAGE_INFLATE_TOO_LARGE;
    size_t grown = inflater->capacity * 2;
    if (grown > limit + 1) grown = limit + 1;
    if (grown > UINT32_MAX) grown = UINT32_MAX;
    if (grown <= produced || !resize_output(inflater, grown)) return MESSAGE_INFLATE_NO_MEMORY;
    return 0;
}

// RFC 7692 §7.2.2: the sender left off the sync flush's empty stored block; it goes back here.
static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};

static long inflate_with_zlib(struct inflater *inflater, const unsigned char *message, size_t length, size_t limit) {
    z_stream *stream = &inflater->zlib;
    if (!inflater->zlib_ready) {
        if (inflateInit2(stream, -MAX_WBITS) != Z_OK) return MESSAGE_INFLATE_NO_MEMORY;
        inflater->zlib_ready = 1;
    } else if (inflateReset(stream) != Z_OK) {
        return MESSAGE_INFLATE_CORRUPT;
    }
    const unsigned char *pieces[2] = {message, tail};
    const uInt sizes[2] = {(uInt)length, sizeof tail};
    size_t produced = 0;
    int status = Z_OK;
    for (int piece = 0; piece < 2 && status != Z_STREAM_END; piece++) {
        stream->next_in = (unsigned char *)pieces[piece];
        stream->avail_in = sizes[piece];
        for (;;) {
            long room = make_room(inflater, produced, limit);
            if (room < 0) return room;
            size_t free_bytes = inflater->capacity - produced;
            stream->next_out = inflater->output + produced;
            stream->avail_out = (uInt)free_bytes;
            status = inflate(stream, Z_SYNC_FLUSH);
            produced += free_bytes - stream->avail_out;
            if (status == Z_MEM_ERROR) return MESSAGE_INFLATE_NO_MEMORY;
            if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) return MESSAGE_INFLATE_CORRUPT;
            if (produced > limit) return MESSAGE_INFLATE_TOO_LARGE;
            // Room left over means zlib took all the input it could.
            if (status == Z_STREAM_END || stream->avail_out > 0) break;
        }
    }
    // A whole message ends with a final block, or between blocks: zlib then waits for the next
    // block's header (data_type's 128), holding no input.
    if (status != Z_STREAM_END && !(stream->avail_in == 0 && (stream->data_type & 128)))
        return MESSAGE_INFLATE_CORRUPT;
    return (long)produced;
}

static long inflate_with_igzip(struct inflater *inflater, const unsigned char *message, size_t length, size_t limit) {
    struct inflate_state *state = &inflater->state;
    isal_inflate_init(state);
    state->crc_flag = ISAL_DEFLATE;
    const unsigned char *pieces[2] = {message, tail};
    const uint32_t sizes[2] = {(uint32_t)length, sizeof tail};
    size_t produced = 0;
    for (int piece = 0; piece < 2 && state->block_state != ISAL_BLOCK_FINISH; piece++) {
        state->next_in = (uint8_t *)pieces[piece];
        state->avail_in = sizes[piece];
        for (;;) {
            long room = make_room(inflater, produced, limit);
            if (room < 0) return room;
            size_t free_bytes = inflater->capacity - produced;
            uint32_t unread = state->avail_in;
            state->next_out = inflater->output + produced;
            state->avail_out = (uint32_t)free_bytes;
            int status = isal_inflate(state);
            after_vector_code();
            produced += free_bytes - state->avail_out;
            if (status < 0) return MESSAGE_INFLATE_CORRUPT;
            if (produced > limit) return MESSAGE_INFLATE_TOO_LARGE;
            // Room left over means igzip holds no more output for this input.
            if (state->avail_out > 0 && (state->avail_in == 0 || state->block_state == ISAL_BLOCK_FINISH)) break;
            if (state->avail_out > 0 && state->avail_in == unread) return MESSAGE_INFLATE_CORRUPT;
        }
    }
    // A whole message ends between blocks (igzip waits for the next block's header, holding no bit of
    // it, once the trailer's empty block is read), or with a final block.
    int between_blocks = state->block_state == ISAL_BLOCK_NEW_HDR
                         || (state->block_state == ISAL_BLOCK_HDR && state->read_in_length == 0 && state->tmp_in_size == 0);
    int finished = state->block_state == ISAL_BLOCK_INPUT_DONE || state->block_state == ISAL_BLOCK_FINISH;
    if (!between_blocks && !finished) return MESSAGE_INFLATE_CORRUPT;
    return (long)produced;
}

long message_deflate_inflate(const unsigned char *message, size_t length, size_t limit,
                                   const unsigned char **inflated) {
    if (length > UINT32_MAX) return MESSAGE_INFLATE_CORRUPT;
    struct inflater *inflater = thread_inflater();
    if (!inflater) return MESSAGE_INFLATE_NO_MEMORY;
    if (inflater->capacity != KEPT_OUTPUT && !resize_output(inflater, KEPT_OUTPUT))
        return MESSAGE_INFLATE_NO_MEMORY;
    *inflated = inflater->output;
    // An empty message compresses to one byte (RFC 7692 §7.2.3.6); none at all reads as empty too,
    // as zlib would take it.
    if (length == 0) return 0;
    long result = length < ZLIB_BELOW ? inflate_with_zlib(inflater, message, length, limit)
                                      : inflate_with_igzip(inflater, message, length, limit);
    *inflated = inflater->output;
    return result;
}
