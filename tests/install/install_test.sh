#!/bin/sh
# install_test.sh - `cmake --install` and package discovery, end to end, run by ctest.
#
#   install_test.sh SRCDIR TESTDIR CC [CMAKE CONFIGURE ARGS...]
#
# 1. Configures SRCDIR afresh in a temporary directory under TESTDIR (no tests, no
#    sanitizer, the configure arguments given: backends, build type), builds it and
#    installs it with `cmake --install BUILD --prefix PREFIX`.
# 2. Checks the installed tree: libdelog.so (with a SONAME) and libdelog.a, <delog.h>,
#    the delog tool (runs --version) and delog-bench (`delog bench --help` runs it), the
#    CMake package and version file, delog.pc,
#    one man page per command of `delog --help`, API.md and CHANGELOG.md.  The installed
#    delog links only what the log needs: ldd lists none of librocksdb, libsqlite3,
#    liblmdb, libstdc++ (the peers comparison is delog-bench-peers, a program of its
#    own; when it was built and installed, `delog bench --peers --help` runs it).
# 3. Checks the dynamic symbols of libdelog.so: delog_open is there, no jrnl_* or iol_*
#    symbol is, and the exported set is exactly the functions declared in the installed
#    delog.h.
# 4. Builds the examples (docs/examples/hello.c, and kv.c, evloop.c and standby.c when
#    they exist) against the installed package with find_package (tests/install/consumer/,
#    shared and static) and with `cc $(pkg-config --cflags --libs delog)` (and --static),
#    and runs each once on a log in the temporary directory (kv: its self-test, a put and
#    a get; standby: follows a primary made by the kv of the same build, then a get).  A
#    find_package for a version the package does not provide must fail.  The installed
#    examples directory (share/doc/delog/examples, with its CMakeLists.txt) must build as
#    a project of its own against the installed package.
# 5. libdelog-crashtest: its .so (SONAME) and .a, <delog_crashtest.h> and
#    delog-crashtest.pc are installed; the .so exports exactly the functions of delog.h
#    and delog_crashtest.h; docs/examples/crashtest_kv.c builds against it with
#    find_package (delog::delog_crashtest, shared and static), with pkg-config and in the
#    installed examples project, and each build finds no failure in a short campaign on
#    the correct kv, finds the --broken one, and its handle fails again when replayed.
# Exit 0 pass, 1 fail, 77 skip (a tool missing), with the reason on stderr.
set -u

