/*
 * libwebsockets 4.1 bench server (see README.md).
 *
 *   GET /app.js   60 KiB from memory (keep-alive allowed)
 *   WS  /ws       "echo" of every text message;
 *                 "broadcast N" -> a ~1 KiB text message to every client,
 *                 queued by a separate broadcaster thread on each
 *                 connection, which then calls lws_cancel_service(); the
 *                 service thread asks for WRITEABLE and writes one message
 *                 per LWS_CALLBACK_SERVER_WRITEABLE;
 *                 "stats" -> one line of counters.
 *
 * usage: lws_server PORT [max_pending]
 *
 * A client with max_pending (default 64) messages unsent is closed by the
 * service thread (lws_set_timeout(..., LWS_TO_KILL_ASYNC)); nothing blocks.
 */
#include <libwebsockets.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define APP_SIZE (60 * 1024)
#define BCAST_SIZE 1024
#define RX_MAX 4096

struct msg {
	struct msg *next;
	size_t len;
	unsigned char buf[]; /* LWS_PRE + len */
};

/* One per connection; the same protocol serves HTTP and the websocket. */
struct pss {
	struct pss *next; /* websocket clients only */
	struct lws *wsi;
	struct msg *qh, *qt;
	int qlen;
	int overflow, killed;
	long long overflow_at; /* us */
	size_t rxlen;
	char rx[RX_MAX];
};

/* The file, with the LWS_PRE headroom lws_write() wants before a buffer. */
static unsigned char app_buf[LWS_PRE + APP_SIZE];
static int max_pending = 64;
static struct lws_context *context;
static volatile sig_atomic_t stop;

/* Clients, their queues and the counters, under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pss *clients;
static int nclients;
static long long st_bcast_max_us, st_write_max_us, st_overflow,
    st_closed_dead, st_close_after_ms = -1;

/* Broadcast requests, for the broadcaster thread. */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
#define QMAX 1024
static long queue[QMAX];
static int qhead, qlen;

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* With `lock` held. Returns 0 when the client is over its limit. */
static int enqueue(struct pss *p, const void *data, size_t len)
{
	if (p->overflow)
		return 0;
	if (p->qlen >= max_pending) {
		p->overflow = 1;
		p->overflow_at = now_us();
		st_overflow++;
		return 0;
	}
	struct msg *m = malloc(sizeof *m + LWS_PRE + len);
	if (!m)
		return 0;
	m->next = NULL;
	m->len = len;
	memcpy(m->buf + LWS_PRE, data, len);
	if (p->qt)
		p->qt->next = m;
	else
		p->qh = m;
	p->qt = m;
	p->qlen++;
	return 1;
}

