// libcurl, and typed wrappers for its variadic calls (Swift cannot call
// curl_easy_setopt or curl_easy_getinfo directly). Owned by TuttiStreams.
#ifndef TUTTI_CCURL_H
#define TUTTI_CCURL_H
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

typedef size_t (*tutti_curl_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode tutti_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline CURLcode tutti_curl_set_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_list(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode tutti_curl_set_callback(CURL *h, CURLoption o, tutti_curl_data_callback f) { return curl_easy_setopt(h, o, f); }
/// The errno of the last failed connect (CURLINFO_OS_ERRNO), 0 if none.
static inline long tutti_curl_os_errno(CURL *h) {
    long e = 0;
    return curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &e) == CURLE_OK ? e : 0;
}
#endif
