// OpenSSL's libcrypto, for SHA-256 at the speed of the processor's SHA
// instructions (the library scan hashes up to 128 KiB of every new file).
#include <openssl/evp.h>
