// libcurl, opened at the first transfer (dlopen), not at start: loading it
// and its TLS, Kerberos and LDAP libraries costs a leader about 6 MiB
// resident, and most leaders never play a network stream. The calls go
// through a table of its functions; the variadic curl_easy_setopt and
// curl_easy_getinfo (which Swift cannot call) through typed wrappers.
// Owned by TuttiStreams.
#ifndef TUTTI_CCURL_H
#define TUTTI_CCURL_H
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdlib.h>

typedef size_t (*tutti_curl_data_callback)(char *data, size_t size, size_t count, void *context);

/// The libcurl functions Tutti calls, looked up by `tutti_curl_open`.
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

/// Loads libcurl 4 and sets up its global state: its functions (kept for
/// the process's life), or NULL with `*why` set.
static inline const tutti_curl *_Nullable tutti_curl_open(const char *_Nullable *_Nonnull why) {
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) { *why = dlerror(); return NULL; }
    tutti_curl *api = (tutti_curl *)calloc(1, sizeof *api);
    if (api == NULL) { *why = "out of memory"; return NULL; }
#define TUTTI_CURL_FIND(field) \
    if ((*(void **)&api->field = dlsym(lib, "curl_" #field)) == NULL) { *why = dlerror(); free(api); return NULL; }
    TUTTI_CURL_FIND(global_init) TUTTI_CURL_FIND(easy_init) TUTTI_CURL_FIND(easy_cleanup)
    TUTTI_CURL_FIND(easy_setopt) TUTTI_CURL_FIND(easy_getinfo) TUTTI_CURL_FIND(easy_strerror)
    TUTTI_CURL_FIND(slist_append) TUTTI_CURL_FIND(slist_free_all)
    TUTTI_CURL_FIND(multi_init) TUTTI_CURL_FIND(multi_add_handle) TUTTI_CURL_FIND(multi_remove_handle)
    TUTTI_CURL_FIND(multi_cleanup) TUTTI_CURL_FIND(multi_perform) TUTTI_CURL_FIND(multi_info_read)
    TUTTI_CURL_FIND(multi_poll) TUTTI_CURL_FIND(multi_wakeup)
#undef TUTTI_CURL_FIND
    if (api->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) { *why = "curl_global_init failed"; free(api); return NULL; }
    return api;
}

static inline CURLcode tutti_curl_set_long(const tutti_curl *api, CURL *h, CURLoption o, long v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_string(const tutti_curl *api, CURL *h, CURLoption o, const char *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_pointer(const tutti_curl *api, CURL *h, CURLoption o, void *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_list(const tutti_curl *api, CURL *h, CURLoption o, struct curl_slist *v) { return api->easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_callback(const tutti_curl *api, CURL *h, CURLoption o, tutti_curl_data_callback f) { return api->easy_setopt(h, o, f); }
/// The errno of the last failed connect (CURLINFO_OS_ERRNO), 0 if none.
static inline long tutti_curl_os_errno(const tutti_curl *api, CURL *h) {
    long e = 0;
    return api->easy_getinfo(h, CURLINFO_OS_ERRNO, &e) == CURLE_OK ? e : 0;
}
#endif
