/*
 * loadgen: the client side of Rewind's benchmarks: many terminals in one
 * process on one libuv loop (the fanout writer on a thread and loop of its
 * own), timed on one clock. Prints `key value` lines; errors go to stderr.
 *
 *   commit --port P --tokens FILE [--clients N] [--docs D] [--seconds S]
 *          [--warmup S] [--pg-postmaster PID] [--shared] [--rate R]
 *       terminal i (token i % U of FILE's U tokens) has doc PREFIX-(i % D)
 *       open and submits one `set` op, waits for its ack, submits the next.
 *       Terminal j < D creates doc j as its own user (documents are private
 *       to their creator), so the terminals sharing a document must be its
 *       creator's user: U must divide D when D < N (unless --shared: the
 *       documents were shared with every user beforehand). --warmup: submit for S s
 *       before the measured window. --rate R: R submits per second over all
 *       terminals, each terminal on its own schedule and never two in flight
 *       (default 0: each submits again as soon as its ack comes). --pg-postmaster: CPU of that
 *       PostgreSQL's processes (backends, walwriter, others) over the window.
 *   fanout --port P --writer-token T --token T2 [--clients N] [--seconds S]
 *          [--rate R] [--window W] [--doc NAME] [--share USER[:ROLE],...]
 *          [--relay --line-bytes B] [--port2 P2 --server-pid2 PID2]
 *       a writer submits to NAME, which N terminals have open: at R/s, or
 *       (--rate 0) as fast as it goes, never more than W transactions not yet
 *       delivered to every terminal. The writer creates NAME; documents are
 *       private to their creator, so --share has it share NAME with the
 *       terminals' user(s) (ROLE editor, the default, or viewer) before any
 *       terminal connects. --relay: to relay.c, the writer sending B-byte
 *       lines shaped like Rewind's events push. --port2: a second instance
 *       on the same database; odd-numbered terminals connect to it (the
 *       writer and even ones to P), and server CPU is both processes'.
 *   idle --port P (--token T | --relay) [--clients N] [--no-open]
 *       N terminals say hello and open doc "idle", print "ready N", and stay
 *       until SIGTERM. --no-open: hello alone (what a terminal holds before
 *       it opens anything). --unready K: at most K terminals connecting or
 *       in set-up at once (K = 1: one after the other), else up to 256.
 *   --websocket (fanout, idle): the terminals (not the writer) speak the
 *       protocol over a WebSocket on the same port: GET /ws upgrade, then
 *       each request in a masked text frame; the server's frames are
 *       unwrapped back into lines before anything else sees them.
 * Also --host, --prefix (client ids, commit's tx ids and documents),
 * --server-pid (its CPU). In fanout and idle mode the writer (or the first
 * terminal) creates the document. Connects are ramped: at most 256 in flight.
 */
#define _GNU_SOURCE
#include <uv.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <linux/net_tstamp.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MODE_COMMIT, MODE_FANOUT, MODE_IDLE };
enum { S_CONNECTING, S_GREETING, S_HELLO, S_CREATE, S_SHARE, S_OPEN, S_READY };
enum { ID_HELLO = 1, ID_OPEN = 2, ID_SUBMIT0 = 10, ID_CREATE0 = 1000000, ID_SHARE0 = 2000000 };

typedef struct conn {
    uv_poll_t poll;
    int fd, events, index, state, is_writer;
    const char *token;
    char *carry, *out;    /* a line cut by a read; bytes the socket did not take yet */
    size_t clen, ccap, olen, ocap;
    int64_t version;      /* newest version of its document this terminal knows */
    long pending_id;      /* commit: the submit awaiting its reply (0: none) */
    uint64_t sent_at;
    uint64_t due;         /* commit --rate: when its next submit is due (0: not waiting) */
    long submits, creates_left;   /* creates_left: create_doc (then share) replies still due */
    int ws, ws_open;      /* a WebSocket terminal; its upgrade answered */
    unsigned char wh[14]; /* the header of the server's frame being read */
    int whlen, wop;       /* bytes of it so far; its opcode */
    uint64_t wleft;       /* payload bytes of that frame still to come */
} conn_t;

/* options */
static int mode, relay, nterm = -1, seconds = 10, warmup, ndocs = 10, window_ = 8, line_bytes = 330, port, server_pid, postmaster;
/* fanout over two instances: odd terminals connect to port2; server CPU is both processes'. */
static int port2, server_pid2, websocket, no_open, max_unready;
static double rate;
static const char *host = "127.0.0.1", *token, *writer_token, *tokens_file, *prefix = "lg", *docname = "fanout", *share_with;
static char **tokens;
static int ntokens;   /* --tokens FILE or --token */
static int shared;    /* --shared: the documents were shared with every token's user beforehand */

static uv_loop_t *loop;                   /* the terminals' loop (main thread) */
static conn_t *conns;
static int next_to_connect, in_flight_connects, ready, running, warming, stopping;
static uint64_t start_ns, stop_ns, ready_since;
static double cpu_start, server_cpu_start;
static uv_timer_t stopper;
static uv_signal_t sigterm;
static long disconnects, acks, late_acks, warm_acks;   /* acks: commit mode */
static uv_timer_t warmer;
static atomic_long errors, reads, stamped_reads;
static atomic_int byes;
static int64_t real_minus_mono;           /* CLOCK_REALTIME - uv_hrtime(), ns */
static __thread char readbuf[1 << 16];

static double *lat;                       /* commit: ack latencies */
static size_t nlat, caplat;