SRC=${1:?source dir}
DIR=${2:?test directory}
CC=${3:?C compiler}
shift 3
TMP=$(mktemp -d "${DIR}/install_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
. "$(dirname "$0")/../lib.sh"

# run DESCRIPTION CMD... : run CMD with its output in $TMP/log; on failure show it.
run() {
	what=$1
	shift
	if ! "$@" >"$TMP/log" 2>&1; then
		fail "$what: $*"
		sed 's/^/  | /' "$TMP/log" | tail -40 >&2
		return 1
	fi
	echo "ok: $what"
	return 0
}

for t in cmake pkg-config nm readelf ldd; do
	command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done
# Leave the caller's sanitizer and compiler flags out of the fresh build.
unset CFLAGS LDFLAGS CPPFLAGS PKG_CONFIG_PATH
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

# ---- 1. configure, build, install ----------------------------------------------------
run "configure" cmake -S "$SRC" -B "$TMP/build" -DCMAKE_C_COMPILER="$CC" \
	-DDELOG_BUILD_TESTS=OFF -DDELOG_SANITIZE= "$@" || exit 1
run "build" cmake --build "$TMP/build" || exit 1
run "install" cmake --install "$TMP/build" --prefix "$PREFIX" || exit 1
cp "$TMP/log" "$TMP/install.log"

# ---- 2. the installed tree -----------------------------------------------------------
SO=$(find "$PREFIX" -name libdelog.so -type l | head -n 1)
if [ -z "$SO" ]; then
	fail "no libdelog.so symlink installed"
	sed 's/^/  | /' "$TMP/install.log" >&2
	exit 1
fi
LIBDIR=$(dirname "$SO")
for f in "$LIBDIR/libdelog.a" "$PREFIX/include/delog.h" "$PREFIX/bin/delog" \
	"$PREFIX/bin/delog-bench" \
	"$LIBDIR/cmake/delog/delogConfig.cmake" "$LIBDIR/cmake/delog/delogConfigVersion.cmake" \
	"$LIBDIR/cmake/delog/delogTargets.cmake" "$LIBDIR/pkgconfig/delog.pc" \
	"$PREFIX/share/man/man1/delog.1" "$PREFIX/share/doc/delog/API.md" \
	"$PREFIX/share/doc/delog/CHANGELOG.md" "$PREFIX/share/doc/delog/FORMAT.md"; do
	[ -e "$f" ] || fail "not installed: ${f#"$PREFIX"/}"
done
# Every relative link of the installed Markdown pages leads to an installed file.
DOCDIR=$PREFIX/share/doc/delog
for md in "$DOCDIR"/*.md; do
	for target in $(grep -o '](\([^)#]*\)[)#]' "$md" | sed 's/^](//; s/[)#]$//' |
		grep -v '^[a-z]*://'); do
		[ -e "$DOCDIR/$target" ] || fail "${md#"$PREFIX"/} links to $target, not installed"
	done
done
SONAME=$(readelf -d "$SO" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
case $SONAME in
libdelog.so.[0-9]*) ;;
*) fail "libdelog.so has SONAME '$SONAME', expected libdelog.so.N" ;;
esac
[ -e "$LIBDIR/$SONAME" ] || fail "the SONAME link $SONAME is not installed"
VERSION=$("$PREFIX/bin/delog" --version) || fail "installed delog --version failed"
echo "installed: $VERSION, $SONAME in ${LIBDIR#"$PREFIX"/}"
# The tool links only what the log needs (ldd: the libraries it loads, directly or not).
if ldd "$PREFIX/bin/delog" >"$TMP/ldd" 2>&1; then
	if grep -E 'lib(rocksdb|sqlite3|lmdb|stdc\+\+)\.' "$TMP/ldd" >"$TMP/ldd.bad"; then
		fail "the installed delog links what the log does not need: $(awk '{ print $1 }' "$TMP/ldd.bad" | tr '\n' ' ')"
	fi
	echo "installed delog loads: $(awk '{ print $1 }' "$TMP/ldd" | tr '\n' ' ')"
else
	fail "ldd of the installed delog failed: $(cat "$TMP/ldd")"
fi
# The benchmarks are delog-bench, which `delog bench` runs from beside it.
"$PREFIX/bin/delog" bench --help >"$TMP/log" 2>&1 ||
	fail "installed delog bench --help (runs delog-bench) failed: $(tail -3 "$TMP/log")"
grep -q "workload" "$TMP/log" || fail "installed delog bench --help printed no workloads"
if [ -e "$PREFIX/bin/delog-bench-peers" ]; then
	"$PREFIX/bin/delog" bench --peers --help >"$TMP/log" 2>&1 ||
		fail "installed delog bench --peers --help (runs delog-bench-peers) failed: $(tail -3 "$TMP/log")"
	[ -e "$PREFIX/share/man/man1/delog-bench-peers.1" ] ||
		fail "delog-bench-peers is installed without its man page"
fi
# Every command the tool lists has its man page.
CMDS=$("$PREFIX/bin/delog" --help | awk '/^commands:/ { c = 1; next } /^$/ { c = 0 } c { print $1 }')
[ -n "$CMDS" ] || fail "no commands in installed delog --help"
for c in $CMDS; do
	[ -e "$PREFIX/share/man/man1/delog-$c.1" ] || fail "no man page installed for delog $c"
done

# ---- 3. exported symbols -------------------------------------------------------------
nm -D --defined-only "$SO" | awk 'NF == 3 && $2 ~ /^[TDBRVWiu]$/ { print $3 }' |
	sed 's/@.*//' | sort -u >"$TMP/exported"
grep -qx delog_open "$TMP/exported" || fail "libdelog.so does not export delog_open"
if grep -E '^(jrnl|iol?)_' "$TMP/exported" >"$TMP/leaked"; then
	fail "libdelog.so exports internal symbols: $(tr '\n' ' ' <"$TMP/leaked")"
fi
# The functions the installed header declares: a line in column 0 naming delog_x(.
grep -E '^[A-Za-z_].*[ *]delog_[A-Za-z0-9_]+ *\(' "$PREFIX/include/delog.h" | grep -v '^typedef' |
	sed -E 's/^[^(]*[ *](delog_[A-Za-z0-9_]+) *\(.*/\1/' | sort -u >"$TMP/declared"
if ! cmp -s "$TMP/declared" "$TMP/exported"; then
	fail "exports of libdelog.so differ from the functions of delog.h (< header only, > library only):"
	diff "$TMP/declared" "$TMP/exported" | grep '^[<>]' | sed 's/^/  /' >&2
fi

# ---- 4. build and run the examples against the installed package --------------------
EXAMPLES=$SRC/docs/examples/hello.c
[ -f "$SRC/docs/examples/kv.c" ] && EXAMPLES="$EXAMPLES;$SRC/docs/examples/kv.c"
[ -f "$SRC/docs/examples/evloop.c" ] && EXAMPLES="$EXAMPLES;$SRC/docs/examples/evloop.c"
# standby after kv: it runs against a primary made by the kv built beside it.
[ -f "$SRC/docs/examples/standby.c" ] && EXAMPLES="$EXAMPLES;$SRC/docs/examples/standby.c"

# run_example NAME BINARY : run one built example once, on a fresh log in $TMP.
run_example() {
	name=$1
	bin=$2
	where=$TMP/run-$(basename "$(dirname "$bin")")-$(basename "$bin")
	rm -rf "$where"
	case $name in
	hello) run "run $bin" "$bin" "$where.log" ;;
	kv) run_kv "$bin" "$where" ;;
	evloop) run "run $bin" "$bin" "$where.log" 2000 64 ;;
	standby) run_standby "$bin" "$where" ;;
	crashtest_kv) run_crashtest_kv "$bin" "$where" ;;
	*) fail "no way to run example $name" ;;
	esac
}

