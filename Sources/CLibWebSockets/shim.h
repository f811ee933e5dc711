// What Swift cannot import from libwebsockets 4.1.6, made importable. See ../../docs/libwebsockets.md.
#ifndef PINWHEEL_LWS_SHIM_H
#define PINWHEEL_LWS_SHIM_H

#include <libwebsockets.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <ev.h>

/// LWS_PRE is a function-like macro: the headroom every lws_write buffer needs before its payload.
static const size_t SHIM_LWS_PRE = LWS_PRE;

/// lwsl_* are variadic macros; this logs one preformatted line.
static inline void shim_lws_log(int level, const char *message) {
    _lws_log(level, "%s\n", message);
}

/// Bytes the kernel received on a TCP socket, headers of TLS and WebSocket frames included: Linux's
/// tcp_info.tcpi_bytes_received (since 4.1). glibc's struct tcp_info ends before that field, so it is
/// read at its offset in the kernel's layout (linux/tcp.h: 128). -1 when the kernel does not say.
static inline long long shim_tcp_bytes_received(int fd) {
    unsigned char info[232] = {0};
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 136) return -1;
    unsigned long long value;
    memcpy(&value, info + 128, sizeof value);
    return (long long)value;
}

/// One TCP_INFO read for the server's policing sweep: bytes received (tcpi_bytes_received, offset 128
/// of the kernel's layout), bytes of ours the peer acknowledged (tcpi_bytes_acked, offset 120) and
/// whether the kernel holds output of ours the peer has not acknowledged: segments in flight
/// (tcpi_unacked, offset 24) or bytes not sent yet (tcpi_notsent_bytes, offset 144, Linux 4.6; with
/// the peer's window shut nothing is in flight and everything waits there). Returns 0, or -1 when
/// the kernel does not say (then the outputs are -1).
static inline int shim_tcp_counts(int fd, long long *received, long long *acked, long long *waiting) {
    unsigned char info[232] = {0};
    socklen_t length = sizeof info;
    *received = *acked = *waiting = -1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 136) return -1;
    unsigned long long value;
    memcpy(&value, info + 128, sizeof value);
    *received = (long long)value;
    memcpy(&value, info + 120, sizeof value);
    *acked = (long long)value;
    unsigned int segments, notsent = 0;
    memcpy(&segments, info + 24, sizeof segments);
    if (length >= 148) memcpy(&notsent, info + 144, sizeof notsent);
    *waiting = segments > 0 || notsent > 0;
    return 0;
}

/// lws_set_log_level takes a function pointer that Swift would have to spell; nil keeps lws's stderr emitter.
static inline void shim_lws_set_log_level(int levels) {
    lws_set_log_level(levels, NULL);
}

/// Sets lws's log levels and the function every line it logs goes through (lwsl_emit_stderr writes
/// them as lws would). The function is process-wide, like the levels.
static inline void shim_lws_set_log_emitter(int levels, void (*emit)(int level, const char *line)) {
    lws_set_log_level(levels, emit);
}

/// A best-effort 503 on a socket just accepted and about to be closed because the server holds as
/// many connections as it may: one non-blocking send into an empty socket buffer, never waiting.
static inline void shim_send_busy_response(int fd) {
    static const char response[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain\r\n"
        "Content-Length: 42\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
        "server at its connection limit; try again\n";
    (void)send(fd, response, sizeof response - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/// A libev loop of our own, handed to lws as a foreign loop. lws attaches a SIGINT watcher to every
/// loop it creates itself, and libev aborts when a second loop in the process does the same (a
/// server and a client in one process); foreign loops get no signal watcher and leave SIGINT to the app.
static inline void *shim_ev_loop_new(void) {
    return ev_loop_new(EVFLAG_AUTO);
}

/// Makes ev_run (inside lws_service) return once the current callback is done.
static inline void shim_ev_break(void *loop) {
    ev_break((struct ev_loop *)loop, EVBREAK_ALL);
}

static inline void shim_ev_loop_destroy(void *loop) {
    ev_loop_destroy((struct ev_loop *)loop);
}

/// A libev prepare watcher: `run(owner)` each time the loop is about to poll, after the callbacks of
/// the events it last polled. It does not keep the loop running on its own.
struct shim_before_polling {
    ev_prepare watcher;
    void (*run)(void *owner);
    void *owner;
};

static inline void shim_before_polling_fire(struct ev_loop *loop, ev_prepare *watcher, int revents) {
    (void)loop;
    (void)revents;
    struct shim_before_polling *hook = (struct shim_before_polling *)watcher;
    hook->run(hook->owner);
}

/// Starts a hook on `loop`; NULL when memory ran out. The loop's thread, or before it runs.
static inline struct shim_before_polling *shim_before_polling_start(void *loop, void (*run)(void *), void *owner) {
    struct shim_before_polling *hook = malloc(sizeof *hook);
    if (!hook) return NULL;
    hook->run = run;
    hook->owner = owner;
    ev_prepare_init(&hook->watcher, shim_before_polling_fire);
    ev_prepare_start((struct ev_loop *)loop, &hook->watcher);
    ev_unref((struct ev_loop *)loop);
    return hook;
}

/// Stops and frees a hook. The loop's thread.
static inline void shim_before_polling_stop(void *loop, struct shim_before_polling *hook) {
    ev_ref((struct ev_loop *)loop);
    ev_prepare_stop((struct ev_loop *)loop, &hook->watcher);
    free(hook);
}

/// Has lws service `wsi` as it would on a poll that found its socket writable: lws clears the POLLOUT
/// it was asked for and calls WRITEABLE. Outside any lws callback, on the service thread.
static inline void shim_service_as_writable(struct lws *wsi) {
    struct lws_pollfd pollfd;
    pollfd.fd = lws_get_socket_fd(wsi);
    pollfd.events = LWS_POLLOUT;
    pollfd.revents = LWS_POLLOUT;
    lws_service_fd(lws_get_context(wsi), &pollfd);
}

#endif
