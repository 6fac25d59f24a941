// libcurl, opened at the first transfer (dlopen, TuttiSystem's
// FunctionTable), not at start: loading it and its TLS, Kerberos and LDAP
// libraries costs a leader about 6 MiB resident, and most leaders never play
// a network stream. Its functions are a table; the variadic curl_easy_setopt
// and curl_easy_getinfo (which Swift cannot call) go through typed wrappers.
// Owned by TuttiStreams.
#ifndef TUTTI_CCURL_H
#define TUTTI_CCURL_H
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef size_t (*tutti_curl_data_callback)(char *data, size_t size, size_t count, void *context);

/// The libcurl functions Tutti calls, in the order CurlTransfer.swift names them.
typedef struct tutti_curl {
    CURLcode (* _Nonnull global_init)(long flags);
    CURL *(* _Nonnull easy_init)(void);
    void (* _Nonnull easy_cleanup)(CURL *h);
    CURLcode (* _Nonnull easy_setopt)(CURL *h, CURLoption o, ...);
    CURLcode (* _Nonnull easy_getinfo)(CURL *h, CURLINFO i, ...);
    const char *(* _Nonnull easy_strerror)(CURLcode code);
    struct curl_slist *(* _Nonnull slist_append)(struct curl_slist *list, const char *text);
    void (* _Nonnull slist_free_all)(struct curl_slist *list);
    CURLM *(* _Nonnull multi_init)(void);
    CURLMcode (* _Nonnull multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode (* _Nonnull multi_remove_handle)(CURLM *m, CURL *h);
    CURLMcode (* _Nonnull multi_cleanup)(CURLM *m);
    CURLMcode (* _Nonnull multi_perform)(CURLM *m, int *running);
    CURLMsg *(* _Nonnull multi_info_read)(CURLM *m, int *left);
    CURLMcode (* _Nonnull multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned int count, int milliseconds, int *ready);
    CURLMcode (* _Nonnull multi_wakeup)(CURLM *m);
} tutti_curl;

static inline CURLcode tutti_curl_set_long(const tutti_curl *api, CURL *h, CURLoption o, long v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_string(const tutti_curl *api, CURL *h, CURLoption o, const char *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_pointer(const tutti_curl *api, CURL *h, CURLoption o, void *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_list(const tutti_curl *api, CURL *h, CURLoption o, struct curl_slist *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_callback(const tutti_curl *api, CURL *h, CURLoption o, tutti_curl_data_callback f) { return api->easy_setopt(h, o, f); }
typedef curl_socket_t (*tutti_curl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode tutti_curl_set_opensocket(const tutti_curl *api, CURL *h, tutti_curl_opensocket_callback f) { return api->easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f); }
/// The IP address libcurl is about to connect to: its 4 (IPv4) or 16 (IPv6)
/// bytes copied to `out`; returns that count, 0 for another family.
/// (`address->addr` is a `struct sockaddr` that runs on to `addrlen` bytes,
/// which Swift cannot read through the field.)
static inline int tutti_curl_sockaddr_ip(const struct curl_sockaddr *address, unsigned char out[16]) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&address->addr;
        memcpy(out, &a->sin_addr, 4);
        return 4;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&address->addr;
        memcpy(out, &a->sin6_addr, 16);
        return 16;
    }
    return 0;
}
/// The errno of the last failed connect (CURLINFO_OS_ERRNO), 0 if none.
static inline long tutti_curl_os_errno(const tutti_curl *api, CURL *h) {
    long e = 0;
    return api->easy_getinfo(h, CURLINFO_OS_ERRNO, &e) == CURLE_OK ? e : 0;
}
#endif
