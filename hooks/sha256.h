/* SHA-256 (FIPS 180-4), small and self-contained: the audit trail's hash
 * chain needs nothing more, and the runtime links no crypto library. */
#ifndef AGENTCAGE_SHA256_H
#define AGENTCAGE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN 64

struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;      /* bytes hashed so far */
    uint8_t block[64];
    size_t used;         /* bytes waiting in block */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
/* One call: lowercase hex digest of data into hex (65 bytes with the NUL). */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

#endif
