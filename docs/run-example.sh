#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs one guide example as a TAP test: it must exit 0 within its time,
# and its stdout must equal the .out file beside its source, when there
# is one (the guide shows that file as the program's output).
# An example that needs what this machine lacks (14_dist: erl, libei)
# exits 77, as automake's tests do, with the reason as the last line of
# its stderr: that is a skip, not a failure.
# usage: run-example.sh NAME PROGRAM [EXPECTED.out]
name=$1 prog=$2 want=$3
got=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$got" "$err"' EXIT
# The meson timeout is the backstop; this one names the example.
timeout 60 "$prog" > "$got" 2> "$err"
rc=$?
cat "$err" >&2
if [ "$rc" -eq 77 ]; then
	echo "1..0 # SKIP $name: $(tail -n 1 "$err")"
	exit 0
fi
echo "1..2"
if [ "$rc" -eq 0 ]; then
	echo "ok 1 - $name exits 0"
else
	echo "not ok 1 - $name exits 0 (status $rc)"
fi
if [ -z "$want" ]; then
	echo "ok 2 - $name # SKIP no expected output"
elif cmp -s "$want" "$got"; then
	echo "ok 2 - $name prints what the guide shows"
else
	echo "not ok 2 - $name prints what the guide shows"
	diff -u "$want" "$got" | sed 's/^/# /'
fi
[ "$rc" -eq 0 ] && cmp -s "${want:-$got}" "$got"
