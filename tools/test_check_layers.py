#!/usr/bin/env python3
"""test_check_layers.py - check-layers.py finds each fault it is for, in a tree made for it.

Run by `make layers` before the check of the real tree, so a checker that stopped seeing a
fault fails the build instead of passing everything.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = ["common=", "proto=common", "upstream=proto,common", "gateway=upstream,proto,common"]
CLEAN = {
    "common/a.h": "int common_a(void);\n",
    "common/a.c": '#include "a.h"\nint common_a(void)\n{\n    return 1;\n}\n',
    "proto/p.h": '#include "../common/a.h"\nint proto_p(void);\n',
    "proto/p.c": '#include "p.h"\nint proto_p(void)\n{\n    return common_a();\n}\n',
    "upstream/u.h": "int up_u(void);\n",
    "upstream/u.c": '#include <curl/curl.h>\n#include "u.h"\nint up_u(void)\n{\n'
    "    return curl_easy_init() != 0;\n}\n",
    "gateway/g.h": "int gw_g(void);\n",
    "gateway/g.c": '#include <microhttpd.h>\n#include "../proto/p.h"\n#include "g.h"\n'
    "int gw_g(void)\n{\n    return MHD_YES + proto_p();\n}\n",
    "gateway/admin/x.c": '#include "../g.h"\nint gw_x(void);\nint gw_x(void)\n{\n'
    "    return gw_g();\n}\n",
}


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        p = subprocess.run(
            [sys.executable, os.path.join(HERE, "check-layers.py"), "--root", root] + LAYERS,
            capture_output=True,
            text=True,
        )
        return p.returncode, p.stdout


class CheckLayers(unittest.TestCase):
    def faults(self, **changes):
        files = dict(CLEAN)
        files.update({k.replace("__", "/").replace("_DOT_", "."): v for k, v in changes.items()})
        return run(files)

    def test_clean_tree_passes(self):
        rc, out = run(CLEAN)
        self.assertEqual(rc, 0, out)

    def test_include_from_a_layer_above_fails(self):
        rc, out = self.faults(proto__p_DOT_h='#include "../gateway/g.h"\nint proto_p(void);\n')
        self.assertEqual(rc, 1)
        self.assertIn("proto/p.h: includes gateway/g.h (gateway/), which proto/ may not use", out)

    def test_libmicrohttpd_outside_gateway_fails(self):
        rc, out = self.faults(
            proto__p_DOT_c='#include "p.h"\nint proto_p(void)\n{\n    return MHD_NO;\n}\n'
        )
        self.assertEqual(rc, 1)
        self.assertIn("proto/p.c: MHD_NO: libmicrohttpd is used only in gateway/", out)

    def test_libcurl_outside_upstream_fails(self):
        rc, out = self.faults(gateway__g_DOT_c=CLEAN["gateway/g.c"] + "void *h(void)\n{\n"
                              "    return curl_easy_init();\n}\n")
        self.assertEqual(rc, 1)
        self.assertIn("gateway/g.c: curl_easy_init: libcurl is used only in upstream/", out)

    def test_declaration_in_another_folder_fails(self):
        rc, out = self.faults(gateway__g_DOT_h="int gw_g(void);\nint gw_x(void);\n")
        self.assertEqual(rc, 1)
        self.assertIn("gateway/g.h: declares gw_x(), defined in gateway/admin/x.c", out)

    def test_files_calling_each_other_fail(self):
        rc, out = self.faults(
            gateway__g_DOT_c=CLEAN["gateway/g.c"] + "int gw_y(void)\n{\n    return gw_x();\n}\n"
        )
        self.assertEqual(rc, 1)
        self.assertIn("files that call each other in a circle: gateway/admin/x.c gateway/g.c", out)


if __name__ == "__main__":
    unittest.main()
