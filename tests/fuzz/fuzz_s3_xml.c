/*
 * fuzz_s3_xml.c - the XML helpers of proto/s3_xml.h: escaping what goes
 * into error bodies, finding elements and unescaping their text in what comes
 * back from clients and the upstream.
 *
 * Input: an element name, '\n', then the text.
 * Invariants:
 *  - s3_xml_unescape never grows its input, refuses markup ('<') and raw NUL
 *    (no XML character), and respects its max;
 *  - s3_xml_escape gives well-formed XML 1.0 character data whatever the
 *    bytes: strictly valid UTF-8, no control character, no U+FFFE/U+FFFF, no
 *    bare '<', '>', quote or '&'; it unescapes again, and back to the very
 *    bytes given when those were already clean text;
 *  - an error body built from the text holds it as <Code>, found again by
 *    s3_xml_element and unescaped to the same escaped-then-unescaped text;
 *  - s3_xml_element only ever points inside the buffer and moves forward.
 */
#include <stdbool.h>

#include "../../proto/s3_xml.h"
#include "fuzz.h"

/* Clean: survives escaping unchanged (valid UTF-8, no control but tab/LF/CR, no U+FFFE/F). */
static bool clean_text(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t avail = strlen(s);
    while (avail > 0) {
        uint32_t cp;
        size_t n = fz_utf8_len(p, avail, &cp);
        if (n == 0 || cp == 0xFFFE || cp == 0xFFFF || cp == 0x7F ||
            (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r'))
            return false;
        p += n;
        avail -= n;
    }
    return true;
}

static void check_escaped(const char *e)
{
    static const char *const entities[] = {"&amp;",  "&lt;", "&gt;",  "&quot;",
                                           "&apos;", "&#9;", "&#10;", "&#13;"};
    const unsigned char *p = (const unsigned char *)e;
    size_t avail = strlen(e);
    while (avail > 0) {
        uint32_t cp;
        size_t n = fz_utf8_len(p, avail, &cp);
        FZ_CHECK(n > 0 && cp >= 0x20 && cp != 0x7F && cp != 0xFFFE && cp != 0xFFFF);
        FZ_CHECK(cp != '<' && cp != '>' && cp != '"' && cp != '\'');
        if (cp == '&') {
            bool known = false;
            for (size_t i = 0; i < sizeof(entities) / sizeof(entities[0]) && !known; i++)
                known = strncmp((const char *)p, entities[i], strlen(entities[i])) == 0;
            FZ_CHECK(known);
        }
        p += n;
        avail -= n;
    }
}

static void check_unescape(const char *text, size_t len)
{
    char *out = NULL;
    sc_code rc = s3_xml_unescape(text, len, len, &out);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL);
    FZ_CHECK((rc == SC_OK) == (out != NULL));
    if (rc == SC_OK) {
        FZ_CHECK(strlen(out) <= len);
        FZ_CHECK(memchr(text, '<', len) == NULL && memchr(text, '\0', len) == NULL);
        free(out);
        out = NULL;
        size_t n = 0;
        FZ_CHECK(s3_xml_unescape(text, len, len, &out) == SC_OK);
        n = strlen(out);
        free(out);
        out = NULL;
        if (n > 0) {
            FZ_CHECK(s3_xml_unescape(text, len, n, &out) == SC_OK);
            free(out);
            out = NULL;
            FZ_CHECK(s3_xml_unescape(text, len, n - 1, &out) == SC_EINVAL && out == NULL);
        }
    }
}

/* Escapes s, checks the result, and returns it unescaped (malloc'd). */
static char *check_escape(const char *s)
{
    char *e = NULL, *back = NULL;
    FZ_CHECK(s3_xml_escape(s, &e) == SC_OK);
    FZ_CHECK(strlen(e) <= 6 * strlen(s));
    check_escaped(e);
    FZ_CHECK(s3_xml_unescape(e, strlen(e), strlen(e), &back) == SC_OK);
    if (clean_text(s))
        FZ_CHECK(strcmp(back, s) == 0);
    free(e);
    return back;
}

static void check_error_body(const char *s, const char *tag, const char *unescaped)
{
    char *body = NULL, *code = NULL;
    size_t blen = 0;
    FZ_CHECK(s3_xml_error_body(s, s, tag, NULL, &body, &blen) == SC_OK);
    FZ_CHECK(blen == strlen(body));
    const char *p = body, *t, *te;
    FZ_CHECK(s3_xml_element(&p, body + blen, "Code", &t, &te) == SC_OK);
    FZ_CHECK(s3_xml_unescape(t, (size_t)(te - t), (size_t)(te - t), &code) == SC_OK);
    FZ_CHECK(strcmp(code, unescaped) == 0);
    p = body;
    FZ_CHECK(s3_xml_element(&p, body + blen, "RequestId", &t, &te) == SC_ENOTFOUND);
    free(code);
    free(body);
}

static void check_elements(const char *text, size_t len, const char *tag)
{
    const char *p = text, *end = text + len, *t, *te;
    sc_code rc;
    while ((rc = s3_xml_element(&p, end, tag, &t, &te)) == SC_OK) {
        FZ_CHECK(t >= text && t <= te && te <= end && p > te && p <= end);
        char *out = NULL;
        if (s3_xml_unescape(t, (size_t)(te - t), 1024, &out) == SC_OK)
            FZ_CHECK(strlen(out) <= (size_t)(te - t));
        free(out);
    }
    FZ_CHECK(rc == SC_ENOTFOUND || rc == SC_EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *tag = fz_line(&f, NULL);
    char *text = fz_rest(&f, &len);

    check_unescape(text, len);
    char *back = check_escape(text);
    check_error_body(text, tag, back);
    check_elements(text, len, tag[0] ? tag : "Key");
    free(back);
    free(tag);
    free(text);
    return 0;
}
