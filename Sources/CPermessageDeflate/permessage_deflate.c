// permessage-deflate without lws's permessage-deflate code.
//
// lws 4.1.6 refuses a frame with RSV1 set (Close 1002 "rsv bits", lws_ws_rx_sm in ops-ws.c) unless
// an extension is active on the connection, and activates one only through an entry of the
// extensions list whose name the peer offered (server) or accepted (client). So the entry stays, with
// this callback instead of lws_extension_callback_pm_deflate: lws's handshake code still parses the
// offer and writes the answer (echoing the argument-less parameters this callback accepts), its
// parsers hand every frame on unchanged when the extension answers "unknown", and the frame header of
// a message the transport compressed itself gets RSV1 just before it is sent. Nothing in lws inflates
// or deflates, so none of its deflate assertions can be reached (docs/libwebsockets.md).
#include "permessage_deflate.h"

#include <stddef.h>

// The parameters of RFC 7692 §7.1, so lws's parser of a server's answer (lws_ext_parse_options)
// knows each name. A server echoes the argument-less ones a client offered; the window sizes take an
// argument and lws leaves them out of its answer (the transport reads a client's
// server_max_window_bits itself, DeflatePolicy.server).
static const struct lws_ext_options parameters[] = {
    {"server_no_context_takeover", EXTARG_NONE},
    {"client_no_context_takeover", EXTARG_NONE},
    {"server_max_window_bits", EXTARG_OPT_DEC},
    {"client_max_window_bits", EXTARG_OPT_DEC},
    {NULL, 0},
};

// Set around the write of a message compressed before it was queued. Lws service thread only.
static _Thread_local int next_compressed;

void permessage_deflate_set_compressed(int compressed) { next_compressed = compressed; }

static int callback(struct lws_context *context, const struct lws_extension *ext, struct lws *wsi,
                    enum lws_extension_callback_reasons reason, void *user, void *in, size_t len) {
    (void)context;
    (void)ext;
    (void)wsi;
    (void)len;
    switch (reason) {
    case LWS_EXT_CB_CONSTRUCT:
    case LWS_EXT_CB_CLIENT_CONSTRUCT:
        // No state of its own on the connection; lws asks for the list of parameters it may parse.
        *(void **)user = NULL;
        if (in) *(const struct lws_ext_options **)in = parameters;
        return 0;
    case LWS_EXT_CB_PACKET_TX_PRESEND: {
        // The frame, header first, as lws is about to send it. Frames lws sends on its own (control
        // frames, the rest of a buffered send) come with nothing set.
        struct lws_tokens *frame = in;
        if (!next_compressed || !frame || !frame->token || frame->len < 2) return 0;
        // Text (1) or binary (2): RSV1 goes on a message's first frame only (RFC 7692 §6).
        unsigned char opcode = frame->token[0] & 0x0f;
        if (opcode == 1 || opcode == 2) frame->token[0] |= 0x40;
        return 0;
    }
    default:
        // PAYLOAD_RX and PAYLOAD_TX: 0 is PMDR_UNKNOWN, and lws's parsers and writer pass the payload
        // on as it came. OPTION_SET, NAMED_OPTION_SET and OPTION_CONFIRM: every parameter is
        // accepted (a server then echoes it), and lws_set_extension_option answers 0 exactly when
        // the extension is active on the connection.
        return 0;
    }
}

const struct lws_extension *permessage_deflate_extensions(void) {
    static const struct lws_extension extensions[] = {
        {"permessage-deflate", callback, "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
        {NULL, NULL, NULL},
    };
    return extensions;
}
