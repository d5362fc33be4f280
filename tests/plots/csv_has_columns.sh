#!/bin/sh
# Usage: csv_has_columns.sh FILE COLUMN...
# Exits non-zero, naming the first missing column, unless FILE's header row holds every COLUMN.
file=$1
shift
header=$(head -n 1 "$file") || exit 1
for column in "$@"; do
  if ! printf '%s\n' "$header" | tr ',' '\n' | grep -qx "$column"; then
    echo "$file: no column '$column' in header: $header" >&2
    exit 1
  fi
done
