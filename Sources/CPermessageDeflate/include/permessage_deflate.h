// permessage-deflate (RFC 7692) negotiated through lws 4.1.6's extension hooks with a callback of
// Pinwheel's own, which compresses and inflates nothing: messages are compressed before they are
// queued and inflated whole once received (CMessageDeflate). See docs/libwebsockets.md.
#ifndef PINWHEEL_PERMESSAGE_DEFLATE_H
#define PINWHEEL_PERMESSAGE_DEFLATE_H

#include <libwebsockets.h>

/// The extension list to hand lws as a vhost's or a client context's `extensions`: one entry,
/// "permessage-deflate", whose callback answers the handshake, passes received frames on as they came
/// (RSV1 and all) and marks the first frame of a message written compressed with RSV1. The client's
/// offer asks the server to compress each message on its own, as a server's upgrade response asks its
/// clients (DeflateNegotiation). Valid for the process lifetime.
const struct lws_extension *permessage_deflate_extensions(void);

/// Whether the next lws_write on this thread carries a message already compressed (RSV1 set on its
/// frame) or one sent as it is (RSV1 clear, which RFC 7692 allows on any message). Set it around one
/// lws_write of a whole message, on the lws service thread, and clear it after.
void permessage_deflate_set_compressed(int compressed);

#endif