/* fanout: per transaction n, and per delivery */
#define MAXTX (1 << 20)
static uint64_t *sent_ns, *commit_ns;
static int *dcount;
static atomic_long sent, completed, committed;
static atomic_int writer_go, writer_stop;
static uint64_t *del_t, *del_app;         /* when it arrived, when we read it */
static int32_t *del_n;                    /* which transaction */
static size_t ndel, capdel;
static int push_bytes;
static conn_t writer;                     /* on its own thread: wloop, woken by wwake */
static uv_loop_t wloop;
static uv_async_t wwake, main_wake;
static uv_timer_t wpace;

static void writer_line(conn_t *c, char *line, uint64_t arrived), session_line(conn_t *c, char *line);
static void terminal_line(conn_t *c, char *line, uint64_t arrived, uint64_t now);
static void on_connected(conn_t *c), connect_more(void), submit(conn_t *c), writer_ready(void), terminal_ready(conn_t *c);
static void on_poll(uv_poll_t *p, int status, int events);

static void fatal(const char *what, const char *line) {
    fprintf(stderr, "loadgen: %s%s%s\n", what, line ? ": " : "", line ? line : "");
    exit(3);
}

static int64_t field_int(const char *line, const char *key) { const char *p = strstr(line, key); return p ? strtoll(p + strlen(key), NULL, 10) : -1; }
static int is_push(const char *line) { return strncmp(line, "{\"push\":", 8) == 0; }
static int is_events(const char *line) { return strncmp(line, "{\"push\":\"events\"", 16) == 0; }
static int is_ok(const char *line) { return strstr(line, "\"ok\":true") != NULL; }
/* Errors by code (main loop only for the tally; the writer thread only counts). */
#define MAXCODES 16
static char codes[MAXCODES][32];
static long code_count[MAXCODES];
static void tally_code(const char *line) {
    const char *p = strstr(line, "\"code\":\"");
    char code[32] = "unknown";
    if (p) { p += 8; size_t n = strcspn(p, "\""); if (n >= sizeof code) n = sizeof code - 1; memcpy(code, p, n); code[n] = 0; }
    for (int i = 0; i < MAXCODES; i++) {
        if (!codes[i][0]) strcpy(codes[i], code);
        if (!strcmp(codes[i], code)) { code_count[i]++; return; }
    }
}
static void count_error(const char *what, const char *line) {
    if (atomic_fetch_add(&errors, 1) < 5) fprintf(stderr, "loadgen: %s: %s\n", what, line);
    if (mode == MODE_COMMIT) tally_code(line);
}

/* ---- sockets: non-blocking, polled by libuv, read with recvmsg so that each
 * read carries the kernel's arrival time (SO_TIMESTAMPING, software RX): over
 * loopback, the moment the server wrote the bytes, however late we read them.
 * Times are kept on uv_hrtime's clock (CLOCK_MONOTONIC). ---- */

static void calibrate_clocks(void) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 9; i++) {
        struct timespec r;
        uint64_t m0 = uv_hrtime();
        clock_gettime(CLOCK_REALTIME, &r);
        uint64_t m1 = uv_hrtime();
        if (m1 - m0 < best) { best = m1 - m0; real_minus_mono = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec - (int64_t)((m0 + m1) / 2); }
    }
}

static void poll_update(conn_t *c) {
    int ev = c->state == S_CONNECTING ? UV_WRITABLE : UV_READABLE | (c->olen ? UV_WRITABLE : 0);
    if (ev != c->events) { c->events = ev; uv_poll_start(&c->poll, ev, on_poll); }
}

static void conn_lost(conn_t *c, const char *why) {
    if (!running && !warming && !stopping && mode != MODE_IDLE) fatal("a connection closed during set-up", why);
    if (c->is_writer) fatal("the writer's connection closed", why);
    if (++disconnects <= 5) fprintf(stderr, "loadgen: terminal %d disconnected: %s\n", c->index, why);
    uv_poll_stop(&c->poll);
    close(c->fd);
    c->fd = -1;
}

static void flush_out(conn_t *c) {
    while (c->olen) {
        ssize_t w = send(c->fd, c->out, c->olen, MSG_NOSIGNAL);
        if (w < 0) { if (errno != EAGAIN && errno != EINTR) conn_lost(c, strerror(errno)); return; }
        memmove(c->out, c->out + w, c->olen - (size_t)w);
        c->olen -= (size_t)w;
    }
}

static void send_line(conn_t *c, const char *s, size_t n) {
    if (c->fd < 0) return;
    if (c->olen + n + 14 > c->ocap) { c->ocap = (c->olen + n + 14) * 2; c->out = realloc(c->out, c->ocap); }
    if (c->ws && c->ws_open) {   /* one masked text frame (mask 0: the payload as it is) */
        unsigned char *h = (unsigned char *)c->out + c->olen;
        int hl = 2;
        h[0] = 0x81;
        if (n < 126) h[1] = 0x80 | (unsigned char)n;
        else { h[1] = 0x80 | 126; h[2] = (unsigned char)(n >> 8); h[3] = (unsigned char)n; hl = 4; }
        memset(h + hl, 0, 4);
        c->olen += (size_t)hl + 4;
    }
    memcpy(c->out + c->olen, s, n);
    c->olen += n;
    if (c->state != S_CONNECTING) flush_out(c);
    if (c->fd >= 0) poll_update(c);
}

static void sendf(conn_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sendf(conn_t *c, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof line) fatal("line too long", NULL);
    send_line(c, line, (size_t)n);
}

