// OpenSSL's libcrypto, for SHA-256 at the speed of the processor's SHA
// instructions (the library scan hashes up to 128 KiB of every new file).
// Opened at the first hash (dlopen), not at start: loading it costs a
// leader about 1.4 MiB resident, and a leader that scans nothing new never
// needs it. Owned by TuttiLibrary.
#ifndef TUTTI_CCRYPTO_H
#define TUTTI_CCRYPTO_H
#include <openssl/evp.h>
#include <dlfcn.h>
#include <stdlib.h>

/// The libcrypto functions Tutti calls, looked up by `tutti_crypto_open`.
typedef struct tutti_crypto {
    int (* _Nonnull digest)(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl);
    const EVP_MD *(* _Nonnull sha256)(void);
} tutti_crypto;

/// Loads libcrypto 3: its functions (kept for the process's life), or NULL with `*why` set.
static inline const tutti_crypto *_Nullable tutti_crypto_open(const char *_Nullable *_Nonnull why) {
    void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) { *why = dlerror(); return NULL; }
    tutti_crypto *api = (tutti_crypto *)calloc(1, sizeof *api);
    if (api == NULL) { *why = "out of memory"; return NULL; }
    if ((*(void **)&api->digest = dlsym(lib, "EVP_Digest")) == NULL
        || (*(void **)&api->sha256 = dlsym(lib, "EVP_sha256")) == NULL) { *why = dlerror(); free(api); return NULL; }
    return api;
}
#endif
