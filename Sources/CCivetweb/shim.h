#include <civetweb.h>

/* mg_send_http_error is variadic, which Swift cannot call: a fixed-argument
   wrapper. It answers `status` with `text` and marks the connection to close. */
static inline int tutti_mg_send_error(struct mg_connection *conn, int status, const char *text) {
    return mg_send_http_error(conn, status, "%s", text);
}