# kv (docs/examples/kv.c, the example key-value store; its usage is in its header):
# `kv DBDIR` is its self-test, then one durable put, read back by a second process.
run_kv() {
	run "run $1 (self-test)" "$1" "$2" || return
	run "run $1 put" "$1" "$2" put install-test-key install-test-value || return
	run "run $1 get" "$1" "$2" get install-test-key || return
	[ "$(cat "$TMP/log")" = install-test-value ] ||
		fail "$1 get printed '$(cat "$TMP/log")', expected install-test-value"
}

# standby (docs/examples/standby.c, a kv's standby): the kv of the same build (kv beside
# standby, kv_static beside standby_static) makes a primary with one put; `standby P S
# --once` copies it, and a second process reads the key back from the standby's log.
run_standby() {
	kv=$(dirname "$1")/$(basename "$1" | sed 's/^standby/kv/')
	if [ ! -x "$kv" ]; then
		fail "no $kv beside $1 to make its primary"
		return
	fi
	rm -rf "$2.primary"
	run "run $kv put (the primary of $1)" "$kv" "$2.primary" put install-test-key \
		install-test-value || return
	run "run $1 --once" "$1" "$2.primary" "$2" --once || return
	run "run $1 get" "$1" "$2.primary" "$2" get install-test-key || return
	[ "$(cat "$TMP/log")" = install-test-value ] ||
		fail "$1 get printed '$(cat "$TMP/log")', expected install-test-value"
}

# crashtest_kv (docs/examples/crashtest_kv.c, libdelog-crashtest on kv.c's recovery): a
# short campaign on the correct kv finds nothing; --broken is found, and its handle
# fails again when replayed.
run_crashtest_kv() {
	mkdir -p "$2"
	run "run $1 (correct kv)" "$1" --states 3000 --dir "$2" || return
	if "$1" --broken --states 3000 --dir "$2" >"$TMP/log" 2>&1; then
		fail "$1 --broken found no failure"
		return
	fi
	h=$(sed -n 's/^handle: //p' "$TMP/log")
	grep -q '^FAILED' "$TMP/log" && [ -f "$h" ] ||
		fail "$1 --broken: no FAILED line or no handle file: $(tail -3 "$TMP/log")"
	if "$1" --replay "$h" --times 3 >"$TMP/log" 2>&1 ||
		! grep -q 'failed 3, passed 0' "$TMP/log"; then
		fail "$1 --replay $h: $(cat "$TMP/log")"
	else
		echo "ok: $1 finds the broken kv and replays it"
	fi
}

CT_EXAMPLES=
[ -f "$SRC/docs/examples/crashtest_kv.c" ] && CT_EXAMPLES=$SRC/docs/examples/crashtest_kv.c

