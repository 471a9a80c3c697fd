/*
 * json_scan.h - JSON text read in place, without a tree. jansson builds a node of about 100
 * bytes for every string of a body; a manifest of 10 million keys would take a gigabyte for
 * the tree alone. json_in_load_hollow() (json_in.h) leaves its largest arrays out of the
 * tree and checks them here, accepting exactly what jansson accepts; the caller then walks
 * them with a cursor, one element at a time.
 *
 * What "exactly" means: a string is accepted as jansson 2.14 accepts one with
 * JSON_REJECT_DUPLICATES and without JSON_ALLOW_NUL (UTF-8 without overlongs, surrogates or
 * code points past U+10FFFF; no control character; escapes \" \\ \/ \b \f \n \r \t and
 * \uXXXX, a high surrogate escape followed by a low one; no \u0000); an array is '[', its
 * elements separated by ',', ']', with JSON whitespace (space, tab, LF, CR) between tokens.
 * Any other element (number, literal, object) is handed to jansson itself, as a value alone.
 *
 * Pure functions of their arguments; a span points into the caller's text and lives as long.
 */
#ifndef JSON_SCAN_H
#define JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "../common/buf.h"
#include "../common/sc_err.h"

/* Bytes of a JSON text: one value, from its first byte to its last. */
struct json_span {
    const char *p;
    size_t len;
};

/* @brief Where the JSON whitespace (space, tab, LF, CR) from text[at] ends (len at most). */
size_t json_scan_ws(const char *text, size_t len, size_t at);

/*
 * @brief Whether text[at..len) starts with one JSON array as jansson would accept it
 * (the rules above), nested at most max_depth levels (the array itself is level 1).
 * @param[out] end one past its ']' on success.
 * @return true if valid.
 */
bool json_scan_array(const char *text, size_t len, size_t at, unsigned max_depth, size_t *end);

/*
 * @brief Where the value at text[at] ends, without checking it: a string to its closing
 * quote, an array or object to its matching bracket (brackets in strings not counted), any
 * other value to the next ',', ':', ']', '}', '"', '[', '{' or whitespace.
 * @return one past its last byte, or 0 when it does not end within len (or is empty).
 */
size_t json_scan_skip(const char *text, size_t len, size_t at);

/*
 * @brief Whether text[at] starts a string jansson accepts (the rules above).
 * @param[out] end one past its closing quote. @param[out] plain no escape in it: its bytes
 * between the quotes are its value. Both may be NULL.
 */
bool json_scan_string(const char *text, size_t len, size_t at, size_t *end, bool *plain);

/*
 * @brief The value of a string json_scan_string() accepted, given as its span (quotes
 * included).
 * @param[in,out] scratch where an escaped string is decoded (reset first); a plain one is
 * not copied.
 * @param[out] n its length in bytes (it holds no NUL).
 * @return its bytes (in the text or in scratch; valid until scratch changes), or NULL when
 * scratch ran out of memory.
 */
const char *json_scan_decode(struct json_span str, struct sc_buf *scratch, size_t *n);

/* Kinds of an array element. */
enum json_scan_kind {
    JSON_SCAN_STRING,
    JSON_SCAN_ARRAY,
    JSON_SCAN_OTHER, /* number, true, false, null or object */
};

/* One element of an array, as the cursor gives it. */
struct json_scan_elem {
    enum json_scan_kind kind;
    struct json_span text; /* the element, quotes or brackets included */
};

/* Walks the elements of one array json_scan_array() accepted. */
struct json_scan_cursor {
    const char *p;
    size_t len, at;
};

/* @brief Starts before the first element of array (a span json_scan_array() accepted). */
void json_scan_cursor_init(struct json_scan_cursor *c, struct json_span array);

/* @brief The next element. @return false past the last one. */
bool json_scan_next(struct json_scan_cursor *c, struct json_scan_elem *e);

/* @brief The number of elements of array (a span json_scan_array() accepted). O(its length). */
size_t json_scan_count(struct json_span array);

/*
 * @brief An element of kind JSON_SCAN_OTHER (or any accepted value) as a jansson value.
 * @return a new reference the caller json_decref()s; NULL when out of memory.
 */
json_t *json_scan_value(struct json_span value);

#endif
