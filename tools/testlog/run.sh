#!/bin/sh
# go test, its log as -v prints it, and what failed repeated at its end
# (tools/testlog): tools/testlog/run.sh [go test flags and packages].
# With TESTLOG_SAVE=F the digest is also written to F (empty when nothing
# failed); with TESTLOG_QUIET=1 it prints as go test without -v does.
# The exit code is go test's.
set -u
go=${GO:-go}
tl=$(mktemp -d "${TMPDIR:-/tmp}/sqlhist-testlog.XXXXXX") || exit 1
trap 'rm -rf "$tl"' EXIT
"$go" build -o "$tl/testlog" ./tools/testlog || exit 1
echo "go test $*"
{ "$go" test -json "$@"; echo $? > "$tl/rc"; } | "$tl/testlog" ${TESTLOG_QUIET:+-quiet} ${TESTLOG_SAVE:+-save "$TESTLOG_SAVE"}
exit "$(cat "$tl/rc")"