static void send_hello(conn_t *c);

/* A WebSocket terminal's bytes as the server's lines: the upgrade's response
 * is skipped (then the hello goes), and the payloads of text and continuation
 * frames are moved down over their headers in readbuf, in place. Returns the
 * bytes of lines left in readbuf (-1: the connection was lost). */
static ssize_t ws_unwrap(conn_t *c, ssize_t n) {
    char *p = readbuf, *end = readbuf + n, *w = readbuf;
    if (!c->ws_open) {
        char *e = memmem(p, (size_t)n, "\r\n\r\n", 4);
        if (!e || strncmp(p, "HTTP/1.1 101", 12) != 0) { conn_lost(c, "the WebSocket upgrade was refused (or its response cut)"); return -1; }
        c->ws_open = 1;
        p = e + 4;
        send_hello(c);
    }
    while (p < end) {
        if (c->wleft == 0 && c->whlen >= 0) {   /* a header */
            while (p < end && c->whlen < 2) c->wh[c->whlen++] = (unsigned char)*p++;
            if (c->whlen < 2) break;
            int need = 2 + ((c->wh[1] & 0x7F) == 126 ? 2 : (c->wh[1] & 0x7F) == 127 ? 8 : 0);
            while (p < end && c->whlen < need) c->wh[c->whlen++] = (unsigned char)*p++;
            if (c->whlen < need) break;
            uint64_t len = c->wh[1] & 0x7F;
            if (len == 126) len = (uint64_t)c->wh[2] << 8 | c->wh[3];
            else if (len == 127) { len = 0; for (int i = 2; i < 10; i++) len = len << 8 | c->wh[i]; }
            c->wop = c->wh[0] & 0x0F;
            c->wleft = len;
            c->whlen = len ? -1 : 0;   /* -1: inside a payload */
            if (c->wop == 8) { conn_lost(c, "closed by the server (WebSocket close)"); return -1; }
            continue;
        }
        size_t take = (size_t)(end - p) < c->wleft ? (size_t)(end - p) : (size_t)c->wleft;
        if (c->wop == 0 || c->wop == 1) { memmove(w, p, take); w += take; }   /* pings are not answered: runs are short */
        p += take;
        c->wleft -= take;
        if (!c->wleft) c->whlen = 0;
    }
    return w - readbuf;
}

/* Reads what is there; hands on each complete line with its arrival time. */
static void read_lines(conn_t *c) {
    for (;;) {
        char cbuf[256];
        struct iovec iov = { readbuf, sizeof readbuf };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        ssize_t n = recvmsg(c->fd, &m, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) { conn_lost(c, n == 0 ? "closed by the server" : strerror(errno)); return; }
        uint64_t now = uv_hrtime(), arrived = now;
        atomic_fetch_add(&reads, 1);
        if (c->ws && (n = ws_unwrap(c, n)) < 0) return;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_TIMESTAMPING) continue;
            struct timespec ts[3];
            memcpy(ts, CMSG_DATA(h), sizeof ts);
            int64_t real = (int64_t)ts[0].tv_sec * 1000000000 + ts[0].tv_nsec;
            if (real) { arrived = (uint64_t)(real - real_minus_mono); atomic_fetch_add(&stamped_reads, 1); }
        }
        for (char *p = readbuf, *end = readbuf + n; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p;
            size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
            if (c->clen || !nl) {   /* a line cut by a read: gather it */
                if (c->clen + len + 1 > c->ccap) { c->ccap = (c->clen + len + 1) * 2; c->carry = realloc(c->carry, c->ccap); }
                memcpy(c->carry + c->clen, p, len);
                c->clen += len;
                if (!nl) break;
                line = c->carry;
                line[c->clen - 1] = 0;
                c->clen = 0;
            } else {
                *nl = 0;
            }
            p += len;
            if (strncmp(line, "{\"push\":\"bye\"", 13) == 0) {
                if (atomic_fetch_add(&byes, 1) < 5) fprintf(stderr, "loadgen: connection %d got %s\n", c->index, line);
            }
            if (c->state != S_READY) session_line(c, line);
            else if (c->is_writer) writer_line(c, line, arrived);
            else terminal_line(c, line, arrived, now);
            if (c->fd < 0) return;
        }
        if ((size_t)n < sizeof readbuf) return;
    }
}

static void on_poll(uv_poll_t *p, int status, int events) {
    conn_t *c = p->data;
    if (c->fd < 0) return;
    if (status < 0) { conn_lost(c, uv_strerror(status)); return; }
    if (c->state == S_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) { fprintf(stderr, "loadgen: connect %d: %s\n", c->index, strerror(err)); exit(2); }
        on_connected(c);
    } else {
        if (events & UV_WRITABLE) flush_out(c);
        if (c->fd >= 0 && (events & UV_READABLE)) read_lines(c);
    }
    if (c->fd >= 0) poll_update(c);
}

static void connect_one(conn_t *c, uv_loop_t *l) {
    struct sockaddr_in addr;
    int to = port2 && c != &writer && c->index % 2 == 1 ? port2 : port;
    if (uv_ip4_addr(host, to, &addr) != 0) fatal("bad --host", host);
    int one = 1, ts = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) fatal("socket", strerror(errno));
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPING, &ts, sizeof ts);
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
        fprintf(stderr, "loadgen: connect %d: %s\n", c->index, strerror(errno));
        exit(2);
    }
    uv_poll_init_socket(l, &c->poll, c->fd);
    c->poll.data = c;
    c->state = S_CONNECTING;
    poll_update(c);
}

