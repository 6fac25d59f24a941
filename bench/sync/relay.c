/* bench/sync/relay.c: relay.py's impairments with the timing of C.
 *
 *   cc -O2 -pthread -o relay bench/sync/relay.c -lm
 *   relay [OPTIONS] LISTEN_PORT:TARGET_HOST:TARGET_PORT [...]
 *
 * The same options, models and output as relay.py (see its comment): delay
 * per direction (uniform:M,H | normal:M,SD | burst:LO,HI,EVERY,SLO,SHI |
 * queue:BASE,MEAN,SD,TAU | none, or --impair D,J), --order independent|fifo, --loss (UDP dropped, TCP held one RTO longer,
 * doubled for each loss in a row), --reorder for UDP, --rate-kbps, --seed,
 * --stats FILE (JSON on SIGTERM), "relay ready" once listening.
 *
 * --voice MODEL (this relay only): Wi-Fi's WMM. Datagrams marked DSCP EF
 * (TOS 0xB8, as Tutti's clock datagrams are) go through a queue of their
 * own per direction with delay MODEL, in order among themselves under
 * --order fifo, and never wait behind the best-effort queue (TCP and
 * unmarked UDP). A station or access point maps EF to AC_VO or AC_VI
 * (RFC 8325; the legacy mapping, DSCP >> 3, gives UP 5, AC_VI): either
 * contends with shorter waits and has its own queue. Without --voice every
 * packet shares one queue, as where WMM or the DSCP mapping is off.
 *
 * Why a second relay: relay.py's own scheduling adds to every packet. Each
 * Python thread that is due waits for the GIL and for a Condition's timed
 * wake-up: measured on this 2-core machine at load 5, packets left 20-30 µs
 * late at best, 120-140 µs at the median and 1-2 ms at p90, differently in
 * each direction. A clock estimator on top sees a floor that is smeared and
 * moves with the machine's load: that is the relay, not the link asked for.
 * Here each direction is a thread that waits for its packet's release on a
 * CLOCK_MONOTONIC condition variable (a futex with a high-resolution
 * timeout), under SCHED_FIFO when allowed, so the delays are the model's to
 * within tens of µs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "relay: %s\n", what);
    exit(64);
}

/* --- seeded randomness (splitmix64) --- */
typedef struct { uint64_t s; } rng_t;
static uint64_t rng_next(rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) / 9007199254740992.0; }
static double rng_uniform(rng_t *r, double lo, double hi) { return lo + (hi - lo) * rng_unit(r); }
static double rng_gauss(rng_t *r, double mean, double sd) {
    double u = 1 - rng_unit(r), v = rng_unit(r);
    return mean + sd * sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}
static double rng_exponential(rng_t *r, double mean) { return -mean * log(1 - rng_unit(r)); }

/* --- options --- */
enum kind { NONE, UNIFORM, NORMAL, BURST, QUEUE };
typedef struct { enum kind kind; double a[5]; } model_t;
static struct {
    model_t down, up;
    double loss, rto_ms, reorder, reorder_ms, rate_kbps;
    long seed;
    int fifo; /* --order fifo: one queue per direction, TCP and UDP (see relay.py) */
    model_t voice; int has_voice; /* --voice: marked datagrams' own queue */
    const char *stats;
} opt = { .rto_ms = 200, .reorder_ms = 10, .seed = 1 };

static model_t parse_model(const char *spec) {
    model_t m = { NONE, { 0 } };
    int want = 0;
    const char *args = strchr(spec, ':');
    size_t len = args ? (size_t)(args - spec) : strlen(spec);
    if (len == 4 && !strncmp(spec, "none", 4)) { m.kind = NONE; want = 0; }
    else if (len == 7 && !strncmp(spec, "uniform", 7)) { m.kind = UNIFORM; want = 2; }
    else if (len == 6 && !strncmp(spec, "normal", 6)) { m.kind = NORMAL; want = 2; }
    else if (len == 5 && !strncmp(spec, "burst", 5)) { m.kind = BURST; want = 5; }
    else if (len == 5 && !strncmp(spec, "queue", 5)) { m.kind = QUEUE; want = 4; }
    else want = -1;
    int got = 0;
    if (args) {
        const char *p = args + 1;
        while (*p && got < 5) {
            char *end;
            m.a[got++] = strtod(p, &end);
            if (end == p) { got = -1; break; }
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') { got = -1; break; }
        }
    }
    if (want < 0 || got != want) {
        fprintf(stderr, "relay: bad delay '%s' (uniform:M,H | normal:M,SD | burst:LO,HI,EVERY,SLO,SHI | queue:BASE,MEAN,SD,TAU | none)\n", spec);
        exit(64);
    }
    return m;
}

