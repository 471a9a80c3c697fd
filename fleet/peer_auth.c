/*
 * peer_auth.c - the fleet signature of a peer request: HMAC-SHA256 under the fleet secret of
 *
 *     method \n path \n query \n identity \n range \n if_match \n date
 *
 * (struct fleet_signed's fields in order, NULL as "", the date in decimal), lowercase hex.
 * A field holding '\n' could move text from one field to the next under the same signature,
 * so none may: signing one fails, verifying one refuses. The check compares in constant time
 * (CRYPTO_memcmp) and refuses a date more than FLEET_MAX_SKEW seconds from now.
 */
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../sigv4/sigv4.h"
#include "fleet_int.h"

#define SIG_HEX    64
#define SIGNED_MAX (64 * 1024) /* a request line is far shorter */

static bool has_newline(const char *s)
{
    return s != NULL && strchr(s, '\n') != NULL;
}

static void put_field(struct sc_buf *b, const char *s)
{
    sc_buf_puts(b, s ? s : "");
    sc_buf_putc(b, '\n');
}

/* The text signed, in b. SC_OK, SC_EINVAL (a field with '\n'), SC_ENOMEM, SC_ETOOBIG. */
static sc_code signed_text(const struct fleet_signed *w, struct sc_buf *b)
{
    char date[24];
    if (has_newline(w->method) || has_newline(w->path) || has_newline(w->query) ||
        has_newline(w->identity) || has_newline(w->range) || has_newline(w->if_match))
        return SC_EINVAL;
    snprintf(date, sizeof(date), "%" PRId64, w->date);
    put_field(b, w->method);
    put_field(b, w->path);
    put_field(b, w->query);
    put_field(b, w->identity);
    put_field(b, w->range);
    put_field(b, w->if_match);
    sc_buf_puts(b, date);
    return b->err;
}

sc_code fleet_sign(const fleet *f, const struct fleet_signed *what, char sig[65])
{
    struct sc_buf b = SC_BUF_INIT;
    sc_buf_init(&b, SIGNED_MAX);
    sig[0] = '\0';
    sc_code rc = signed_text(what, &b);
    if (rc == SC_OK)
        rc = sigv4_hmac_sha256_hex(f->secret, f->secret_len, b.data, b.len, sig);
    sc_buf_free(&b);
    return rc;
}

static bool is_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return s[n] == '\0';
}

sc_code fleet_verify(const fleet *f, const struct fleet_signed *what, const char *sig, int64_t now)
{
    char want[SIG_HEX + 1];
    if (sig == NULL || strnlen(sig, SIG_HEX + 1) != SIG_HEX || !is_lower_hex(sig, SIG_HEX))
        return SC_EACCES;
    if (what->date < now - FLEET_MAX_SKEW || what->date > now + FLEET_MAX_SKEW)
        return SC_EACCES;
    if (fleet_sign(f, what, want) != SC_OK)
        return SC_EACCES;
    bool match = CRYPTO_memcmp(want, sig, SIG_HEX) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    return match ? SC_OK : SC_EACCES;
}