# find_package(delog) from a project outside the tree.
run "consumer configure (find_package)" cmake -S "$SRC/tests/install/consumer" \
	-B "$TMP/consumer" -DCMAKE_C_COMPILER="$CC" -DCMAKE_PREFIX_PATH="$PREFIX" \
	-DDELOG_VERSION_WANTED="${VERSION#delog }" "-DEXAMPLES=$EXAMPLES" \
	"-DCT_EXAMPLES=$CT_EXAMPLES" &&
	run "consumer build (find_package)" cmake --build "$TMP/consumer" &&
	for src in $CT_EXAMPLES; do
		name=$(basename "$src" .c)
		run_example "$name" "$TMP/consumer/$name"
		run_example "$name" "$TMP/consumer/${name}_static"
		readelf -d "$TMP/consumer/$name" | grep -q 'libdelog-crashtest\.so' ||
			fail "find_package: $name is not linked with libdelog-crashtest.so"
	done &&
	for src in $(echo "$EXAMPLES" | tr ';' ' '); do
		name=$(basename "$src" .c)
		run_example "$name" "$TMP/consumer/$name"
		run_example "$name" "$TMP/consumer/${name}_static"
		readelf -d "$TMP/consumer/$name" | grep -qF "[$SONAME]" ||
			fail "find_package: $name is not linked with $SONAME"
		if readelf -d "$TMP/consumer/${name}_static" | grep -q 'libdelog\.so'; then
			fail "find_package: ${name}_static is linked with libdelog.so"
		fi
	done
# A version the package does not provide is refused.
if cmake -S "$SRC/tests/install/consumer" -B "$TMP/consumer-99" -DCMAKE_C_COMPILER="$CC" \
	-DCMAKE_PREFIX_PATH="$PREFIX" -DDELOG_VERSION_WANTED=99.0 >"$TMP/log" 2>&1; then
	fail "find_package(delog 99.0) succeeded against delog ${VERSION#delog }"
fi

# pkg-config, shared and static.
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
pkg-config --exists delog || fail "pkg-config does not find delog in $PKG_CONFIG_PATH"
[ "$(pkg-config --modversion delog)" = "${VERSION#delog }" ] ||
	fail "pkg-config --modversion delog: $(pkg-config --modversion delog), expected ${VERSION#delog }"
STATIC_LIBS=$(pkg-config --static --libs delog)
for l in -lisal -pthread; do
	case " $STATIC_LIBS " in *" $l "*) ;; *) fail "pkg-config --static --libs delog lacks $l" ;; esac
done
mkdir -p "$TMP/pc"
for src in $(echo "$EXAMPLES" | tr ';' ' '); do
	name=$(basename "$src" .c)
	# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
	run "pkg-config build of $name" "$CC" -o "$TMP/pc/$name" "$src" \
		$(pkg-config --cflags --libs delog) -pthread \
		-Wl,-rpath,"$(pkg-config --variable=libdir delog)" &&
		run_example "$name" "$TMP/pc/$name"
	# shellcheck disable=SC2046
	run "pkg-config --static build of $name" "$CC" -o "$TMP/pc/${name}_static" "$src" \
		$(pkg-config --cflags delog) \
		$(echo "$STATIC_LIBS" | sed 's/-ldelog/-Wl,-Bstatic -ldelog -Wl,-Bdynamic/') -pthread &&
		run_example "$name" "$TMP/pc/${name}_static"
done

# libdelog-crashtest: installed, walled, and usable through pkg-config.
CTSO=$LIBDIR/libdelog-crashtest.so
for f in "$CTSO" "$LIBDIR/libdelog-crashtest.a" "$PREFIX/include/delog_crashtest.h" \
	"$LIBDIR/pkgconfig/delog-crashtest.pc"; do
	[ -e "$f" ] || fail "not installed: ${f#"$PREFIX"/}"
