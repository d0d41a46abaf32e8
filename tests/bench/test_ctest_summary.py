#!/usr/bin/env python3
"""bench/gpu/ctest_summary.py on JUnit files shaped as ctest 3.25 writes them: a run where every test
skipped (no GPU) must fail, as must one where a test failed or nothing was found; one where a test
passed and others skipped must succeed."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu"))
import ctest_summary  # noqa: E402

SKIPPED = """<testcase name="cuda:{0}" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
<system-out>CUDA runtime 13000, driver supports 0
skipped: needs 1 CUDA device(s), found 0
</system-out></testcase>"""
PASSED = '<testcase name="cuda:{0}" status="run"><system-out>ok</system-out></testcase>'
FAILED = '<testcase name="cuda:{0}" status="fail"><failure message="Failed"/></testcase>'


def junit(*cases):
    f = tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False)
    f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="(empty)" tests="%d">\n%s\n</testsuite>\n'
            % (len(cases), "\n".join(cases)))
    f.close()
    return f.name


class CtestSummaryTest(unittest.TestCase):
    def run_on(self, *cases):
        path = junit(*cases)
        try:
            return ctest_summary.main([path, "--what", "CUDA tests"])
        finally:
            os.unlink(path)

    def test_every_test_skipped_fails(self):
        self.assertEqual(self.run_on(SKIPPED.format("a"), SKIPPED.format("b")), 1)

    def test_no_test_fails(self):
        self.assertEqual(self.run_on(), 1)

    def test_a_failure_fails(self):
        self.assertEqual(self.run_on(PASSED.format("a"), FAILED.format("b")), 1)

    def test_one_passed_and_the_rest_skipped_succeeds(self):
        self.assertEqual(self.run_on(PASSED.format("a"), SKIPPED.format("b")), 0)

    def test_the_report_names_failures_and_why_nothing_ran(self):
        result = ctest_summary.summarize(junit(FAILED.format("conv"), SKIPPED.format("graph")))
        lines, ok = ctest_summary.report(result, "CUDA tests")
        self.assertFalse(ok)
        self.assertEqual(lines[0], "CUDA tests: 0 passed, 1 failed, 1 skipped, of 2")
        self.assertIn("  FAILED: cuda:conv", lines)
        lines, ok = ctest_summary.report(ctest_summary.summarize(junit(SKIPPED.format("x"))), "CUDA tests")
        self.assertFalse(ok)
        self.assertIn("none of the CUDA tests ran (skipped: needs 1 CUDA device(s), found 0)", lines[-1])

    def test_an_unreadable_file_fails(self):
        self.assertEqual(ctest_summary.main(["/nonexistent/junit.xml"]), 1)


if __name__ == "__main__":
    unittest.main()
