/*
 * civetweb 1.15 bench server (see README.md).
 *
 *   GET /app.js   60 KiB from memory (keep-alive allowed)
 *   WS  /ws       "echo" of every text message;
 *                 "broadcast N" -> a ~1 KiB text message to every client,
 *                 written by a separate broadcaster thread with
 *                 mg_websocket_write (as a daemon thread would);
 *                 "stats" -> one line of counters.
 *
 * usage: civetweb_server PORT [request_timeout_ms]
 *
 * request_timeout_ms (default 2000 here, 30000 in civetweb) is also the
 * longest a single mg_websocket_write blocks on a client whose socket is
 * full. A client whose write failed is marked dead and skipped. civetweb
 * has no call to close it from another thread: its own thread closes it
 * when one of its pings (enable_websocket_ping_pong, one per
 * websocket_timeout_ms without data from the client) cannot be written, or
 * after more than 5 pings without an answer.
 */
#include <civetweb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define APP_SIZE (60 * 1024)
#define BCAST_SIZE 1024
#define RX_MAX 4096

struct client {
	struct client *next;
	struct mg_connection *conn;
	int dead;          /* a write failed or timed out: skip it */
	long long dead_at; /* us */
	size_t rxlen;
	char rx[RX_MAX];
};

static char app_js[APP_SIZE];

/* Clients, and everything below, under `lock`. The broadcaster holds it
 * while it writes, so a close handler (which unlinks and frees) waits. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct client *clients;
static int nclients;
static long long st_bcast_max_us, st_write_max_us, st_write_fail,
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

static int app_handler(struct mg_connection *conn, void *cb)
{
	(void)cb;
	mg_send_http_ok(conn, "application/javascript", APP_SIZE);
	mg_write(conn, app_js, APP_SIZE);
	return 200;
}

static int ws_connect(const struct mg_connection *conn, void *cb)
{
	(void)conn;
	(void)cb;
	return 0; /* accept */
}

static void ws_ready(struct mg_connection *conn, void *cb)
{
	(void)cb;
	struct client *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->conn = conn;
	mg_set_user_connection_data(conn, c);
	pthread_mutex_lock(&lock);
	c->next = clients;
	clients = c;
	nclients++;
	pthread_mutex_unlock(&lock);
}

static void ws_close(const struct mg_connection *conn, void *cb)
{
	(void)cb;
	struct client *c = mg_get_user_connection_data(conn);
	if (!c)
		return;
	pthread_mutex_lock(&lock);
	for (struct client **p = &clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			nclients--;
			break;
		}
	if (c->dead) {
		st_closed_dead++;
		st_close_after_ms = (now_us() - c->dead_at) / 1000;
	}
	pthread_mutex_unlock(&lock);
	mg_set_user_connection_data(conn, NULL);
	free(c);
}

static void handle_message(struct mg_connection *conn, char *msg, size_t len)
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
	} else if (strcmp(msg, "stats") == 0) {
		pthread_mutex_lock(&lock);
		int k = snprintf(out, sizeof out,
		    "stats clients=%d bcast_max_us=%lld write_max_us=%lld "
		    "write_fail=%lld closed_dead=%lld close_after_ms=%lld",
		    nclients, st_bcast_max_us, st_write_max_us, st_write_fail,
		    st_closed_dead, st_close_after_ms);
		st_bcast_max_us = st_write_max_us = 0;
		pthread_mutex_unlock(&lock);
		mg_websocket_write(conn, MG_WEBSOCKET_OPCODE_TEXT, out, (size_t)k);
	} else {
		mg_websocket_write(conn, MG_WEBSOCKET_OPCODE_TEXT, msg, len);
	}
}

static int ws_data(struct mg_connection *conn, int bits, char *data,
                   size_t len, void *cb)
{
	(void)cb;
	struct client *c = mg_get_user_connection_data(conn);
	int op = bits & 0xf;

	if (op == MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE)
		return 0;
	if (!c || (op != MG_WEBSOCKET_OPCODE_TEXT
	           && op != MG_WEBSOCKET_OPCODE_CONTINUATION))
		return 1; /* binary, pong: ignored */
	if (op == MG_WEBSOCKET_OPCODE_TEXT)
		c->rxlen = 0;
	if (c->rxlen + len >= RX_MAX)
		return 0; /* too big for this bench: close */
	memcpy(c->rx + c->rxlen, data, len);
	c->rxlen += len;
	if (bits & 0x80) { /* FIN */
		handle_message(conn, c->rx, c->rxlen);
		c->rxlen = 0;
	}
	return 1;
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
		for (struct client *c = clients; c; c = c->next) {
			if (c->dead)
				continue;
			long long w0 = now_us();
			int r = mg_websocket_write(c->conn, MG_WEBSOCKET_OPCODE_TEXT,
			                           msg, sizeof msg);
			long long w = now_us() - w0;
			if (w > st_write_max_us)
				st_write_max_us = w;
			if (r != (int)sizeof msg) {
				c->dead = 1;
				c->dead_at = now_us();
				st_write_fail++;
			}
		}
		long long b = now_us() - t0;
		if (b > st_bcast_max_us)
			st_bcast_max_us = b;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PORT [request_timeout_ms]\n", argv[0]);
		return 2;
	}
	char ports[64];
	snprintf(ports, sizeof ports, "127.0.0.1:%s", argv[1]);
	const char *timeout = argc > 2 ? argv[2] : "2000";

	for (size_t i = 0; i < APP_SIZE; i++)
		app_js[i] = (char)('a' + i % 26);
	/* SIGTERM/SIGINT are taken by sigwait() in main: block them before
	 * any thread exists, so every thread inherits the mask. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	mg_init_library(0);
	if (!mg_check_feature(MG_FEATURES_WEBSOCKET)) {
		fprintf(stderr, "libcivetweb built without websockets\n");
		return 1;
	}
	const char *options[] = {
	    "listening_ports", ports,
	    "num_threads", "64",          /* 50 websockets each hold one */
	    "enable_keep_alive", "yes",
	    "tcp_nodelay", "1",
	    "request_timeout_ms", timeout,
	    "websocket_timeout_ms", "5000",
	    "enable_websocket_ping_pong", "yes",
	    NULL};
	struct mg_callbacks cbs;
	memset(&cbs, 0, sizeof cbs);
	struct mg_context *ctx = mg_start(&cbs, NULL, options);
	if (!ctx) {
		fprintf(stderr, "mg_start failed\n");
		return 1;
	}
	mg_set_request_handler(ctx, "/app.js$", app_handler, NULL);
	mg_set_websocket_handler(ctx, "/ws$", ws_connect, ws_ready, ws_data,
	                         ws_close, NULL);

	pthread_t t;
	pthread_create(&t, NULL, broadcaster, NULL);
	printf("ready\n");
	fflush(stdout);
	int sig;
	sigwait(&sigs, &sig);
	mg_stop(ctx);
	mg_exit_library();
	return 0;
}
