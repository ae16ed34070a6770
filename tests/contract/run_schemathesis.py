#!/usr/bin/env python3
"""Runs schemathesis (from the test virtualenv) against a mem-host server.

The same as the `schemathesis` command, with one guard: CPython 3.11 before
3.11.8 can raise `SystemError: AST constructor recursion depth mismatch`
when hypothesis describes a lambda deep in a call stack (gh-106905). The
description is only a label for reports, so a failure to compute it falls
back to a generic one instead of aborting the run.
"""

import sys

import hypothesis.internal.lambda_sources as lambda_sources

_describe = lambda_sources.lambda_description


def _safe_description(f):
    try:
        return _describe(f)
    except SystemError:
        return "lambda: <source unavailable>"


lambda_sources.lambda_description = _safe_description

from schemathesis.cli import schemathesis  # noqa: E402

if __name__ == "__main__":
    sys.argv[0] = "schemathesis"
    sys.exit(schemathesis())