/* --- stalls: one link's (both directions'), drawn lazily --- */
typedef struct {
    pthread_mutex_t lock;
    int enabled;
    double every, lo, hi; /* ms */
    rng_t rng;
    int64_t horizon;
    int64_t start[64], end[64]; /* a ring of the intervals ahead */
    int first, count;
} stalls_t;

/* The end of the stall `t` falls in, or 0. */
static int64_t stall_end(stalls_t *s, int64_t t) {
    if (!s->enabled) return 0;
    pthread_mutex_lock(&s->lock);
    if (s->horizon == 0) s->horizon = t;
    while (s->count > 0 && s->end[s->first] <= t) { s->first = (s->first + 1) % 64; s->count--; }
    while (s->horizon < t + 1000000000LL && s->count < 64) {
        int64_t start = s->horizon + (int64_t)(rng_exponential(&s->rng, s->every) * 1e6);
        int64_t end = start + (int64_t)(rng_uniform(&s->rng, s->lo, s->hi) * 1e6);
        int i = (s->first + s->count) % 64;
        s->start[i] = start; s->end[i] = end; s->count++;
        s->horizon = end;
    }
    int64_t result = 0;
    for (int k = 0; k < s->count; k++) {
        int i = (s->first + k) % 64;
        if (s->start[i] <= t && t < s->end[i]) { result = s->end[i]; break; }
    }
    pthread_mutex_unlock(&s->lock);
    return result;
}

/* --- one direction of one link: its FIFO and its queue (see relay.py) --- */
typedef struct {
    pthread_mutex_t lock;
    int64_t last_release;
    double q; int64_t t; int started; /* the queue's delay (ms) at t */
    rng_t rng;
} direction_t;

static double queue_delay_ms(direction_t *d, int64_t now, double mean, double sd, double tau) {
    pthread_mutex_lock(&d->lock);
    if (!d->started) { d->q = mean; d->t = now; d->started = 1; }
    double dt = now > d->t ? (now - d->t) / 1e6 : 0;
    if (now > d->t) d->t = now;
    double k = tau > 0 ? exp(-dt / tau) : 0;
    d->q = fabs(mean + (d->q - mean) * k + sd * sqrt(fmax(0, 1 - k * k)) * rng_gauss(&d->rng, 0, 1));
    double q = d->q;
    pthread_mutex_unlock(&d->lock);
    return q;
}

static int64_t in_order(direction_t *d, int64_t release) {
    pthread_mutex_lock(&d->lock);
    if (release < d->last_release) release = d->last_release;
    d->last_release = release;
    pthread_mutex_unlock(&d->lock);
    return release;
}

/* --- one direction: impairments, then a thread that delivers on time --- */
typedef struct packet { int64_t release; uint64_t n; size_t len; struct packet *next; unsigned char data[]; } packet_t;
typedef struct line {
    const char *proto, *direction;
    int mapping;
    model_t model;
    stalls_t *stalls;
    direction_t *dir;
    int ordered;
    int fd;                      /* where it delivers */
    struct sockaddr_in peer;     /* for a datagram to the client (sendto) */
    int use_peer;
    rng_t rng;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    packet_t *heap[1 << 16];     /* a binary heap by (release, n) */
    int size;
    uint64_t n;
    int64_t last_release, wire_free;
    int losses_in_row, closed;
    long packets, bytes, lost, reordered;
    double max_hold_ms;
    struct line *all_next;
} line_t;

static line_t *all_lines;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;

