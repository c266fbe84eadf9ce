#!/bin/sh
# A test program that several meson tests run, each with its own --gtest_filter, holds no test
# that none of the filters names (it would run nowhere): lists those and fails if there are any.
#   filters_cover_all.sh PROGRAM FILTER[:FILTER...]
set -u
out=$("$1" --gtest_list_tests "--gtest_filter=-$2") || exit 1
if printf '%s\n' "$out" | grep -q '^  '; then
  echo "in no filter:"
  echo "$out"
  exit 1
fi
