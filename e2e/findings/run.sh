#!/bin/sh
# Usage: e2e/findings/run.sh TEST [kernels...]   (from the repository root)
# Runs e2e/findings/TEST.sh with lib.sh on each kernel via tools/kexec-script
# and saves the output in e2e/findings/out/TEST-<kernel>.txt.
set -e
t=$1; shift
[ $# -gt 0 ] || set -- 6.1 6.12 7.2
mkdir -p e2e/findings/out
for k in "$@"; do
	go run ./tools/kexec-script -kernel "$k" "e2e/findings/$t.sh" e2e/findings/lib.sh \
		> "e2e/findings/out/$t-$k.txt" 2>&1 || echo "$t on $k: exit $?"
done
