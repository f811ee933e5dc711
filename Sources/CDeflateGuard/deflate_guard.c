// Contains the two assertions of lws 4.1.6's permessage-deflate that a peer could reach, and lets
// received frames pass through it untouched.
//
// extension-permessage-deflate.c asserts `priv->rx.avail_out` (line 351) after it inflates the
// sync-flush trailer into 5 spare bytes: when a compressed message's last input fills the 1 KiB
// inflate buffer exactly while zlib still holds 5 or more bytes of a match, the trailer's inflate
// fills the spare bytes too and the assertion aborts the process. Any client could send such a
// message (ten Python `websockets` clients sending 60 kB messages aborted an unguarded server within
// seconds). Pinwheel no longer lets lws inflate: every connection's extension answers
// LWS_EXT_CB_PAYLOAD_RX with "unknown", lws hands the frame on as it came, and whole messages are
// inflated by message_inflate.c. lws also asserts `!priv->tx.avail_in` (line 415) on the send side,
// which LWSConnection's fragmenting avoids and this guard contains if it ever fires.
//
// That assertion sits where the extension holds no lock and no allocation of its own is half done,
// so returning from it is safe: the guard arms a jump point around lws's callback, and the process's
// __assert_fail (resolved here before glibc's, since libwebsockets calls it through its PLT) jumps
// back to it for that extension's assertions only. The callback then reports failure, lws drops that
// one connection (it sends no Close frame after a failed extension) and every other session goes on.
// Every other assertion in the process goes to glibc's __assert_fail unchanged.
//
// It also sizes the compressor lws makes for every message a `pinwheel load` client sends (lws frees
// it after each one, as the client offers no context takeover; a server compresses its own messages,
// see message_deflate.c): lws asks zlib for a 32 KiB window and memLevel
// 8, 256 KiB of state set up and torn down per message, for batches of a few KiB. The process's
// deflateInit2_, resolved here before zlib's like __assert_fail, lowers both while lws's send path
// runs: a 4 KiB window and memLevel 7 (80 KiB). The peer is unaffected (a compressor may always use
// a smaller window than the inflater's) and the output is as small (see docs/libwebsockets.md).
#define _GNU_SOURCE
#include "deflate_guard.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <string.h>

#include <libwebsockets.h>
#include <zlib.h>

static const char guarded_function[] = "lws_extension_callback_pm_deflate";

// Armed only while lws's callback runs on this thread (the lws service thread).
static _Thread_local sigjmp_buf *armed;
// Connections failed and not yet collected: lws closes a failed connection later in the same
// service pass, possibly after others failed too. A full list forgets the oldest, whose close then
// reads as a plain drop.
#define TRIPS_KEPT 64
static _Thread_local struct lws *tripped[TRIPS_KEPT];
static _Thread_local unsigned next_trip;

static void note_trip(struct lws *wsi) {
    tripped[next_trip] = wsi;
    next_trip = (next_trip + 1) % TRIPS_KEPT;
}

typedef void (*assert_fail_fn)(const char *, const char *, unsigned int, const char *);

void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function) {
    if (armed && function && strcmp(function, guarded_function) == 0) {
        sigjmp_buf *target = armed;
        armed = NULL;
        siglongjmp(*target, 1);
    }
    assert_fail_fn glibc = (assert_fail_fn)dlsym(RTLD_NEXT, "__assert_fail");
    glibc(assertion, file, line, function);
    __builtin_unreachable();
}

// Set while lws's callback compresses (PAYLOAD_TX) on this thread.
static _Thread_local int compressing;

typedef int (*deflate_init2_fn)(z_streamp, int, int, int, int, int, const char *, int);

int deflateInit2_(z_streamp stream, int level, int method, int windowBits, int memLevel, int strategy,
                  const char *version, int streamSize) {
    static deflate_init2_fn resolved;
    deflate_init2_fn zlib = __atomic_load_n(&resolved, __ATOMIC_RELAXED);
    if (!zlib) {
        zlib = (deflate_init2_fn)dlsym(RTLD_NEXT, "deflateInit2_");
        __atomic_store_n(&resolved, zlib, __ATOMIC_RELAXED);
    }
    // Raw deflate (negative bits), as permessage-deflate uses: keep the sign, shrink the size.
    if (compressing && windowBits < -DEFLATE_GUARD_WINDOW_BITS) windowBits = -DEFLATE_GUARD_WINDOW_BITS;
    if (compressing && memLevel > DEFLATE_GUARD_MEM_LEVEL) memLevel = DEFLATE_GUARD_MEM_LEVEL;
    return zlib(stream, level, method, windowBits, memLevel, strategy, version, streamSize);
}

// Set around the write of a message the transport sends uncompressed or compressed itself.
static _Thread_local enum deflate_guard_send_mode send_mode;

void deflate_guard_set_send_mode(enum deflate_guard_send_mode mode) { send_mode = mode; }

int deflate_guard_callback(struct lws_context *context, const struct lws_extension *ext, struct lws *wsi,
                           enum lws_extension_callback_reasons reason, void *user, void *in, size_t len) {
    // PRESEND gets the frame, header first. Compressed output of the extension's own marks its first
    // frame with RSV1 there; so does a message that arrives compressed. (Frames lws sends on its
    // own, control frames and the rest of a buffered send, come with no send mode set.)
    if (reason == LWS_EXT_CB_PACKET_TX_PRESEND && send_mode == DEFLATE_GUARD_PRECOMPRESSED) {
        struct lws_tokens *frame = in;
        if (!frame || !frame->token || frame->len < 2) return 0;
        // Text (1) or binary (2): RSV1 goes on a message's first frame only.
        unsigned char opcode = frame->token[0] & 0x0f;
        if (opcode == 1 || opcode == 2) frame->token[0] |= 0x40;
        return 0;
    }
    // "Unknown" (PMDR_UNKNOWN, 0): lws's parsers consume the frame and hand it on as it came.
    if (reason == LWS_EXT_CB_PAYLOAD_RX) return 0;
    if (reason != LWS_EXT_CB_PAYLOAD_TX) return lws_extension_callback_pm_deflate(context, ext, wsi, reason, user, in, len);
    // Leaving the payload as lws handed it sends the frame as it is; with nothing compressed by the
    // extension, its PRESEND leaves RSV1 clear.
    if (send_mode != DEFLATE_GUARD_LWS_COMPRESSES) return 0;
    sigjmp_buf recovery;
    if (sigsetjmp(recovery, 0)) {
        compressing = 0;
        note_trip(wsi);
        return -1;
    }
    armed = &recovery;
    compressing = 1;
    int result = lws_extension_callback_pm_deflate(context, ext, wsi, reason, user, in, len);
    compressing = 0;
    armed = NULL;
    return result;
}

int deflate_guard_take_trip(struct lws *wsi) {
    for (unsigned i = 0; wsi && i < TRIPS_KEPT; i++) {
        if (tripped[i] == wsi) {
            tripped[i] = NULL;
            return 1;
        }
    }
    return 0;
}