static int before(packet_t *a, packet_t *b) { return a->release < b->release || (a->release == b->release && a->n < b->n); }
static void heap_push(line_t *l, packet_t *p) {
    int i = l->size++;
    l->heap[i] = p;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!before(l->heap[i], l->heap[up])) break;
        packet_t *t = l->heap[i]; l->heap[i] = l->heap[up]; l->heap[up] = t; i = up;
    }
}
static packet_t *heap_pop(line_t *l) {
    packet_t *top = l->heap[0];
    l->heap[0] = l->heap[--l->size];
    int i = 0;
    for (;;) {
        int a = 2 * i + 1, b = a + 1, m = i;
        if (a < l->size && before(l->heap[a], l->heap[m])) m = a;
        if (b < l->size && before(l->heap[b], l->heap[m])) m = b;
        if (m == i) break;
        packet_t *t = l->heap[i]; l->heap[i] = l->heap[m]; l->heap[m] = t; i = m;
    }
    return top;
}

static int64_t model_release(line_t *l, int64_t now) {
    const double *a = l->model.a;
    switch (l->model.kind) {
    case NONE: return now;
    case UNIFORM: return now + (int64_t)(fmax(0, a[0] + rng_uniform(&l->rng, -a[1], a[1])) * 1e6);
    case NORMAL: return now + (int64_t)(fmax(0, rng_gauss(&l->rng, a[0], a[1])) * 1e6);
    case BURST: {
        int64_t base = (int64_t)(rng_uniform(&l->rng, a[0], a[1]) * 1e6);
        int64_t end = stall_end(l->stalls, now);
        return (end ? end : now) + base;
    }
    case QUEUE: return now + (int64_t)((a[0] + queue_delay_ms(l->dir, now, a[1], a[2], a[3])) * 1e6);
    }
    return now;
}

/* Called by the one thread that reads for this line. */
static void offer(line_t *l, const unsigned char *data, size_t len, int64_t now) {
    /* The link's own queue first: a TCP segment lost end to end waits its
     * retransmission timeout in the sender's stack, not in the radio's
     * queue, so it holds TCP only (its order below). */
    int64_t release = model_release(l, now);
    if (opt.fifo) release = in_order(l->dir, release);
    pthread_mutex_lock(&l->lock);
    l->packets++; l->bytes += (long)len;
    int is_lost = opt.loss > 0 && rng_unit(&l->rng) < opt.loss;
    if (is_lost) {
        l->lost++;
        if (!l->ordered) { pthread_mutex_unlock(&l->lock); return; } /* a datagram is simply gone */
        l->losses_in_row++;
        release += (int64_t)(opt.rto_ms * 1e6) << (l->losses_in_row > 20 ? 20 : l->losses_in_row - 1);
    } else {
        l->losses_in_row = 0;
    }
    if (!l->ordered && opt.reorder > 0 && rng_unit(&l->rng) < opt.reorder) {
        l->reordered++;
        release += (int64_t)(opt.reorder_ms * 1e6);
    }
    if (opt.rate_kbps > 0) {
        int64_t start = now > l->wire_free ? now : l->wire_free;
        l->wire_free = start + (int64_t)(len * 8 / (opt.rate_kbps * 1000) * 1e9);
        if (release < l->wire_free) release = l->wire_free;
    }
    if (l->ordered) {
        if (release < l->last_release) release = l->last_release;
        l->last_release = release;
    }
    double hold = (release - now) / 1e6;
    if (hold > l->max_hold_ms) l->max_hold_ms = hold;
    if (l->size == (int)(sizeof l->heap / sizeof l->heap[0])) { /* bounded: a full line drops, as a full queue would */
        l->lost++;
        pthread_mutex_unlock(&l->lock);
        return;
    }
    packet_t *p = malloc(sizeof *p + len);
    if (!p) die("out of memory");
    p->release = release; p->n = ++l->n; p->len = len;
    memcpy(p->data, data, len);
    heap_push(l, p);
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

static void close_line(line_t *l) {
    pthread_mutex_lock(&l->lock);
    l->closed = 1;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

static void realtime(void) {
    struct sched_param p = { .sched_priority = 10 };
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &p); /* best effort: without it the timing is only less exact */
}

static void *line_run(void *arg) {
    line_t *l = arg;
    realtime();
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (l->size == 0 && !l->closed) pthread_cond_wait(&l->wake, &l->lock);
        if (l->size == 0) break;
        int64_t release = l->heap[0]->release, now = now_ns();
        if (release > now) {
            /* Woken early by a packet due sooner (a datagram may be). */
            struct timespec t = { release / 1000000000, release % 1000000000 };
            pthread_cond_timedwait(&l->wake, &l->lock, &t);
            continue;
        }
        packet_t *p = heap_pop(l);
        pthread_mutex_unlock(&l->lock);
        if (l->use_peer) sendto(l->fd, p->data, p->len, 0, (struct sockaddr *)&l->peer, sizeof l->peer);
        else if (l->ordered) {
            size_t off = 0;
            while (off < p->len) {
                ssize_t n = send(l->fd, p->data + off, p->len - off, MSG_NOSIGNAL);
                if (n <= 0) { if (n < 0 && errno == EINTR) continue; break; }
                off += (size_t)n;
            }
        } else send(l->fd, p->data, p->len, 0);
        free(p);
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    if (l->ordered) shutdown(l->fd, SHUT_WR);
    return NULL;
}

typedef struct mapping {
    int index;
    pthread_mutex_t lock; /* the rng: lines start from two threads */
    struct sockaddr_in target;
    stalls_t stalls;
    direction_t down, up, voice_down, voice_up;
    rng_t rng;
    int tcp, udp;
} mapping_t;

static line_t *new_line(mapping_t *m, const char *proto, const char *direction, int ordered, int fd, int voice) {
    line_t *l = calloc(1, sizeof *l);
    if (!l) die("out of memory");
    l->proto = proto; l->direction = direction; l->mapping = m->index;
    l->model = strcmp(direction, "down") == 0 ? opt.down : opt.up;
    l->stalls = &m->stalls; l->ordered = ordered; l->fd = fd;
    l->dir = strcmp(direction, "down") == 0 ? &m->down : &m->up;
    if (voice) {
        l->model = opt.voice;
        l->dir = strcmp(direction, "down") == 0 ? &m->voice_down : &m->voice_up;
        l->proto = "udp-voice";
    }
    pthread_mutex_lock(&m->lock);
    l->rng.s = rng_next(&m->rng);
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->wake, &ca);
    pthread_mutex_lock(&all_lock);
    l->all_next = all_lines; all_lines = l;
    pthread_mutex_unlock(&all_lock);
    pthread_t t;
    if (pthread_create(&t, NULL, line_run, l) != 0) die("cannot start a thread");
    pthread_detach(t);
    return l;
}