/* Ramp: at most 256 connects in flight, so the listen backlog never overflows.
 * Commit mode: the creators of the documents (terminals 0 … D-1) first, the
 * others once they are all ready. Idle mode: terminal 0 first, alone: it
 * creates the document. */
static int creators(void) { return mode == MODE_COMMIT ? (ndocs < nterm ? ndocs : nterm) : mode == MODE_IDLE ? 1 : 0; }
static void connect_more(void) {
    int first = creators();
    while (next_to_connect < nterm && in_flight_connects < 256 && (!max_unready || next_to_connect - ready < max_unready)) {
        if (first && next_to_connect == first && ready < first) return;
        conn_t *c = &conns[next_to_connect];
        c->index = next_to_connect++;
        c->token = tokens[c->index % ntokens];
        in_flight_connects++;
        connect_one(c, loop);
    }
}

/* ---- set-up: hello → (creator: create_doc) → open → ready ---- */

static void doc_of(int i, char *out, size_t n) {
    if (mode == MODE_COMMIT) snprintf(out, n, "%s-%d", prefix, i % ndocs);
    else snprintf(out, n, "%s", mode == MODE_IDLE ? "idle" : docname);
}

static void send_hello(conn_t *c) {
    char id[16];
    snprintf(id, sizeof id, c->is_writer ? "w" : "%d", c->index);
    sendf(c, "{\"id\":%d,\"type\":\"hello\",\"token\":\"%s\",\"client\":\"%s-%s\"}\n", ID_HELLO, c->token, prefix, id);
}

static void on_connected(conn_t *c) {
    if (!c->is_writer) in_flight_connects--;
    if (relay) {
        c->state = S_GREETING;   /* the relay says "hi" once it has accepted us */
    } else {
        c->state = S_HELLO;
        if (websocket && !c->is_writer) {   /* the hello goes once the upgrade is answered (ws_unwrap) */
            c->ws = 1;
            sendf(c, "GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", host, port);
        } else {
            send_hello(c);
        }
    }
    if (!c->is_writer) connect_more();
}

static void session_line(conn_t *c, char *line) {
    char doc[64];
    int64_t re = field_int(line, "\"re\":");
    if (c->state == S_GREETING) {
        if (strcmp(line, "hi") != 0) return;
        c->state = S_READY;
        if (c->is_writer) writer_ready(); else terminal_ready(c);
        return;
    }
    if (is_push(line)) return;
    if (c->state == S_HELLO && re == ID_HELLO) {
        if (!is_ok(line)) fatal("hello refused", line);
        if (no_open) {   /* idle --no-open: what a terminal holds after hello alone */
            c->state = S_READY;
            terminal_ready(c);
            return;
        }
        if (c->is_writer || (!relay && mode != MODE_FANOUT && c->index < creators())) {
            c->creates_left = 1;   /* its own document (commit), or the one of fanout/idle */
            doc_of(c->index < 0 ? 0 : c->index, doc, sizeof doc);
            sendf(c, "{\"id\":%d,\"type\":\"create_doc\",\"doc\":\"%s\"}\n", ID_CREATE0, doc);
            c->state = S_CREATE;
            return;
        }
    } else if (c->state == S_CREATE && re >= ID_CREATE0) {
        /* conflict: it exists already (an earlier run on this server): fine */
        if (!is_ok(line) && !strstr(line, "\"code\":\"conflict\"")) fatal("create_doc failed", line);
        if (--c->creates_left > 0) return;
        if (c->is_writer && share_with && *share_with) {
            /* --share "u1:editor,u2": one share request per user, all answered before the open */
            char list[1024], *save = NULL;
            snprintf(list, sizeof list, "%s", share_with);
            c->creates_left = 0;
            for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
                char *role = strchr(u, ':');
                if (role) *role++ = 0;
                sendf(c, "{\"id\":%ld,\"type\":\"share\",\"doc\":\"%s\",\"user\":\"%s\",\"role\":\"%s\"}\n",
                      ID_SHARE0 + c->creates_left++, docname, u, role && *role ? role : "editor");
            }
            c->state = S_SHARE;
            return;
        }
    } else if (c->state == S_SHARE && re >= ID_SHARE0) {
        if (!is_ok(line)) fatal("share failed", line);
        if (--c->creates_left > 0) return;
    } else if (c->state == S_OPEN && re == ID_OPEN) {
        if (!is_ok(line)) fatal("open failed", line);
        c->version = field_int(line, "\"version\":");
        c->state = S_READY;
        if (c->is_writer) writer_ready(); else terminal_ready(c);
        return;
    } else {
        if (!is_ok(line)) fatal("unexpected reply during set-up", line);
        return;
    }
    doc_of(c->index, doc, sizeof doc);
    sendf(c, "{\"id\":%d,\"type\":\"open\",\"doc\":\"%s\"}\n", ID_OPEN, doc);
    c->state = S_OPEN;
}

/* ---- the measured window ---- */

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

