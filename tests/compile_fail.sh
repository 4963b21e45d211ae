#!/usr/bin/env bash
# The header's traps are compile errors: each snippet below must fail to
# compile, and its control (the same program, written right) must compile,
# so a broken compiler invocation cannot pass as a refusal.
#   compile_fail.sh CC CXX INCLUDE_DIR
set -uo pipefail
cc=$1 cxx=$2 inc=$3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0 failed=0
check() { # lang what good-body bad-body
	local lang=$1 what=$2 good=$3 badb=$4 ext=c comp=$cc std=-std=c11
	[ "$lang" = c++ ] && { ext=cc; comp=$cxx; std=-std=c++17; }
	for kind in good bad; do
		local body=$good
		[ $kind = bad ] && body=$badb
		printf '#include <ura.h>\n%s\n' "$body" >"$t/$kind.$ext"
		if $comp $std -Wall -Werror -fsyntax-only -I"$inc" "$t/$kind.$ext" 2>"$t/$kind.err"; then
			eval "${kind}_rc=0"
		else
			eval "${kind}_rc=1"
		fi
	done
	n=$((n + 1))
	if [ "$good_rc" -eq 0 ] && [ "$bad_rc" -ne 0 ]; then
		echo "ok $n - $lang: $what"
	else
		echo "not ok $n - $lang: $what (control compiles: $((1 - good_rc)), trap refused: $bad_rc)"
		sed 's/^/# /' "$t/good.err" | head -5
		failed=1
	fi
}
main_start='int f(ura_system *sys, ura_ref r);
int f(ura_system *sys, ura_ref r) {'
check c ".node = 1 is not a node" \
	"$main_start ura_spawn_opts o = { .node = URA_NODE(1) }; (void)sys; (void)r; return o.node.k1_; }" \
	"$main_start ura_spawn_opts o = { .node = 1 }; (void)sys; (void)r; return o.node.k1_; }"
check c "an atom of 11 characters" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"abcdefghij\"); }" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"abcdefghijk\"); }"
check c "ura_send with more than URA_MAX_VALUES values" \
	"$main_start return ura_send(sys, r, URA_ATOM(\"x\"), 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16); }" \
	"$main_start return ura_send(sys, r, URA_ATOM(\"x\"), 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17); }"
check c++ "an atom with a bad character" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"take_1\"); }" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"take-1\"); }"
check c++ "an atom of 11 characters" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"abcdefghij\"); }" \
	"$main_start (void)sys; (void)r; return (int)URA_ATOM(\"abcdefghijk\"); }"
check c++ "o.node = 1 is not a node" \
	"$main_start ura_spawn_opts o{}; o.node = URA_NODE(1); (void)sys; (void)r; return o.node.k1_; }" \
	"$main_start ura_spawn_opts o{}; o.node = 1; (void)sys; (void)r; return o.node.k1_; }"
check c++ "ura_send with more than URA_MAX_VALUES values" \
	"$main_start return ura_send(sys, r, URA_ATOM(\"x\"), 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16); }" \
	"$main_start return ura_send(sys, r, URA_ATOM(\"x\"), 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17); }"
echo "1..$n"
exit $failed
