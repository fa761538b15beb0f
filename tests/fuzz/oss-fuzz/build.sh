#!/bin/bash -eu
# OSS-Fuzz's build of sse_sansio (issue 36, item 18): run by OSS-Fuzz's base-builder-python
# image (see Dockerfile), from the checkout in $SRC/sse_sansio; writes into $OUT.
#
# The compiled core is what is fuzzed, so it is built by OSS-Fuzz's clang with its
# $CFLAGS (the sanitizer of the build and -fsanitize=fuzzer-no-link: every branch of
# _core.c counted for libFuzzer), and a failed compile is an error, not the pure
# fallback an ordinary install takes.  distutils adds $CFLAGS to the link line too.
export SSE_SANSIO_REQUIRE_EXTENSIONS=1
export LDSHARED="$CC -shared"
pip3 install .

# The fuzzer: compile_python_fuzzer packs it with PyInstaller (the installed package, its
# extension included) and writes the wrapper that preloads atheris's sanitizer runtime.
compile_python_fuzzer tests/fuzz/oss-fuzz/connection_fuzzer.py

# Its seeds: every conformance vector under four option/chunking headers.
python3 tests/fuzz/oss-fuzz/connection_fuzzer.py --seeds "$WORK/seeds"
zip -jq "$OUT/connection_fuzzer_seed_corpus.zip" "$WORK"/seeds/*