/* utime + stime of another process, in seconds (-1 if unknown). */
static double proc_cpu_seconds(int pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');   /* the fields after the command name */
    unsigned long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* --pg-postmaster: CPU ticks of the postmaster's children, by pid, with
 * their kind from the process title: 0 backend, 1 walwriter, 2 other. */
#define MAXPG 2048
typedef struct { int pid, kind; unsigned long long ticks; } pgproc_t;
static pgproc_t pg_start[MAXPG];
static int npg_start;
static const char *pg_kinds[] = { "backends", "walwriter", "other" };

static int pg_scan(pgproc_t *out) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) && n < MAXPG) {
        int pid = atoi(e->d_name);
        char path[64], buf[1024];
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        char *p = strrchr(buf, ')');
        int ppid;
        unsigned long ut, st;
        if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ppid, &ut, &st) != 3 || ppid != postmaster) continue;
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        f = fopen(path, "r");
        k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[k] = 0;
        out[n].pid = pid;
        out[n].kind = strstr(buf, "walwriter") ? 1
                    : (strstr(buf, "checkpointer") || strstr(buf, "background writer") || strstr(buf, "autovacuum") ||
                       strstr(buf, "launcher") || strstr(buf, "stats") || strstr(buf, "archiver")) ? 2 : 0;
        out[n++].ticks = ut + st;
    }
    closedir(d);
    return n;
}

/* The first line of /proc/stat, whole machine: user (+nice), system, irq
 * (+softirq), steal, idle, iowait ticks. */
#define NSYS 6
static unsigned long long sys_start[NSYS];
static const char *sys_names[NSYS] = { "user", "system", "irq", "steal", "idle", "iowait" };
static void sys_ticks(unsigned long long t[NSYS]) {
    unsigned long long u = 0, ni = 0, sy = 0, id = 0, io = 0, irq = 0, sirq = 0, steal = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &ni, &sy, &id, &io, &irq, &sirq, &steal) != 8) u = 0;
        fclose(f);
    }
    t[0] = u + ni; t[1] = sy; t[2] = irq + sirq; t[3] = steal; t[4] = id; t[5] = io;
}

static void report(void);
static void on_stop(uv_timer_t *t) {
    (void)t;
    static int waited;
    if (running) {
        running = 0;
        stopping = 1;
        stop_ns = uv_hrtime();
        double cpu = cpu_seconds(), scpu = proc_cpu_seconds(server_pid) + (server_pid2 ? proc_cpu_seconds(server_pid2) : 0), secs = (stop_ns - start_ns) / 1e9;
        printf("client_cpu_percent %.1f\n", 100 * (cpu - cpu_start) / secs);
        if (scpu >= 0) printf("server_cpu_percent %.1f\n", 100 * (scpu - server_cpu_start) / secs);
        double hz = (double)sysconf(_SC_CLK_TCK);
        if (postmaster > 0) {
            static pgproc_t now_[MAXPG];
            double by_kind[3] = { 0, 0, 0 };
            int n = pg_scan(now_), nb = 0;
            for (int i = 0; i < n; i++) {
                unsigned long long before = 0;   /* started during the window: all of it */
                for (int j = 0; j < npg_start; j++) if (pg_start[j].pid == now_[i].pid) { before = pg_start[j].ticks; break; }
                by_kind[now_[i].kind] += (double)(now_[i].ticks - before);
                nb += now_[i].kind == 0;
            }
            for (int k = 0; k < 3; k++) printf("pg_%s_cpu_percent %.1f\n", pg_kinds[k], 100 * by_kind[k] / hz / secs);
            printf("pg_backends %d\n", nb);
        }
        unsigned long long st[NSYS];
        sys_ticks(st);
        for (int k = 0; k < NSYS; k++) printf("system_%s_percent %.1f\n", sys_names[k], 100 * (st[k] - sys_start[k]) / hz / secs);
        atomic_store(&writer_stop, 1);
        /* Let what was sent arrive (commit: the acks still due; fanout: deliveries). */
        uv_timer_start(&stopper, on_stop, 50, 50);
        return;
    }
    int drained = 1;
    if (mode == MODE_COMMIT) { for (int i = 0; i < nterm; i++) if (conns[i].pending_id) drained = 0; }
    else drained = atomic_load(&completed) >= atomic_load(&sent);
    if (!drained && ++waited < 100) return;   /* at most 5 s */
    if (!drained) fprintf(stderr, "loadgen: not everything arrived within 5 s of the end\n");
    report();
    exit(0);
}

static void open_window(void) {
    fprintf(stderr, "loadgen: measuring for %d s\n", seconds);
    warming = 0;
    running = 1;
    start_ns = uv_hrtime();
    cpu_start = cpu_seconds();
    server_cpu_start = proc_cpu_seconds(server_pid) + (server_pid2 ? proc_cpu_seconds(server_pid2) : 0);
    if (postmaster > 0) npg_start = pg_scan(pg_start);
    sys_ticks(sys_start);
    uv_timer_start(&stopper, on_stop, (uint64_t)seconds * 1000, 0);
}

static void on_warm(uv_timer_t *t) { (void)t; open_window(); }

/* commit --rate: every millisecond, each terminal whose turn has come and whose last submit was answered submits. */
static uv_timer_t cpace;
static void on_commit_pace(uv_timer_t *t) {
    (void)t;
    if (!running && !warming) return;
    uint64_t now = uv_hrtime();
    for (int i = 0; i < nterm; i++) {
        conn_t *c = &conns[i];
        if (!c->pending_id && c->due && c->due <= now) submit(c);
    }
}

