// Compresses a whole outgoing message for permessage-deflate: a server's on the thread that encoded
// it, a client's on the service thread as it is written.
//
// lws 4.1.6's own extension would compress a message on the service thread, in 1 KiB deflate output
// chunks that leave over separate POLLOUTs, each its own frame and send, and set up and tear down
// zlib for every message. Here each thread keeps one compressor and starts it afresh per message, and
// the message leaves as one frame in one lws_write.
//
// The compressor is ISA-L's igzip at its level 1 rather than zlib: on Pinwheel's JSON batches it
// takes a quarter of zlib's level-1 time and its output is 8 % smaller (docs/libwebsockets.md). Its
// matches reach back at most the window the connection agreed (2^8 bytes up to
// MESSAGE_DEFLATE_WINDOW_BITS), so any RFC 7692 inflater with that window reads them.
#include "message_deflate.h"

#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vector_state.h"

// The smallest window RFC 7692 lets a client ask for; igzip, unlike zlib, compresses within it.
#define SMALLEST_WINDOW_BITS 8

// One thread's compressor: the stream and the scratch igzip's level 1 works in.
struct compressor {
    struct isal_zstream stream;
    uint8_t level_buffer[ISAL_DEF_LVL1_DEFAULT];
};

static pthread_key_t compressor_key;
static pthread_once_t compressor_key_once = PTHREAD_ONCE_INIT;

static void make_compressor_key(void) { pthread_key_create(&compressor_key, free); }

// This thread's compressor, made when first needed; NULL when memory ran out.
static struct compressor *thread_compressor(void) {
    pthread_once(&compressor_key_once, make_compressor_key);
    struct compressor *compressor = pthread_getspecific(compressor_key);
    if (compressor) return compressor;
    compressor = malloc(sizeof *compressor);
    if (!compressor || pthread_setspecific(compressor_key, compressor) != 0) {
        free(compressor);
        return NULL;
    }
    return compressor;
}

size_t message_deflate_bound(size_t length) {
    // igzip stores what it cannot shrink, 5 bytes of block header per 64 KiB; beside that, room for
    // one Huffman block header and the sync flush's empty stored block. Should igzip need more,
    // compressing fails and the message goes out as it is.
    return length + 5 * (length / 65535 + 1) + ISAL_DEF_MAX_HDR_SIZE + 8;
}

long message_deflate_compress(const unsigned char *message, size_t length, int window_bits,
                                    unsigned char *out, size_t capacity) {
    if (window_bits < SMALLEST_WINDOW_BITS || window_bits > MESSAGE_DEFLATE_WINDOW_BITS) return -1;
    if (length > UINT32_MAX || capacity > UINT32_MAX) return -1;
    struct compressor *compressor = thread_compressor();
    if (!compressor) return -1;
    struct isal_zstream *stream = &compressor->stream;
    isal_deflate_init(stream);
    stream->level = 1;
    stream->level_buf = compressor->level_buffer;
    stream->level_buf_size = sizeof compressor->level_buffer;
    stream->hist_bits = (uint16_t)window_bits;
    stream->flush = SYNC_FLUSH;
    stream->next_in = (uint8_t *)message;
    stream->avail_in = (uint32_t)length;
    stream->next_out = out;
    stream->avail_out = (uint32_t)capacity;
    // A full buffer may hide output igzip still holds, and a flush not yet written leaves the stream
    // mid-block: count either as failure, never as a short message.
    int status = isal_deflate(stream);
    after_vector_code();
    if (status != COMP_OK || stream->avail_in || !stream->avail_out || stream->internal_state.state != ZSTATE_NEW_HDR)
        return -1;
    size_t produced = capacity - stream->avail_out;
    // RFC 7692 §7.2.1: the sync flush's empty stored block (00 00 ff ff) is left off the wire.
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    if (produced < 4 || memcmp(out + produced - 4, tail, 4) != 0) return -1;
    return (long)(produced - 4);
}
