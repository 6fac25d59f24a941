// OpenSSL's libcrypto, for SHA-256 at the speed of the processor's SHA
// instructions (the library scan hashes up to 128 KiB of every new file).
// Opened at the first hash (dlopen, TuttiSystem's FunctionTable), not at
// start: loading it costs a leader about 1.4 MiB resident, and a leader that
// scans nothing new never needs it. Owned by TuttiAuth (SHA256.swift).
//
// Its SHA256_* functions, not EVP_Digest: EVP fetches SHA-256 from OpenSSL
// 3's default provider, whose set-up keeps 1.8 MiB more of the library
// resident (3.4 MiB against 1.6 in a test program) for the same digest.
// They are marked deprecated in OpenSSL 3 but kept; the warning is silenced
// here only.
#ifndef TUTTI_CCRYPTO_H
#define TUTTI_CCRYPTO_H
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

/// The libcrypto functions Tutti calls, in the order SHA256.swift names them.
typedef struct tutti_crypto {
    int (* _Nonnull begin)(SHA256_CTX *_Nonnull context);
    int (* _Nonnull update)(SHA256_CTX *_Nonnull context, const void *_Nullable data, size_t count);
    int (* _Nonnull finish)(unsigned char *_Nonnull md, SHA256_CTX *_Nonnull context);
} tutti_crypto;
#endif