static void handle_message(struct lws *wsi, struct pss *p, char *msg,
                           size_t len)
{
	long n;
	char out[256];

	msg[len] = 0;
	if (sscanf(msg, "broadcast %ld", &n) == 1) {
		pthread_mutex_lock(&qlock);
		if (qlen < QMAX) {
			queue[(qhead + qlen++) % QMAX] = n;
			pthread_cond_signal(&qcond);
		}
		pthread_mutex_unlock(&qlock);
		return;
	}
	pthread_mutex_lock(&lock);
	if (strcmp(msg, "stats") == 0) {
		int k = snprintf(out, sizeof out,
		    "stats clients=%d bcast_max_us=%lld write_max_us=%lld "
		    "write_fail=%lld closed_dead=%lld close_after_ms=%lld",
		    nclients, st_bcast_max_us, st_write_max_us, st_overflow,
		    st_closed_dead, st_close_after_ms);
		st_bcast_max_us = st_write_max_us = 0;
		enqueue(p, out, (size_t)k);
	} else {
		enqueue(p, msg, len);
	}
	pthread_mutex_unlock(&lock);
	lws_callback_on_writable(wsi);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason,
                    void *user, void *in, size_t len)
{
	struct pss *p = user;
	static unsigned char hbuf[LWS_PRE + 512];
	char uri[64];

	switch (reason) {
	case LWS_CALLBACK_HTTP: {
		unsigned char *start = hbuf + LWS_PRE, *pos = start,
		              *end = hbuf + sizeof hbuf - 1;
		if (strcmp((const char *)in, "/app.js") != 0) {
			lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL);
			return lws_http_transaction_completed(wsi) ? -1 : 0;
		}
		if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK,
		                                "application/javascript",
		                                APP_SIZE, &pos, end)
		    || lws_finalize_write_http_header(wsi, start, &pos, end))
			return 1;
		lws_callback_on_writable(wsi);
		return 0;
	}
	case LWS_CALLBACK_HTTP_WRITEABLE:
		/* The whole body in one write, as civetweb's mg_write(): what the
		 * socket does not take now, lws keeps and sends on POLLOUT. */
		if (lws_write(wsi, app_buf + LWS_PRE, APP_SIZE,
		              LWS_WRITE_HTTP_FINAL) != APP_SIZE)
			return 1;
		return lws_http_transaction_completed(wsi) ? -1 : 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		/* websocket upgrade: only on /ws */
		if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0
		    || strcmp(uri, "/ws") != 0)
			return 1;
		return 0;
	case LWS_CALLBACK_ESTABLISHED:
		memset(p, 0, sizeof *p);
		p->wsi = wsi;
		pthread_mutex_lock(&lock);
		p->next = clients;
		clients = p;
		nclients++;
		pthread_mutex_unlock(&lock);
		return 0;
	case LWS_CALLBACK_CLOSED:
		pthread_mutex_lock(&lock);
		for (struct pss **pp = &clients; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				nclients--;
				break;
			}
		while (p->qh) {
			struct msg *m = p->qh;
			p->qh = m->next;
			free(m);
		}
		p->qt = NULL;
		p->qlen = 0;
		if (p->overflow) {
			st_closed_dead++;
			st_close_after_ms = (now_us() - p->overflow_at) / 1000;
		}
		pthread_mutex_unlock(&lock);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		if (lws_is_first_fragment(wsi))
			p->rxlen = 0;
		if (p->rxlen + len >= RX_MAX)
			return -1; /* too big for this bench: close */
		memcpy(p->rx + p->rxlen, in, len);
		p->rxlen += len;
		if (lws_is_final_fragment(wsi)) {
			handle_message(wsi, p, p->rx, p->rxlen);
			p->rxlen = 0;
		}
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE: {
		pthread_mutex_lock(&lock);
		struct msg *m = p->qh;
		if (m) {
			p->qh = m->next;
			if (!p->qh)
				p->qt = NULL;
			p->qlen--;
		}
		int more = p->qh != NULL;
		pthread_mutex_unlock(&lock);
		if (!m)
			return 0;
		long long t0 = now_us();
		int r = lws_write(wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_TEXT);
		long long w = now_us() - t0;
		int ok = r >= (int)m->len;
		free(m);
		pthread_mutex_lock(&lock);
		if (w > st_write_max_us)
			st_write_max_us = w;
		pthread_mutex_unlock(&lock);
		if (!ok)
			return -1;
		if (more)
			lws_callback_on_writable(wsi);
		return 0;
	}
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* after lws_cancel_service(): user is not a pss here */
		pthread_mutex_lock(&lock);
		for (struct pss *c = clients; c; c = c->next) {
			if (c->overflow) {
				if (!c->killed) {
					c->killed = 1;
					lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK,
					                LWS_TO_KILL_ASYNC);
				}
			} else if (c->qh) {
				lws_callback_on_writable(c->wsi);
			}
		}
		pthread_mutex_unlock(&lock);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static void *broadcaster(void *arg)
{
	(void)arg;
	char msg[BCAST_SIZE];

	for (;;) {
		pthread_mutex_lock(&qlock);
		while (qlen == 0)
			pthread_cond_wait(&qcond, &qlock);
		long n = queue[qhead];
		qhead = (qhead + 1) % QMAX;
		qlen--;
		pthread_mutex_unlock(&qlock);

		int k = snprintf(msg, sizeof msg, "bcast %ld ", n);
		memset(msg + k, 'x', sizeof msg - (size_t)k);

		pthread_mutex_lock(&lock);
		long long t0 = now_us();
		for (struct pss *c = clients; c; c = c->next)
			enqueue(c, msg, sizeof msg);
		long long b = now_us() - t0;
		if (b > st_bcast_max_us)
			st_bcast_max_us = b;
		pthread_mutex_unlock(&lock);
		lws_cancel_service(context);
	}
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const struct lws_protocols protocols[] = {
    {"tutti", callback, sizeof(struct pss), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PORT [max_pending]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		max_pending = atoi(argv[2]);
	for (size_t i = 0; i < APP_SIZE; i++)
		app_buf[LWS_PRE + i] = (unsigned char)('a' + i % 26);

	lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof info);
	info.port = atoi(argv[1]);
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	info.gid = -1;
	info.uid = -1;
	info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
	/* The default, 4096, sends a 60 KiB body 4 KiB per poll() turn:
	 * about a third of the requests per second measured with this. */
	info.pt_serv_buf_size = 65536;
	context = lws_create_context(&info);
	if (!context) {
		fprintf(stderr, "lws_create_context failed\n");
		return 1;
	}

	/* Signals go to the service thread, whose poll() they interrupt. */
	sigset_t sigs, old;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	pthread_t t;
	pthread_create(&t, NULL, broadcaster, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		if (lws_service(context, 0) < 0)
			break;
	lws_context_destroy(context);
	return 0;
}