done
if [ -e "$CTSO" ]; then
	nm -D --defined-only "$CTSO" | awk 'NF == 3 && $2 ~ /^[TDBRVWiu]$/ { print $3 }' |
		sed 's/@.*//' | sort -u >"$TMP/ct_exported"
	cat "$PREFIX/include/delog.h" "$PREFIX/include/delog_crashtest.h" |
		grep -E '^[A-Za-z_].*[ *]delog_[A-Za-z0-9_]+ *\(' | grep -v '^typedef' |
		sed -E 's/^[^(]*[ *](delog_[A-Za-z0-9_]+) *\(.*/\1/' | sort -u >"$TMP/ct_declared"
	if ! cmp -s "$TMP/ct_declared" "$TMP/ct_exported"; then
		fail "exports of libdelog-crashtest.so differ from delog.h + delog_crashtest.h:"
		diff "$TMP/ct_declared" "$TMP/ct_exported" | grep '^[<>]' | sed 's/^/  /' >&2
	fi
fi
for src in $CT_EXAMPLES; do
	name=$(basename "$src" .c)
	# shellcheck disable=SC2046
	run "pkg-config build of $name" "$CC" -o "$TMP/pc/$name" "$src" \
		$(pkg-config --cflags --libs delog-crashtest) -pthread \
		-Wl,-rpath,"$(pkg-config --variable=libdir delog-crashtest)" &&
		run_example "$name" "$TMP/pc/$name"
done

# The installed examples directory is a project of its own (docs/examples/CMakeLists.txt,
# in its find_package mode).
EXDIR=$PREFIX/share/doc/delog/examples
if [ -f "$EXDIR/CMakeLists.txt" ]; then
	run "installed examples configure" cmake -S "$EXDIR" -B "$TMP/examples" \
		-DCMAKE_C_COMPILER="$CC" -DCMAKE_PREFIX_PATH="$PREFIX" &&
		run "installed examples build" cmake --build "$TMP/examples" &&
		for src in $(echo "$EXAMPLES" | tr ';' ' ') $CT_EXAMPLES; do
			name=$(basename "$src" .c)
			if [ -x "$TMP/examples/$name" ]; then
				run_example "$name" "$TMP/examples/$name"
			else
				fail "the installed examples project did not build $name"
			fi
		done
fi

# libdelog-raft's daemon, when C-Raft was found: it starts from the prefix with no
# LD_LIBRARY_PATH (its RPATH finds libdelog-raft and libdelog), as does a program that
# links libdelog-raft alone (raft_user.c: libdelog-raft's RUNPATH), its client and man page
# are installed, and the installed example directory builds it against the installed
# package with find_package (delog::delog_raft carries C-Raft and libuv).
if [ -x "$PREFIX/bin/delog-raft-kv" ]; then
	run "installed delog-raft-kv --help, no LD_LIBRARY_PATH" \
		env -u LD_LIBRARY_PATH "$PREFIX/bin/delog-raft-kv" --help
	if command -v python3 >/dev/null; then
		run "installed delog-raft-kvclient --help" "$PREFIX/bin/delog-raft-kvclient" --help
	fi
	[ -f "$PREFIX/share/man/man1/delog-raft-kv.1" ] || fail "no delog-raft-kv(1) installed"
	# A program of delog_raft_* calls alone links libdelog-raft only, with its own rpath:
	# it starts only if libdelog-raft finds libdelog itself (RUNPATH $ORIGIN).
	mkdir -p "$TMP/raft_user.d"
	run "build a program that calls only delog_raft_*" "$CC" -o "$TMP/raft_user" \
		"$SRC/tests/install/raft_user.c" -I"$PREFIX/include" -L"$LIBDIR" -ldelog-raft \
		-lraft -luv -Wl,-rpath,"$LIBDIR" &&
		run "run it from the prefix, no LD_LIBRARY_PATH" \
			env -u LD_LIBRARY_PATH "$TMP/raft_user" "$TMP/raft_user.d"
	RDIR=$PREFIX/share/doc/delog/examples/raft
	if [ -f "$RDIR/CMakeLists.txt" ]; then
		run "installed raft example configure" cmake -S "$RDIR" -B "$TMP/raftex" \
			-DCMAKE_C_COMPILER="$CC" -DCMAKE_PREFIX_PATH="$PREFIX" &&
			run "installed raft example build (delog::delog_raft)" cmake --build "$TMP/raftex" &&
			run "installed raft example runs" "$TMP/raftex/delog-raft-kv" --help
	else
		fail "no CMakeLists.txt in the installed raft example ($RDIR)"
	fi
else
	echo "skip: libdelog-raft not built (no C-Raft or libuv)"
fi

finish "install_test"