/* --- TCP: a reader per side --- */
typedef struct { int from; line_t *line; } reader_t;
static void *tcp_reader(void *arg) {
    reader_t *r = arg;
    realtime();
    static __thread unsigned char buf[65536];
    for (;;) {
        ssize_t n = recv(r->from, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        offer(r->line, buf, (size_t)n, now_ns());
    }
    close_line(r->line);
    free(r);
    return NULL;
}

static void start_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0) die("cannot start a thread");
    pthread_detach(t);
}

static void *accept_loop(void *arg) {
    mapping_t *m = arg;
    for (;;) {
        int client = accept(m->tcp, NULL, NULL);
        if (client < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; break; }
        int up = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(up, (struct sockaddr *)&m->target, sizeof m->target) != 0) { close(client); close(up); continue; }
        int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        line_t *upl = new_line(m, "tcp", "up", 1, up, 0), *downl = new_line(m, "tcp", "down", 1, client, 0);
        reader_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
        if (!a || !b) die("out of memory");
        a->from = client; a->line = upl; b->from = up; b->line = downl;
        start_thread(tcp_reader, a);
        start_thread(tcp_reader, b);
    }
    return NULL;
}

/* --- UDP: one listening socket; an upstream socket per client address --- */
typedef struct { struct sockaddr_in peer; int upstream; line_t *up, *up_voice; } udp_peer_t;
typedef struct { int upstream; line_t *down, *down_voice; } udp_back_t;

/* One datagram and its TOS byte (IP_RECVTOS); the sender's address when `from`. */
static ssize_t receive_marked(int fd, unsigned char *buf, size_t size, struct sockaddr_in *from, int *tos) {
    struct iovec io = { .iov_base = buf, .iov_len = size };
    char control[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = { .msg_name = from, .msg_namelen = from ? sizeof *from : 0, .msg_iov = &io, .msg_iovlen = 1,
                          .msg_control = control, .msg_controllen = sizeof control };
    ssize_t n = recvmsg(fd, &msg, 0);
    *tos = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) *tos = *(unsigned char *)CMSG_DATA(c);
    return n;
}
static int is_voice(int tos) { return opt.has_voice && (tos & 0xfc) == 0xb8; }
static void receive_tos(int fd) { int one = 1; setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one); }