static void start_measuring(void) {
    fprintf(stderr, "loadgen: %d terminals ready\n", nterm);
    if (mode == MODE_COMMIT && warmup > 0) {
        fprintf(stderr, "loadgen: warming up for %d s\n", warmup);
        warming = 1;
        uv_timer_init(loop, &warmer);
        uv_timer_start(&warmer, on_warm, (uint64_t)warmup * 1000, 0);
    } else {
        open_window();
    }
    if (mode == MODE_COMMIT && rate > 0) {
        /* Paced: terminal i submits every nterm/rate seconds, the terminals spread evenly over that period. */
        uint64_t period = (uint64_t)(1e9 * nterm / rate), now = uv_hrtime();
        for (int i = 0; i < nterm; i++) conns[i].due = now + period * (uint64_t)i / (uint64_t)nterm + 1;
        uv_timer_init(loop, &cpace);
        uv_timer_start(&cpace, on_commit_pace, 1, 1);
    } else if (mode == MODE_COMMIT) {
        for (int i = 0; i < nterm; i++) submit(&conns[i]);
    } else {
        atomic_store(&writer_go, 1);
        uv_async_send(&wwake);
    }
}

static void on_sigterm(uv_signal_t *s, int sig) { (void)s; (void)sig; exit(0); }
static void terminal_ready(conn_t *c) {
    ready++;
    if (ready == creators() || max_unready) connect_more();
    if (ready < nterm) return;
    if (mode != MODE_IDLE) { start_measuring(); return; }
    printf("ready %d\nconnect_seconds %.2f\n", nterm, (uv_hrtime() - ready_since) / 1e9);
    fflush(stdout);
    fprintf(stderr, "loadgen: %d idle terminals ready\n", nterm);
}

/* ---- fanout: the writer, on its own thread ---- */

static void on_main_wake(uv_async_t *a) { (void)a; if (next_to_connect == 0) connect_more(); }
static void writer_ready(void) { uv_async_send(&main_wake); }   /* connect the terminals */

static void writer_pump(void) {
    if (!atomic_load(&writer_go) || atomic_load(&writer_stop)) return;
    long due = rate > 0 ? (long)((uv_hrtime() - start_ns) / 1e9 * rate) + 1 : MAXTX;
    while (atomic_load(&sent) < due && atomic_load(&sent) - atomic_load(&completed) < window_) submit(&writer);
}

static void on_pace(uv_timer_t *t) { (void)t; writer_pump(); }

static void on_wake(uv_async_t *a) {
    (void)a;
    if (atomic_load(&writer_go) && rate > 0 && !uv_is_active((uv_handle_t *)&wpace)) uv_timer_start(&wpace, on_pace, 1, 1);
    writer_pump();
}

static void *writer_main(void *arg) { (void)arg; uv_run(&wloop, UV_RUN_DEFAULT); return NULL; }

/* Its own events push (relay: its line echoed) is its commit ack. */
static void writer_line(conn_t *c, char *line, uint64_t arrived) {
    const char *t = strstr(line, "\"tx\":\"w-");
    if (t && (relay || is_events(line))) {
        long n = strtol(t + 8, NULL, 10);
        if (n >= 0 && n < atomic_load(&sent) && !commit_ns[n]) commit_ns[n] = arrived;
        if (!push_bytes) push_bytes = (int)strlen(line) + 1;
        if (relay) atomic_fetch_add(&committed, 1);
        int64_t v = field_int(line, "\"version\":");
        if (v > c->version) c->version = v;
    } else if (!is_push(line) && field_int(line, "\"re\":") >= ID_SUBMIT0) {
        if (is_ok(line)) atomic_fetch_add(&committed, 1); else count_error("the writer's submit failed", line);
    }
}

/* ---- submits and deliveries ---- */

static void submit(conn_t *c) {
    char doc[64], line[4096];
    if (mode == MODE_COMMIT) {
        doc_of(c->index, doc, sizeof doc);
        c->pending_id = ID_SUBMIT0 + c->submits++;
        /* key: the terminal's place among those sharing its document (props per node are limited). */
        sendf(c, "{\"id\":%ld,\"type\":\"submit\",\"doc\":\"%s\",\"tx\":\"%s-%d-%ld\",\"base\":%lld,"
                 "\"ops\":[{\"op\":\"set\",\"node\":\"root\",\"key\":\"k%d\",\"value\":%ld}]}\n",
              c->pending_id, doc, prefix, c->index, c->submits, (long long)c->version, (c->index / ndocs) % 200, c->submits);
        c->sent_at = uv_hrtime();
        return;
    }
    long n = atomic_load(&sent);
    int len;
    if (n >= MAXTX) return;
    if (!relay) {
        len = snprintf(line, sizeof line,
            "{\"id\":%ld,\"type\":\"submit\",\"doc\":\"%s\",\"tx\":\"w-%ld\",\"base\":%lld,"
            "\"ops\":[{\"op\":\"set\",\"node\":\"root\",\"key\":\"k\",\"value\":%ld}]}\n",
            ID_SUBMIT0 + n, docname, n, (long long)c->version, n);
    } else {
        /* Rewind's events push for the submit above, padded to its exact size. */
        len = snprintf(line, sizeof line, "{\"push\":\"events\",\"doc\":\"%s\",\"events\":[{\"version\":%ld,\"tx\":\"w-%ld\",\"pad\":\"",
                       docname, n + 1, n);
        int pad = line_bytes - len - 6;
        if (pad < 0 || line_bytes >= (int)sizeof line) fatal("--line-bytes out of range", NULL);
        memset(line + len, 'x', (size_t)pad);
        len += pad;
        len += snprintf(line + len, sizeof line - (size_t)len, "\"}]}\n");
    }
    sent_ns[n] = uv_hrtime();
    atomic_store(&sent, n + 1);
    send_line(c, line, (size_t)len);
}

