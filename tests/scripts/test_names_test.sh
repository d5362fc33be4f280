#!/usr/bin/env bash
# CTest registers every doctest case by its name (doctest_discover_tests), through CMake lists: a
# ';' in a name splits it, and an unbalanced '[' or ']' swallows the names after it, so those
# cases would silently never run (or the whole file's registration fails). Fails on any such name.
set -euo pipefail
root="${1:?usage: test_names_test.sh ROOT}"
bad=$(grep -rhoE 'TEST_CASE\("([^"\\]|\\.)*"' "$root/tests" --include='*.cpp' |
  sed -E 's/^TEST_CASE\("//; s/"$//' |
  awk '{ o = gsub(/\[/, "["); c = gsub(/\]/, "]"); if (index($0, ";") || o != c) print }')
if [ -n "$bad" ]; then
  echo "test names CTest cannot register (';' or unbalanced brackets):"
  echo "$bad"
  exit 1
fi
echo "test names: every one registers"
