/* test_s3_delete.c - reading the keys of a DeleteObjects body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/s3_delete.h"

static sc_code parse(const char *xml, struct s3_delete_keys *k)
{
    return s3_delete_keys_parse(xml, strlen(xml), k);
}

static void keys_are_read_in_order_with_entities_decoded(void **state)
{
    const char *xml =
        "<?xml version=\"1.0\"?><Delete><Quiet>true</Quiet>"
        "<Object><Key>a.jpg</Key></Object>"
        "<Object><Key>dir/b &amp; c &lt;1&gt;.txt</Key><VersionId>x</VersionId></Object>"
        "<Object><Key>caf&#233; &#x1F600;</Key></Object></Delete>";
    struct s3_delete_keys k;
    assert_int_equal(parse(xml, &k), SC_OK);
    assert_int_equal(k.n, 3);
    assert_string_equal(k.keys[0], "a.jpg");
    assert_string_equal(k.keys[1], "dir/b & c <1>.txt");
    assert_string_equal(k.keys[2], "caf\xc3\xa9 \xf0\x9f\x98\x80");
    s3_delete_keys_free(&k);
}

static void body_without_keys_gives_none(void **state)
{
    struct s3_delete_keys k;
    assert_int_equal(parse("<Delete></Delete>", &k), SC_OK);
    assert_int_equal(k.n, 0);
    s3_delete_keys_free(&k);
}

static void malformed_bodies_are_refused(void **state)
{
    const char *bad[] = {
        "<Delete><Object><Key>unterminated",
        "<Delete><Object><Key>bad &bogus; entity</Key></Object></Delete>",
        "<Delete><Object><Key>nul &#0;</Key></Object></Delete>",
        "<Delete><Object><Key>surrogate &#xD800;</Key></Object></Delete>",
        "<Delete><Object><Key>nested <b>x</b></Key></Object></Delete>",
        "<Delete><Object><Key>mismatched</Object></Key></Delete>",
        "<Delete><Object><Key><![CDATA[unterminated</Key></Object></Delete>",
        "<Delete><Object><Key>a<!-- unterminated</Key></Object></Delete>",
        "<!DOCTYPE d [<!ENTITY e \"x\">]><Delete><Object><Key>&e;</Key></Object></Delete>",
        "<Delete><Object><Key>empty in key <i/></Key></Object></Delete>",
        "<Delete><Object attr=\"<\"><Key>a</Key></Object></Delete>",
        ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><Delete><Object><Key>caf\xe9</Key>"
         "</Object></Delete>"),
        "<?xml version='1.0' encoding='utf-16'?><Delete><Object><Key>a</Key></Object></Delete>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct s3_delete_keys k;
        assert_int_equal(parse(bad[i], &k), SC_EINVAL);
        assert_int_equal(k.n, 0);
        assert_null(k.keys);
    }
}

static void key_over_1024_bytes_is_refused(void **state)
{
    char *xml = malloc(2000);
    memcpy(xml, "<Key>", 5);
    memset(xml + 5, 'k', 1025);
    memcpy(xml + 1030, "</Key>", 7);
    struct s3_delete_keys k;
    assert_int_equal(parse(xml, &k), SC_EINVAL);
    free(xml);
}

static void more_than_1000_keys_are_refused(void **state)
{
    size_t cap = 1001 * 20 + 1;
    char *xml = malloc(cap);
    size_t n = 0;
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(xml + n, cap - n, "<Key>k%d</Key>", i);
    struct s3_delete_keys k;
    assert_int_equal(s3_delete_keys_parse(xml, n, &k), SC_ETOOBIG);
    assert_int_equal(k.n, 0);
    free(xml);
}

/* Each spelling names the same key an XML parser (the upstream's) reads. */
static void keys_are_read_as_xml_reads_them(void **state)
{
    static const struct {
        const char *xml, *key;
    } cases[] = {
        {"<Delete><Object><Key><![CDATA[cdata & <b>]]></Key></Object></Delete>", "cdata & <b>"},
        {"<Delete><Object><Key>spl<!-- a comment -->it</Key></Object></Delete>", "split"},
        {"<Delete><Object><Key>pi<?x y?>d</Key></Object></Delete>", "pid"},
        {"<Delete><Object><Key>a&amp;<![CDATA[&amp;]]>b</Key></Object></Delete>", "a&&amp;b"},
        {"<s3:Delete xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><s3:Object>"
         "<s3:Key>prefixed</s3:Key></s3:Object></s3:Delete>",
         "prefixed"},
        {"<Delete xmlns='http://s3.amazonaws.com/doc/2006-03-01/'><Object a=\"x>y\">"
         "<Key >attrs</Key ></Object></Delete>",
         "attrs"},
        {"<Delete><Object><Key>cr\r\nlf\rcr&#13;ref</Key></Object></Delete>", "cr\nlf\ncr\rref"},
        {"\xEF\xBB\xBF<Delete><Object><Key>bom</Key></Object></Delete>", "bom"},
        {"<?xml version=\"1.0\" encoding = 'UTF-8' ?><Delete><Object><Key>utf8</Key></Object>"
         "</Delete>",
         "utf8"},
        {"<Delete><!-- <Object><Key>not this</Key></Object> --><Object><Key>this</Key>"
         "</Object></Delete>",
         "this"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct s3_delete_keys k;
        assert_int_equal(parse(cases[i].xml, &k), SC_OK);
        assert_int_equal(k.n, 1);
        assert_string_equal(k.keys[0], cases[i].key);
        s3_delete_keys_free(&k);
    }
}

static void empty_key_element_names_nothing(void **state)
{
    struct s3_delete_keys k;
    assert_int_equal(parse("<Delete><Object><Key/></Object><Object><Key></Key></Object>"
                           "<Object><Key>x</Key></Object></Delete>",
                           &k),
                     SC_OK);
    assert_int_equal(k.n, 1);
    assert_string_equal(k.keys[0], "x");
    s3_delete_keys_free(&k);
}

/* UTF-16 spells every ASCII character with a NUL: its keys are not the bytes read. */
static void utf16_body_is_refused(void **state)
{
    static const char xml[] = "<\0K\0e\0y\0>\0a\0<\0/\0K\0e\0y\0>\0";
    struct s3_delete_keys k;
    assert_int_equal(s3_delete_keys_parse(xml, sizeof(xml) - 1, &k), SC_EINVAL);
    assert_int_equal(k.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_are_read_in_order_with_entities_decoded),
        cmocka_unit_test(body_without_keys_gives_none),
        cmocka_unit_test(malformed_bodies_are_refused),
        cmocka_unit_test(key_over_1024_bytes_is_refused),
        cmocka_unit_test(more_than_1000_keys_are_refused),
        cmocka_unit_test(keys_are_read_as_xml_reads_them),
        cmocka_unit_test(empty_key_element_names_nothing),
        cmocka_unit_test(utf16_body_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
