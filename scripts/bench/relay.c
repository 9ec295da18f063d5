/*
 * relay: the baseline of scripts/bench/fanout. The least a broadcast server
 * can do over plain libuv: accept connections, cut what each one sends into
 * lines, and forward every complete line, unchanged, to every connection:
 * first back to its sender (which stands for the ack of a commit: Rewind
 * pushes an event to its author too), then to everyone else. No parsing, no
 * auth, no storage.
 *
 * It keeps what Rewind does that costs or saves the same work, so that the
 * comparison is about protocol work and not about I/O tricks:
 *   - TCP_NODELAY and a listen backlog of 1024, as the server has;
 *   - one buffer per batch of lines, shared (refcounted) by every recipient,
 *     and one write per recipient per read: Rewind encodes a push once and
 *     writes each terminal's queue once per loop turn;
 *   - a recipient with more than --max-output-bytes (4 MiB) unsent is closed.
 * On accept it sends one greeting line ("hi"), so a client knows it has been
 * accepted and will get what is sent from then on (what `hello` tells a
 * Rewind client).
 *
 *   relay [--listen 127.0.0.1:0] [--max-output-bytes N]
 * prints `relay listening on HOST:PORT` once ready; SIGTERM/SIGINT end it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct client {
    uv_tcp_t tcp;
    struct client *prev, *next;
    char *carry;            /* the start of a line cut by a read */
    size_t clen, ccap;
    int closing;
} client_t;

typedef struct { int refs; size_t len; char data[]; } shared_t;
typedef struct { uv_write_t req; uv_buf_t buf; shared_t *sh; } wreq_t;

static uv_loop_t *loop;
static uv_tcp_t server;
static client_t *clients;   /* doubly linked: O(1) removal */
static size_t max_output = 4 << 20;
static long long slow_closed;

static void on_closed(uv_handle_t *h) {
    client_t *c = h->data;
    free(c->carry);
    free(c);
}

static void drop(client_t *c) {
    if (c->closing) return;
    c->closing = 1;
    if (c->prev) c->prev->next = c->next; else clients = c->next;
    if (c->next) c->next->prev = c->prev;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void unref_shared(shared_t *sh) {
    if (--sh->refs == 0) free(sh);
}

static void on_written(uv_write_t *req, int status) {
    (void)status;
    wreq_t *w = (wreq_t *)req;
    unref_shared(w->sh);
    free(w);
}

static void send_shared(client_t *c, shared_t *sh) {
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) + sh->len > max_output) {
        if (++slow_closed <= 10) fprintf(stderr, "relay: closing a slow client (more than %zu bytes unsent)\n", max_output);
        drop(c);
        return;
    }
    wreq_t *w = malloc(sizeof *w);
    w->sh = sh;
    sh->refs++;
    w->buf = uv_buf_init(sh->data, (unsigned)sh->len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &w->buf, 1, on_written) < 0) {
        unref_shared(sh);
        free(w);
        drop(c);
    }
}

/* Forwards `n` bytes of complete lines from `from` to it, then to everyone else. */
static void broadcast(client_t *from, const char *p, size_t n) {
    shared_t *sh = malloc(sizeof *sh + n);
    sh->refs = 1; /* ours, until every write is queued */
    sh->len = n;
    memcpy(sh->data, p, n);
    send_shared(from, sh);
    for (client_t *c = clients, *next; c; c = next) {
        next = c->next;
        if (c != from && !c->closing) send_shared(c, sh);
    }
    unref_shared(sh);
}

static char readbuf[1 << 18];

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h; (void)suggested;
    *buf = uv_buf_init(readbuf, sizeof readbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    client_t *c = s->data;
    if (n == 0) return;
    if (n < 0) { drop(c); return; }
    const char *p = buf->base, *end = buf->base + n;
    const char *last_nl = NULL;
    for (const char *q = end; q > p; q--) if (q[-1] == '\n') { last_nl = q - 1; break; }
    if (!last_nl) {
        /* No line ends here yet: keep it all for later. */
        if (c->clen + n > c->ccap) { c->ccap = (c->clen + n) * 2; c->carry = realloc(c->carry, c->ccap); }
        memcpy(c->carry + c->clen, p, (size_t)n);
        c->clen += (size_t)n;
        return;
    }
    size_t whole = (size_t)(last_nl + 1 - p);
    if (c->clen) {
        /* Complete the carried line, then send carry + this read's lines as one. */
        size_t total = c->clen + whole;
        if (total > c->ccap) { c->ccap = total * 2; c->carry = realloc(c->carry, c->ccap); }
        memcpy(c->carry + c->clen, p, whole);
        c->clen = 0;
        broadcast(c, c->carry, total);
    } else {
        broadcast(c, p, whole);
    }
    size_t rest = (size_t)(end - (last_nl + 1));
    if (rest) {
        if (rest > c->ccap) { c->ccap = rest * 2; c->carry = realloc(c->carry, c->ccap); }
        memcpy(c->carry, last_nl + 1, rest);
        c->clen = rest;
    }
}

static void on_greeting_written(uv_write_t *req, int status) {
    (void)status;
    free(req);
}

static void on_connection(uv_stream_t *srv, int status) {
    if (status < 0) { fprintf(stderr, "relay: accept: %s\n", uv_strerror(status)); return; }
    client_t *c = calloc(1, sizeof *c);
    uv_tcp_init(loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(srv, (uv_stream_t *)&c->tcp) < 0) { uv_close((uv_handle_t *)&c->tcp, on_closed); return; }
    uv_tcp_nodelay(&c->tcp, 1);
    c->next = clients;
    if (clients) clients->prev = c;
    clients = c;
    static char hi[] = "hi\n";
    uv_write_t *req = malloc(sizeof *req);
    uv_buf_t b = uv_buf_init(hi, 3);
    uv_write(req, (uv_stream_t *)&c->tcp, &b, 1, on_greeting_written);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_signal(uv_signal_t *s, int sig) {
    (void)s; (void)sig;
    exit(0);
}

int main(int argc, char **argv) {
    const char *listen_at = "127.0.0.1:0";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--listen") && i + 1 < argc) listen_at = argv[++i];
        else if (!strcmp(argv[i], "--max-output-bytes") && i + 1 < argc) max_output = strtoull(argv[++i], NULL, 10);
        else { fprintf(stderr, "usage: relay [--listen HOST:PORT] [--max-output-bytes N]\n"); return 2; }
    }
    char host[256];
    const char *colon = strrchr(listen_at, ':');
    if (!colon || colon - listen_at >= (long)sizeof host) { fprintf(stderr, "relay: --listen HOST:PORT\n"); return 2; }
    memcpy(host, listen_at, (size_t)(colon - listen_at));
    host[colon - listen_at] = 0;
    signal(SIGPIPE, SIG_IGN);
    loop = uv_default_loop();
    struct sockaddr_in addr;
    uv_ip4_addr(host, atoi(colon + 1), &addr);
    uv_tcp_init(loop, &server);
    int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (!rc) rc = uv_listen((uv_stream_t *)&server, 1024, on_connection);
    if (rc) { fprintf(stderr, "relay: listen on %s: %s\n", listen_at, uv_strerror(rc)); return 1; }
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("relay listening on %s:%d\n", host, ntohs(bound.sin_port));
    fflush(stdout);
    static uv_signal_t sterm, sint;
    uv_signal_init(loop, &sterm);
    uv_signal_start(&sterm, on_signal, SIGTERM);
    uv_signal_init(loop, &sint);
    uv_signal_start(&sint, on_signal, SIGINT);
    return uv_run(loop, UV_RUN_DEFAULT);
}
