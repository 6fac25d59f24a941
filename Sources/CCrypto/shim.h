// OpenSSL's libcrypto, for SHA-256 at the speed of the processor's SHA
// instructions (the library scan hashes up to 128 KiB of every new file).
// Opened at the first hash (dlopen, TuttiSystem's FunctionTable), not at
// start: loading it costs a leader about 1.4 MiB resident, and a leader that
// scans nothing new never needs it. Owned by TuttiLibrary.
#ifndef TUTTI_CCRYPTO_H
#define TUTTI_CCRYPTO_H
#include <openssl/evp.h>

/// The libcrypto functions Tutti calls, in the order SHA256.swift names them.
typedef struct tutti_crypto {
    int (* _Nonnull digest)(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl);
    const EVP_MD *(* _Nonnull sha256)(void);
} tutti_crypto;
#endif