static void terminal_line(conn_t *c, char *line, uint64_t arrived, uint64_t now) {
    if (mode == MODE_COMMIT) {
        int64_t v = field_int(line, "\"version\":");
        if (v > c->version) c->version = v;
        if (is_push(line) || field_int(line, "\"re\":") != c->pending_id) return;
        c->pending_id = 0;
        if (!is_ok(line)) count_error("submit failed", line);
        else if (warming) warm_acks++;
        else if (!running) late_acks++;
        else {
            acks++;
            if (nlat == caplat) { caplat = caplat ? caplat * 2 : 1 << 16; lat = realloc(lat, caplat * sizeof *lat); }
            lat[nlat++] = (now - c->sent_at) / 1e3;
        }
        if (rate > 0) {
            /* Its next turn: one period after the last one was due (never two submits in flight). */
            c->due += (uint64_t)(1e9 * nterm / rate);
        } else if (running || warming) submit(c);
    } else if (mode == MODE_FANOUT) {
        const char *t = strstr(line, "\"tx\":\"w-");
        if (!t || (!relay && !is_events(line))) return;
        long n = strtol(t + 8, NULL, 10);
        if (n < 0 || n >= atomic_load(&sent)) return;
        if (ndel == capdel) {
            capdel = capdel ? capdel * 2 : 1 << 20;
            del_t = realloc(del_t, capdel * sizeof *del_t);
            del_app = realloc(del_app, capdel * sizeof *del_app);
            del_n = realloc(del_n, capdel * sizeof *del_n);
        }
        del_t[ndel] = arrived;
        del_app[ndel] = now;
        del_n[ndel++] = (int32_t)n;
        dcount[n]++;
        long done = atomic_load(&completed), before = done;
        while (done < atomic_load(&sent) && dcount[done] >= nterm - disconnects) done++;
        if (done != before) { atomic_store(&completed, done); uv_async_send(&wwake); }
    }
}

/* ---- results ---- */

static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static void print_lat(const char *name, double *a, size_t n) {   /* p50 and p99, nearest rank */
    qsort(a, n, sizeof *a, cmpd);
    size_t k50 = (size_t)(.5 * n + .999999), k99 = (size_t)(.99 * n + .999999);
    printf("%s_p50_ms %.3f\n%s_p99_ms %.3f\n", name, n ? a[k50 ? k50 - 1 : 0] / 1e3 : 0, name, n ? a[k99 ? k99 - 1 : 0] / 1e3 : 0);
}

static void report(void) {
    double secs = (stop_ns - start_ns) / 1e9;
    printf("seconds %.2f\nclients %d\n", secs, nterm);
    printf("window_start_unix %.3f\nwindow_end_unix %.3f\n", ((double)start_ns + real_minus_mono) / 1e9, ((double)stop_ns + real_minus_mono) / 1e9);
    if (mode == MODE_COMMIT) {
        printf("docs %d\nusers %d\nwarm_acks %ld\nacks %ld\nlate_acks %ld\nper_second %.1f\n", ndocs, ntokens, warm_acks, acks,
               late_acks, acks / secs);
        print_lat("ack", lat, nlat);
        printf("error_codes ");
        for (int i = 0; i < MAXCODES && codes[i][0]; i++) printf("%s%s:%ld", i ? "," : "", codes[i], code_count[i]);
        printf("%s\n", codes[0][0] ? "" : "none");
    } else {
        /* From arrival times: delivery (commit→delivery) from the writer's own
         * copy; first from the first copy anyone got; e2e from the writer's send. */
        long s = atomic_load(&sent), sent_in = 0, in_window = 0;
        uint64_t *first = malloc((size_t)(s + 1) * sizeof *first);
        double *a = malloc((ndel + 1) * sizeof *a), *b = malloc((ndel + 1) * sizeof *b);
        double *e = malloc((ndel + 1) * sizeof *e), *l = malloc((ndel + 1) * sizeof *l);
        size_t na = 0, early = 0;
        for (long i = 0; i < s; i++) { sent_in += sent_ns[i] <= stop_ns; first[i] = commit_ns[i] ? commit_ns[i] : UINT64_MAX; }
        for (size_t k = 0; k < ndel; k++) if (del_t[k] < first[del_n[k]]) first[del_n[k]] = del_t[k];
        for (size_t k = 0; k < ndel; k++) {
            long n = del_n[k];
            in_window += del_t[k] >= start_ns && del_t[k] <= stop_ns;
            if (commit_ns[n]) { a[na] = ((double)del_t[k] - (double)commit_ns[n]) / 1e3; early += a[na++] < 0; }
            b[k] = (double)(del_t[k] - first[n]) / 1e3;
            e[k] = ((double)del_t[k] - (double)sent_ns[n]) / 1e3;
            l[k] = ((double)del_app[k] - (double)del_t[k]) / 1e3;
        }
        printf("rate %s\nwindow %d\nsent %ld\ncommitted %ld\ndeliveries %zu\nexpected %ld\n",
               rate > 0 ? "paced" : "max", window_, s, atomic_load(&committed), ndel, s * nterm);
        printf("per_second %.1f\ntx_per_second %.1f\npush_bytes %d\n", in_window / secs, sent_in / secs, push_bytes);
        print_lat("delivery", a, na);
        print_lat("first", b, ndel);
        print_lat("e2e", e, ndel);
        print_lat("read_lag", l, ndel);
        printf("before_commit_percent %.1f\nno_commit_seen %zu\n", na ? 100.0 * early / na : 0, ndel - na);
    }
    long r = atomic_load(&reads);
    printf("stamped_reads_percent %.1f\nerrors %ld\ndisconnects %ld\nbyes %d\n", r ? 100.0 * atomic_load(&stamped_reads) / r : 0,
           atomic_load(&errors), disconnects, atomic_load(&byes));
    fflush(stdout);
}