static void *udp_back(void *arg) {
    udp_back_t *b = arg;
    realtime();
    unsigned char buf[65536];
    for (;;) {
        int tos;
        ssize_t n = receive_marked(b->upstream, buf, sizeof buf, NULL, &tos);
        if (n < 0) { if (errno == EINTR || errno == ECONNREFUSED) continue; break; }
        offer(is_voice(tos) ? b->down_voice : b->down, buf, (size_t)n, now_ns());
    }
    return NULL;
}

static void *udp_loop(void *arg) {
    mapping_t *m = arg;
    realtime();
    udp_peer_t peers[64];
    int count = 0;
    unsigned char buf[65536];
    for (;;) {
        struct sockaddr_in from;
        int tos;
        ssize_t n = receive_marked(m->udp, buf, sizeof buf, &from, &tos);
        if (n < 0) { if (errno == EINTR) continue; break; }
        int64_t now = now_ns();
        udp_peer_t *p = NULL;
        for (int i = 0; i < count; i++)
            if (peers[i].peer.sin_port == from.sin_port && peers[i].peer.sin_addr.s_addr == from.sin_addr.s_addr) { p = &peers[i]; break; }
        if (!p) {
            if (count == 64) continue; /* bounded: a bench has a few peers */
            int up = socket(AF_INET, SOCK_DGRAM, 0);
            if (connect(up, (struct sockaddr *)&m->target, sizeof m->target) != 0) { close(up); continue; }
            p = &peers[count++];
            p->peer = from; p->upstream = up;
            receive_tos(up);
            p->up = new_line(m, "udp", "up", 0, up, 0);
            p->up_voice = opt.has_voice ? new_line(m, "udp", "up", 0, up, 1) : NULL;
            line_t *down = new_line(m, "udp", "down", 0, m->udp, 0);
            down->peer = from; down->use_peer = 1;
            line_t *down_voice = NULL;
            if (opt.has_voice) { down_voice = new_line(m, "udp", "down", 0, m->udp, 1); down_voice->peer = from; down_voice->use_peer = 1; }
            udp_back_t *b = malloc(sizeof *b);
            if (!b) die("out of memory");
            b->upstream = up; b->down = down; b->down_voice = down_voice;
            start_thread(udp_back, b);
        }
        offer(is_voice(tos) ? p->up_voice : p->up, buf, (size_t)n, now);
    }
    return NULL;
}

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static void write_stats(mapping_t *maps, int count) {
    if (!opt.stats) return;
    FILE *f = fopen(opt.stats, "w");
    if (!f) return;
    fprintf(f, "{\"lines\": [");
    int first = 1;
    pthread_mutex_lock(&all_lock);
    for (line_t *l = all_lines; l; l = l->all_next) {
        pthread_mutex_lock(&l->lock);
        fprintf(f, "%s{\"packets\": %ld, \"bytes\": %ld, \"lost\": %ld, \"reordered\": %ld, \"max_hold_ms\": %.3f, "
                   "\"proto\": \"%s\", \"direction\": \"%s\", \"mapping\": %d}",
                first ? "" : ", ", l->packets, l->bytes, l->lost, l->reordered, l->max_hold_ms, l->proto, l->direction, l->mapping);
        pthread_mutex_unlock(&l->lock);
        first = 0;
    }
    pthread_mutex_unlock(&all_lock);
    int pending = 0;
    for (int i = 0; i < count; i++) pending += maps[i].stalls.count;
    fprintf(f, "], \"stalls_pending\": %d}\n", pending);
    fclose(f);
}

static double number(const char *s, const char *what) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) { fprintf(stderr, "relay: %s wants a number, not '%s'\n", what, s); exit(64); }
    return v;
}

