#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# probes: the USDT probes (lib/util/probe.h) are in the library, each as
# a .note.stapsdt entry of provider "ura" (readelf -n), and a build
# without them has none. TAP.
#   probes.sh LIBRARY ENABLED(0|1)
set -uo pipefail
lib=$1 enabled=$2
want=(spawn stop send turn_start turn_end steal sleep wake)
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); bad=1; echo "not ok $n - $*"; }
if ! command -v readelf >/dev/null; then
	echo "ok 1 # SKIP readelf not installed (binutils)"; echo "1..1"; exit 0
fi
notes=$(readelf -n "$lib" 2>&1) || { echo "not ok 1 - readelf -n $lib"; echo "1..1"; exit 1; }
if [ "$enabled" != 1 ]; then
	if grep -q 'stapsdt' <<<"$notes"; then notok "built without -Dusdt: no stapsdt notes"
	else ok "built without -Dusdt (or <sys/sdt.h>): no probes, none expected"; fi
	echo "# SKIP the probe list: configure with -Dusdt=enabled (systemtap-sdt-dev)"
	echo "1..$n"; exit $bad
fi
# Each note: "stapsdt ... NT_STAPSDT", then Provider:, Name:, Location:...
names=$(awk '/Provider: ura/ { p = 1; next } p && /Name:/ { print $2; p = 0 }' <<<"$notes" | sort -u)
for p in "${want[@]}"; do
	if grep -qx "$p" <<<"$names"; then ok "probe ura:$p is in $(basename "$lib")"
	else notok "probe ura:$p is in $(basename "$lib")"; fi
done
extra=$(comm -13 <(printf '%s\n' "${want[@]}" | sort) <(printf '%s\n' "$names"))
if [ -z "$extra" ]; then ok "no probe the README does not document"
else notok "undocumented probes: $extra"; fi
# The semaphore-less form: a probe costs a nop, nothing to enable first.
sem=$(grep -A4 'Provider: ura' <<<"$notes" || true)
if grep -q 'Semaphore: 0x0*$' <<<"$sem"; then
	ok "probes have no semaphore (always armed, a nop each)"
else notok "probes have no semaphore"; fi
echo "1..$n"
exit $bad
