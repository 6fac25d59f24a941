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

// AES-256-GCM through EVP, for Sendspin's Noise suite `25519_AESGCM_SHA256` on
// processors without the AES instructions libsodium's AES-GCM insists on.
// Opened only when a Sendspin client picks that suite on such a machine.
#include <openssl/evp.h>

/// The libcrypto functions Tutti's AES-GCM calls, in the order NoisePrimitives.swift names them.
typedef struct tutti_aes_gcm {
    EVP_CIPHER_CTX *_Nullable (* _Nonnull newContext)(void);
    void (* _Nonnull freeContext)(EVP_CIPHER_CTX *_Nullable context);
    const EVP_CIPHER *_Nonnull (* _Nonnull aes256gcm)(void);
    int (* _Nonnull encryptInit)(EVP_CIPHER_CTX *_Nonnull context, const EVP_CIPHER *_Nullable cipher, ENGINE *_Nullable engine,
                                 const unsigned char *_Nullable key, const unsigned char *_Nullable iv);
    int (* _Nonnull encryptUpdate)(EVP_CIPHER_CTX *_Nonnull context, unsigned char *_Nullable out, int *_Nonnull outCount,
                                   const unsigned char *_Nullable in, int inCount);
    int (* _Nonnull encryptFinal)(EVP_CIPHER_CTX *_Nonnull context, unsigned char *_Nullable out, int *_Nonnull outCount);
    int (* _Nonnull decryptInit)(EVP_CIPHER_CTX *_Nonnull context, const EVP_CIPHER *_Nullable cipher, ENGINE *_Nullable engine,
                                 const unsigned char *_Nullable key, const unsigned char *_Nullable iv);
    int (* _Nonnull decryptUpdate)(EVP_CIPHER_CTX *_Nonnull context, unsigned char *_Nullable out, int *_Nonnull outCount,
                                   const unsigned char *_Nullable in, int inCount);
    int (* _Nonnull decryptFinal)(EVP_CIPHER_CTX *_Nonnull context, unsigned char *_Nullable out, int *_Nonnull outCount);
    int (* _Nonnull control)(EVP_CIPHER_CTX *_Nonnull context, int type, int arg, void *_Nullable pointer);
} tutti_aes_gcm;

// SHA-1, one call, for the one place a protocol insists on it: a Tutti speaker
// playing for a Sendspin server checks the server's Sec-WebSocket-Accept
// (RFC 6455). Opened at that speaker's first connection. The legacy one-shot
// SHA1(), like SHA256_* above, keeps EVP's provider set-up out.
typedef struct tutti_sha1 {
    unsigned char *_Nullable (* _Nonnull digest)(const unsigned char *_Nullable data, size_t count, unsigned char *_Nullable md);
} tutti_sha1;

static const int tutti_gcm_get_tag = EVP_CTRL_GCM_GET_TAG;
static const int tutti_gcm_set_tag = EVP_CTRL_GCM_SET_TAG;
#endif