int main(int argc, char **argv) {
    const char *down = NULL, *up = NULL;
    char both[64] = "";
    mapping_t maps[16];
    int count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(name) (!strcmp(a, name) && (v ? (i++, 1) : (die(name " wants a value"), 0)))
        if (TAKE("--impair")) {
            const char *comma = strchr(v, ',');
            if (!comma) die("--impair wants D,J");
            snprintf(both, sizeof both, "uniform:%s", v);
        } else if (TAKE("--down")) down = v;
        else if (TAKE("--up")) up = v;
        else if (TAKE("--loss")) opt.loss = number(v, "--loss");
        else if (TAKE("--rto-ms")) opt.rto_ms = number(v, "--rto-ms");
        else if (TAKE("--reorder")) opt.reorder = number(v, "--reorder");
        else if (TAKE("--reorder-ms")) opt.reorder_ms = number(v, "--reorder-ms");
        else if (TAKE("--rate-kbps")) opt.rate_kbps = number(v, "--rate-kbps");
        else if (TAKE("--seed")) opt.seed = (long)number(v, "--seed");
        else if (TAKE("--stats")) opt.stats = v;
        else if (TAKE("--voice")) { opt.voice = parse_model(v); opt.has_voice = 1; }
        else if (TAKE("--order")) {
            if (!strcmp(v, "fifo")) opt.fifo = 1;
            else if (!strcmp(v, "independent")) opt.fifo = 0;
            else die("--order is independent or fifo");
        }
        else if (a[0] == '-') { fprintf(stderr, "relay: unknown option %s (see relay.py's comment)\n", a); return 64; }
        else {
            if (count == 16) die("at most 16 mappings");
            int lp, tp; char host[64];
            if (sscanf(a, "%d:%63[^:]:%d", &lp, host, &tp) != 3) die("a mapping is LISTEN_PORT:TARGET_HOST:TARGET_PORT");
            mapping_t *m = &maps[count];
            memset(m, 0, sizeof *m);
            m->index = count++;
            m->target.sin_family = AF_INET;
            m->target.sin_port = htons((uint16_t)tp);
            if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1", &m->target.sin_addr) != 1) die("the target host must be an IPv4 address");
            m->tcp = lp; /* the port, until opened below */
        }
#undef TAKE
    }
    if (count == 0) die("no mapping (LISTEN_PORT:TARGET_HOST:TARGET_PORT)");
    opt.down = parse_model(down ? down : both[0] ? both : "none");
    opt.up = parse_model(up ? up : both[0] ? both : "none");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < count; i++) {
        mapping_t *m = &maps[i];
        int port = m->tcp;
        m->rng.s = (uint64_t)(opt.seed * 1000 + i);
        pthread_mutex_init(&m->stalls.lock, NULL);
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->down.lock, NULL);
        pthread_mutex_init(&m->up.lock, NULL);
        pthread_mutex_init(&m->voice_down.lock, NULL);
        pthread_mutex_init(&m->voice_up.lock, NULL);
        m->down.rng.s = rng_next(&m->rng);
        m->up.rng.s = rng_next(&m->rng);
        const model_t *burst = opt.down.kind == BURST ? &opt.down : opt.up.kind == BURST ? &opt.up : NULL;
        if (burst) {
            m->stalls.enabled = 1;
            m->stalls.every = burst->a[2]; m->stalls.lo = burst->a[3]; m->stalls.hi = burst->a[4];
            m->stalls.rng.s = rng_next(&m->rng);
        }
        if (opt.has_voice) { /* drawn after the others, so the other queues' draws are those of a run without --voice */
            m->voice_down.rng.s = rng_next(&m->rng);
            m->voice_up.rng.s = rng_next(&m->rng);
        }
        struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        m->tcp = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(m->tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(m->tcp, (struct sockaddr *)&at, sizeof at) != 0 || listen(m->tcp, 16) != 0) { perror("relay: tcp"); return 1; }
        m->udp = socket(AF_INET, SOCK_DGRAM, 0);
        if (bind(m->udp, (struct sockaddr *)&at, sizeof at) != 0) { perror("relay: udp"); return 1; }
        receive_tos(m->udp);
        start_thread(accept_loop, m);
        start_thread(udp_loop, m);
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("relay ready\n");
    fflush(stdout);
    while (!stop) pause();
    write_stats(maps, count);
    _exit(0);
}
