// Inflates a whole incoming message for a client connection that takes compressed frames as they came.
//
// lws 4.1.6 inflates a compressed message with zlib into 1 KiB pieces, each handed to the
// application in its own callback. A client joins pieces into whole messages anyway, so its
// extension passes the frames on untouched (deflate_guard_pass_rx_callback) and each whole message is
// inflated here in one pass with ISA-L's igzip, about twice as fast as zlib on Pinwheel's batches
// (docs/libwebsockets.md). Such a client offers server_no_context_takeover, so every message
// inflates on its own.
#include "deflate_guard.h"

#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdlib.h>

#include "vector_state.h"

// Each thread inflates into one buffer, whose bytes last until its next call: grown as a message
// needs, and brought back to this size before the next one.
#define KEPT_OUTPUT (64 * 1024)

struct inflater {
    struct inflate_state state;
    unsigned char *output;
    size_t capacity;
};

static pthread_key_t inflater_key;
static pthread_once_t inflater_key_once = PTHREAD_ONCE_INIT;

static void free_inflater(void *pointer) {
    struct inflater *inflater = pointer;
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

long deflate_guard_inflate_message(const unsigned char *message, size_t length, size_t limit,
                                   const unsigned char **inflated) {
    if (length > UINT32_MAX) return DEFLATE_GUARD_INFLATE_CORRUPT;
    struct inflater *inflater = thread_inflater();
    if (!inflater) return DEFLATE_GUARD_INFLATE_NO_MEMORY;
    if (inflater->capacity != KEPT_OUTPUT && !resize_output(inflater, KEPT_OUTPUT))
        return DEFLATE_GUARD_INFLATE_NO_MEMORY;
    *inflated = inflater->output;
    // An empty message compresses to one byte (RFC 7692 §7.2.3.6); none at all reads as empty too,
    // as zlib would take it.
    if (length == 0) return 0;
    struct inflate_state *state = &inflater->state;
    isal_inflate_init(state);
    state->crc_flag = ISAL_DEFLATE;
    // RFC 7692 §7.2.2: the sender left off the sync flush's empty stored block; it goes back here.
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    const unsigned char *pieces[2] = {message, tail};
    const uint32_t sizes[2] = {(uint32_t)length, sizeof tail};
    size_t produced = 0;
    for (int piece = 0; piece < 2 && state->block_state != ISAL_BLOCK_FINISH; piece++) {
        state->next_in = (uint8_t *)pieces[piece];
        state->avail_in = sizes[piece];
        for (;;) {
            if (produced == inflater->capacity) {
                // One byte past the limit is enough to tell a message that is too large.
                if (produced > limit) return DEFLATE_GUARD_INFLATE_TOO_LARGE;
                size_t grown = inflater->capacity * 2;
                if (grown > limit + 1) grown = limit + 1;
                if (grown > UINT32_MAX) grown = UINT32_MAX;
                if (grown <= produced || !resize_output(inflater, grown)) return DEFLATE_GUARD_INFLATE_NO_MEMORY;
            }
            size_t room = inflater->capacity - produced;
            uint32_t unread = state->avail_in;
            state->next_out = inflater->output + produced;
            state->avail_out = (uint32_t)room;
            int status = isal_inflate(state);
            after_vector_code();
            produced += room - state->avail_out;
            if (status < 0) return DEFLATE_GUARD_INFLATE_CORRUPT;
            if (produced > limit) return DEFLATE_GUARD_INFLATE_TOO_LARGE;
            // Room left over means igzip holds no more output for this input.
            if (state->avail_out > 0 && (state->avail_in == 0 || state->block_state == ISAL_BLOCK_FINISH)) break;
            if (state->avail_out > 0 && state->avail_in == unread) return DEFLATE_GUARD_INFLATE_CORRUPT;
        }
    }
    // A whole message ends between blocks (igzip waits for the next block's header, holding no bit of
    // it, once the trailer's empty block is read), or with a final block.
    int between_blocks = state->block_state == ISAL_BLOCK_NEW_HDR
                         || (state->block_state == ISAL_BLOCK_HDR && state->read_in_length == 0 && state->tmp_in_size == 0);
    int finished = state->block_state == ISAL_BLOCK_INPUT_DONE || state->block_state == ISAL_BLOCK_FINISH;
    if (!between_blocks && !finished) return DEFLATE_GUARD_INFLATE_CORRUPT;
    *inflated = inflater->output;
    return (long)produced;
}
