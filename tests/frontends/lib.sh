# SPDX-License-Identifier: MIT
# The front-end test scripts' shared helpers: the counts, a line per check, and the checks
# of a command's exit status and output. Sourced by them (bash), before they cd anywhere.
# A script that needs another form of one (check's output file, say) defines it after.

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }

# expect CODE DESCRIPTION -- COMMAND...: runs it with stdout in out, stderr in err.
expect() {
	local want=$1 what=$2 rc
	shift 3
	"$@" >out 2>err
	rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$what (exit $rc)"; else
		bad "$what: exit $rc, wanted $want"; sed 's/^/     out: /' out; sed 's/^/     err: /' err
	fi
}
# has FILE PATTERN DESCRIPTION: grep -E in the last command's out or err.
has() {
	if grep -Eq -- "$2" "$1"; then ok "$3"; else bad "$3: no /$2/ in $1"; sed "s/^/     $1: /" "$1"; fi
}
# hasnt FILE PATTERN DESCRIPTION: no line of FILE matches.
hasnt() {
	if ! grep -Eq -- "$2" "$1"; then ok "$3"; else bad "$3: /$2/ in $1"; sed "s/^/     $1: /" "$1"; fi
}
json() { # json DESCRIPTION PYTHON-EXPRESSION-ON-d: the last out must be one JSON document
	if "$PY" -c "import json,sys; d=json.load(open('out')); sys.exit(0 if ($2) else 1)"; then
		ok "$1"; else bad "$1"; sed 's/^/     out: /' out; fi
}
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@" >cmd.out 2>&1; then ok "$what"; else bad "$what"; sed 's/^/     /' cmd.out; fi
}

# workdir NAME: T, a new folder under $TMPDIR, becomes the working folder; at exit the
# processes whose pids were added to pids are killed and T is removed.
workdir() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	pids=()
	trap workdir_cleanup EXIT
	cd "$T" || exit 1
}
workdir_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