/* ---- main ---- */

static char **read_tokens(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) fatal("cannot read --tokens", path);
    char **out = NULL, line[512];
    for (*n = 0; fgets(line, sizeof line, f);) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        out = realloc(out, (size_t)(*n + 1) * sizeof *out);
        out[(*n)++] = strdup(line);
    }
    fclose(f);
    if (!*n) fatal("no tokens in", path);
    return out;
}

int main(int argc, char **argv) {
    static struct option opts[] = {
        {"host", 1, 0, 'h'}, {"port", 1, 0, 'p'}, {"token", 1, 0, 't'}, {"tokens", 1, 0, 'T'},
        {"writer-token", 1, 0, 'W'}, {"clients", 1, 0, 'c'}, {"seconds", 1, 0, 's'}, {"docs", 1, 0, 'd'},
        {"rate", 1, 0, 'r'}, {"window", 1, 0, 'w'}, {"doc", 1, 0, 'D'}, {"relay", 0, 0, 'R'},
        {"line-bytes", 1, 0, 'l'}, {"prefix", 1, 0, 'P'}, {"server-pid", 1, 0, 'S'}, {"warmup", 1, 0, 'M'},
        {"pg-postmaster", 1, 0, 'G'}, {"share", 1, 0, 'H'}, {"port2", 1, 0, 'q'}, {"server-pid2", 1, 0, 'Q'}, {"websocket", 0, 0, 'X'}, {"shared", 0, 0, 'U'}, {"no-open", 0, 0, 'O'}, {"unready", 1, 0, 'u'}, {0, 0, 0, 0}};
    static char *no_token = "";
    if (argc < 2) goto usage;
    if (!strcmp(argv[1], "commit")) mode = MODE_COMMIT;
    else if (!strcmp(argv[1], "fanout")) mode = MODE_FANOUT;
    else if (!strcmp(argv[1], "idle")) mode = MODE_IDLE;
    else goto usage;
    optind = 2;
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (o) {
        case 'h': host = optarg; break;              case 'p': port = atoi(optarg); break;
        case 't': token = optarg; break;             case 'T': tokens_file = optarg; break;
        case 'W': writer_token = optarg; break;      case 'c': nterm = atoi(optarg); break;
        case 's': seconds = atoi(optarg); break;     case 'd': ndocs = atoi(optarg); break;
        case 'r': rate = atof(optarg); break;        case 'w': window_ = atoi(optarg); break;
        case 'D': docname = optarg; break;           case 'R': relay = 1; break;
        case 'l': line_bytes = atoi(optarg); break;  case 'P': prefix = optarg; break;
        case 'S': server_pid = atoi(optarg); break;  case 'M': warmup = atoi(optarg); break;
        case 'G': postmaster = atoi(optarg); break;  case 'H': share_with = optarg; break;
        case 'q': port2 = atoi(optarg); break;       case 'Q': server_pid2 = atoi(optarg); break;
        case 'X': websocket = 1; break;
        case 'U': shared = 1; break;
        case 'O': no_open = 1; break;
        case 'u': max_unready = atoi(optarg); break;
        default: goto usage;
        }
    }
    if (nterm < 0) nterm = mode == MODE_COMMIT ? 50 : mode == MODE_FANOUT ? 1000 : 10000;
    if ((no_open || max_unready) && mode != MODE_IDLE) goto usage;
    if (!port || nterm < 1 || seconds < 1 || ndocs < 1 || window_ < 1 || (mode == MODE_COMMIT && relay)) goto usage;
    if (tokens_file) tokens = read_tokens(tokens_file, &ntokens);
    else if (token) tokens = (char **)&token, ntokens = 1;
    else if (relay) tokens = &no_token, ntokens = 1;
    else goto usage;
    if (mode == MODE_FANOUT && !relay && !writer_token) goto usage;
    if (mode == MODE_COMMIT && ndocs < nterm && ndocs % ntokens != 0 && !shared)
        fatal("commit: terminals sharing a document must be its creator's user: the number of tokens must divide --docs", NULL);

    signal(SIGPIPE, SIG_IGN);
    calibrate_clocks();
    ready_since = uv_hrtime();
    conns = calloc((size_t)nterm, sizeof *conns);
    loop = uv_default_loop();
    uv_timer_init(loop, &stopper);
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigterm, on_sigterm, SIGTERM);
    if (mode != MODE_FANOUT) {
        connect_more();
    } else {
        sent_ns = calloc(MAXTX, sizeof *sent_ns);
        commit_ns = calloc(MAXTX, sizeof *commit_ns);
        dcount = calloc(MAXTX, sizeof *dcount);
        uv_async_init(loop, &main_wake, on_main_wake);
        uv_loop_init(&wloop);
        uv_async_init(&wloop, &wwake, on_wake);
        uv_timer_init(&wloop, &wpace);
        writer.is_writer = 1;
        writer.index = -1;
        writer.token = writer_token;
        connect_one(&writer, &wloop);
        pthread_t thread;
        if (pthread_create(&thread, NULL, writer_main, NULL) != 0) fatal("cannot start the writer thread", NULL);
    }
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
usage:
    fprintf(stderr, "usage: see the comment at the top of loadgen.c\n");
    return 2;
}
