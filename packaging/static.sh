#!/bin/sh
# Build a fully static x86-64 hookd on musl (see packaging/README.md).
#
#   packaging/static.sh            deps (cached) + build/static/hookd + stripped copy
#   packaging/static.sh deps       only download and build the dependencies
#
# Dependency sources are Debian bookworm source packages (Debian's patches
# applied by dpkg-source), fetched with a private apt configuration under
# packaging/.cache/ (the system's apt sources are never touched). Everything
# downloaded or built stays in packaging/.cache/ (git-ignored). Re-running
# reuses the cache; the hookd objects are rebuilt by the top Makefile.
#
# Environment: MAKE (default make), JOBS (default nproc), STATIC_BUILD
# (default build/static), STATIC_CACHE (default packaging/.cache).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${STATIC_CACHE:-$TOP/packaging/.cache}
BUILD=${STATIC_BUILD:-build/static}
MAKE=${MAKE:-make}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
# Bump when the way a dependency is built changes: forces a rebuild of the prefix.
RECIPE=12
PREFIX=$CACHE/prefix
SRC=$CACHE/src
DL=$CACHE/dl
STAMPS=$CACHE/stamps-r$RECIPE
# hookd's own changes to the Debian sources (see packaging/README.md)
PATCHES=$TOP/packaging/patches
TOOLS="musl-tools dpkg-dev tcl xz-utils file debian-archive-keyring gcc make pkg-config"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DEP_CFLAGS="-O2 -ffunction-sections -fdata-sections -ffile-prefix-map=$CACHE=."

say() { printf 'static: %s\n' "$*" >&2; }
die() { printf 'static: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

[ "$(uname -m)" = x86_64 ] || die "only x86-64 is supported (this is $(uname -m))"

# ---------------------------------------------------------------- tools
need_tools() {
    missing=""
    for p in $TOOLS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    say "installing build tools:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -q
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $missing
}

# ---------------------------------------------------------------- sources
# A private apt setup per suite: only deb-src lines, own lists and cache.
apt_private() { # suite-name dir
    name=$1 dir=$2
    mkdir -p "$dir/parts" "$dir/lists/partial" "$dir/cache/archives/partial"
    case $name in
    bookworm)
        cat >"$dir/parts/src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: $KEYRING

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: $KEYRING
EOF
        ;;
    trixie)
        cat >"$dir/parts/src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: $KEYRING
EOF
        ;;
    esac
}

apt_src() { # dir apt-args...
    dir=$1; shift
    apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$dir/parts" \
        -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o APT::Sandbox::User=root "$@"
}

apt_updated=""
fetch() { # source-package [suite [version]]: downloads into $DL/<pkg>/, sets $dsc
    pkg=$1 suite=${2:-bookworm} ver=${3:-}
    d=$DL/$pkg
    dsc=$(ls "$d"/*.dsc 2>/dev/null | head -n 1 || true)
    if [ -n "$dsc" ] && [ -f "$d/.complete" ]; then return 0; fi
    rm -rf "$d"; mkdir -p "$d"
    adir=$CACHE/apt-$suite
    case " $apt_updated " in
    *" $suite "*) ;;
    *) apt_private "$suite" "$adir"
       say "apt update (private deb-src config, $suite)"
       apt_src "$adir" update >/dev/null || return 1
       apt_updated="$apt_updated $suite" ;;
    esac
    say "downloading source package $pkg ($suite)"
    (cd "$d" && apt_src "$adir" source --download-only "$pkg${ver:+=$ver}") >&2 || return 1
    dsc=$(ls "$d"/*.dsc 2>/dev/null | head -n 1 || true)
    [ -n "$dsc" ] || return 1
    touch "$d/.complete"
}

main_pool_version() { # source-package: its version in bookworm's main pool
    adir=$CACHE/apt-bookworm
    apt-cache -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$adir/parts" \
        -o Dir::State::Lists="$adir/lists" -o Dir::Cache="$adir/cache" \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null showsrc "$1" 2>/dev/null |
        awk '/^Version:/ { v = $2 } /^Directory: pool\/main\// { print v; exit }'
}

unpack() { # source-package -> $SRC/<pkg> with Debian's patches applied; sets $srcdir
    pkg=$1
    srcdir=$SRC/$pkg
    [ -f "$STAMPS/unpack-$pkg" ] && [ -d "$srcdir" ] && return 0
    dsc=$(ls "$DL/$pkg"/*.dsc | head -n 1)
    rm -rf "$srcdir"; mkdir -p "$SRC"
    say "unpacking $(basename "$dsc") (Debian patches applied)"
    # No debian-keyring here: dpkg-source cannot check the .dsc signature
    # itself, but apt already checked every file against the signed index.
    dpkg-source --no-check -x "$dsc" "$srcdir" >/dev/null
    touch "$STAMPS/unpack-$pkg"
}

get_sources() {
    for p in mbedtls curl sqlite3 cjson ncurses mimalloc; do
        fetch "$p" || die "could not download the Debian source package $p"
    done
    # the security pool's newest postgresql-15 source has answered 404;
    # the point release of bookworm's main pool is the fallback
    if ! fetch postgresql-15; then
        say "newest postgresql-15 source not downloadable; falling back to bookworm's main pool"
        v=$(main_pool_version postgresql-15)
        [ -n "$v" ] || die "postgresql-15: no version in bookworm's main pool"
        fetch postgresql-15 bookworm "$v" || die "could not download postgresql-15 $v"
    fi
    # bookworm's libinih orig tarball has answered 404; trixie's libinih
    # (same C API) is the fallback.
    if ! fetch libinih bookworm; then
        say "bookworm libinih not downloadable; falling back to trixie's"
        fetch libinih trixie || die "could not download libinih (bookworm or trixie)"
    fi
    for p in mbedtls curl sqlite3 cjson libinih ncurses postgresql-15 mimalloc; do unpack "$p"; done
}

# ---------------------------------------------------------------- builds
timed() { # name command...
    name=$1; shift
    [ -f "$STAMPS/built-$name" ] && { say "$name: cached"; return 0; }
    t0=$(now)
    say "$name: building"
    "$@" >"$CACHE/log-$name.txt" 2>&1 || { tail -n 40 "$CACHE/log-$name.txt" >&2; die "$name failed (log: $CACHE/log-$name.txt)"; }
    say "$name: built in $(( $(now) - t0 )) s"
    touch "$STAMPS/built-$name"
}

build_mbedtls() {
    cd "$SRC/mbedtls"
    h=include/mbedtls/config.h
    sed -i -e 's|^//#define MBEDTLS_THREADING_C$|#define MBEDTLS_THREADING_C|' \
           -e 's|^//#define MBEDTLS_THREADING_PTHREAD$|#define MBEDTLS_THREADING_PTHREAD|' "$h"
    grep -q '^#define MBEDTLS_THREADING_C$' "$h" || die "mbedtls: could not enable MBEDTLS_THREADING_C"
    grep -q '^#define MBEDTLS_THREADING_PTHREAD$' "$h" || die "mbedtls: could not enable MBEDTLS_THREADING_PTHREAD"
    # 2.28 uses the getrandom syscall only under glibc; on musl it would fall
    # back to opening /dev/urandom at run time. The syscall exists on Linux.
    e=library/entropy_poll.c
    sed -i 's|defined(__linux__) && defined(__GLIBC__)|defined(__linux__)|' "$e"
    grep -q 'defined(__GLIBC__)' "$e" && die "mbedtls: getrandom condition not widened in $e"
    # certificates for IP addresses: match subjectAltName iPAddress
    # entries (2.28 compares the address with DNS names only)
    patch -p1 -s -f <"$PATCHES/mbedtls-ip-san.patch" || die "mbedtls: $PATCHES/mbedtls-ip-san.patch does not apply"
    # derive only the key block the negotiated suite uses (40 bytes for
    # AES-128-GCM), not 256 bytes of PRF output per handshake
    patch -p1 -s -f <"$PATCHES/mbedtls-keyblock.patch" || die "mbedtls: $PATCHES/mbedtls-keyblock.patch does not apply"
    # no TLS 1.0/1.1 (libcurl is told TLS 1.2 or later anyway): without
    # them mbedTLS stops hashing every handshake message with MD5 and SHA-1
    # for their Finished messages
    sed -i -e 's|^#define MBEDTLS_SSL_PROTO_TLS1$|//#define MBEDTLS_SSL_PROTO_TLS1|' \
           -e 's|^#define MBEDTLS_SSL_PROTO_TLS1_1$|//#define MBEDTLS_SSL_PROTO_TLS1_1|' \
           -e 's|^#define MBEDTLS_SSL_CBC_RECORD_SPLITTING$|//#define MBEDTLS_SSL_CBC_RECORD_SPLITTING|' "$h"
    grep -q '^#define MBEDTLS_SSL_PROTO_TLS1_2$' "$h" || die "mbedtls: TLS 1.2 not enabled in $h"
    grep -Eq '^#define MBEDTLS_SSL_PROTO_(SSL3|TLS1|TLS1_1)$' "$h" && die "mbedtls: could not disable SSL 3/TLS 1.0/1.1 in $h"
    # X25519 by Everest (HACL*'s verified Curve25519, shipped in 2.28's
    # 3rdparty/): a full handshake's key exchange costs the client about
    # 0.2 ms of CPU instead of 1.2 ms with 2.28's generic bignum code. The
    # non-legacy ECDH context it needs is internal to mbedTLS.
    sed -i -e 's|^//#define MBEDTLS_ECDH_VARIANT_EVEREST_ENABLED$|#define MBEDTLS_ECDH_VARIANT_EVEREST_ENABLED|' \
           -e 's|^#define MBEDTLS_ECDH_LEGACY_CONTEXT$|//#define MBEDTLS_ECDH_LEGACY_CONTEXT|' "$h"
    grep -q '^#define MBEDTLS_ECDH_VARIANT_EVEREST_ENABLED$' "$h" || die "mbedtls: could not enable Everest in $h"
    grep -q '^#define MBEDTLS_ECDH_LEGACY_CONTEXT$' "$h" && die "mbedtls: could not disable MBEDTLS_ECDH_LEGACY_CONTEXT in $h"
    $MAKE -C library -j"$JOBS" CC=musl-gcc AR=ar CFLAGS="$DEP_CFLAGS" static
    mkdir -p "$PREFIX/lib" "$PREFIX/include"
    cp library/libmbedtls.a library/libmbedx509.a library/libmbedcrypto.a "$PREFIX/lib/"
    rm -rf "$PREFIX/include/mbedtls" "$PREFIX/include/psa" "$PREFIX/include/everest"
    cp -r include/mbedtls include/psa 3rdparty/everest/include/everest "$PREFIX/include/"
}

build_curl() {
    cd "$SRC/curl"
    # Debian renames the library for its NSS/GnuTLS flavours: undo that.
    for p in 99_nss.patch 90_gnutls.patch; do
        if [ -f "debian/patches/$p" ] && patch -p1 -R --dry-run -s -f <"debian/patches/$p" >/dev/null 2>&1; then
            patch -p1 -R -s -f <"debian/patches/$p"
        fi
    done
    # the dynamic build's certificate policy (no SHA-1, RSA >= 2048), and
    # session tickets for resumption
    patch -p1 -s -f <"$PATCHES/curl-mbedtls-policy.patch" || die "curl: $PATCHES/curl-mbedtls-policy.patch does not apply"
    # CA files parsed once per process, not once per connection
    patch -p1 -s -f <"$PATCHES/curl-mbedtls-ca-cache.patch" || die "curl: $PATCHES/curl-mbedtls-ca-cache.patch does not apply"
    # the kind of a fatal alert from the server in the error text (hookd
    # tells a refused client certificate from other failures by it)
    patch -p1 -s -f <"$PATCHES/curl-mbedtls-alert.patch" || die "curl: $PATCHES/curl-mbedtls-alert.patch does not apply"
    rm -rf build-musl; mkdir build-musl; cd build-musl
    ../configure CC=musl-gcc CFLAGS="$DEP_CFLAGS" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib" \
        --prefix="$PREFIX" --disable-shared --enable-static \
        --with-mbedtls="$PREFIX" --enable-threaded-resolver \
        --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --without-ca-path --without-ca-fallback \
        --without-openssl --without-gnutls --without-wolfssl --without-bearssl --without-rustls \
        --without-nss --without-schannel --without-secure-transport --without-amissl \
        --without-zlib --without-brotli --without-zstd --without-libpsl --without-libidn2 \
        --without-nghttp2 --without-ngtcp2 --without-nghttp3 --without-quiche --without-msh3 \
        --without-hyper --without-libssh2 --without-libssh --without-wolfssh --without-librtmp \
        --without-gssapi --without-libgsasl \
        --disable-ldap --disable-ldaps --disable-ftp --disable-file --disable-dict \
        --disable-gopher --disable-imap --disable-pop3 --disable-smtp --disable-rtsp \
        --disable-telnet --disable-tftp --disable-mqtt --disable-smb --disable-manual \
        --disable-ntlm-wb --disable-dependency-tracking
    $MAKE -C lib -j"$JOBS"
    $MAKE -C lib install
    $MAKE -C include install
    $MAKE install-pkgconfigDATA
    # The features we rely on; fail loudly if configure silently dropped one.
    for f in '#define USE_MBEDTLS 1' '#define USE_THREADS_POSIX 1' \
             '#define CURL_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"'; do
        grep -qF "$f" lib/curl_config.h || die "curl: '$f' missing from curl_config.h"
    done
}

build_sqlite3() {
    cd "$SRC/sqlite3"
    rm -rf build-amalg; mkdir build-amalg; cd build-amalg
    # Debian ships the canonical tree: generate the amalgamation (host gcc, tclsh).
    ../configure --disable-tcl --disable-readline >/dev/null
    $MAKE sqlite3.c
    # HAVE_PREAD/HAVE_PWRITE: without them (configure's job, which the
    # amalgamation skips) every page read or write is an lseek and a
    # read or write: twice the WAL's system calls of the dynamic build
    musl-gcc $DEP_CFLAGS -DSQLITE_THREADSAFE=1 -DHAVE_USLEEP=1 -DHAVE_FDATASYNC=1 \
        -DHAVE_PREAD=1 -DHAVE_PWRITE=1 \
        -DHAVE_LOCALTIME_R=1 -DHAVE_GMTIME_R=1 -DHAVE_POSIX_FALLOCATE=1 \
        -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_DQS=0 -c -o sqlite3.o sqlite3.c
    rm -f libsqlite3.a; ar rcs libsqlite3.a sqlite3.o
    mkdir -p "$PREFIX/lib" "$PREFIX/include"
    cp libsqlite3.a "$PREFIX/lib/"; cp sqlite3.h sqlite3ext.h "$PREFIX/include/"
    v=$(sed -n 's/^#define SQLITE_VERSION *"\(.*\)"/\1/p' sqlite3.h)
    write_pc sqlite3 SQLite "$v" "-lsqlite3" "-lpthread -lm" "-I\${includedir}"
}

build_cjson() {
    cd "$SRC/cjson"
    musl-gcc $DEP_CFLAGS -std=c89 -c -o cJSON.o cJSON.c
    rm -f libcjson.a; ar rcs libcjson.a cJSON.o
    mkdir -p "$PREFIX/lib" "$PREFIX/include/cjson"
    cp libcjson.a "$PREFIX/lib/"; cp cJSON.h "$PREFIX/include/cjson/"
    v=$(dpkg-parsechangelog -l debian/changelog -S Version | sed 's/-[^-]*$//')
    write_pc libcjson libcjson "$v" "-lcjson" "-lm" "-I\${includedir} -I\${includedir}/cjson"
}

build_libinih() {
    cd "$SRC/libinih"
    # Debian builds inih with INI_HANDLER_LINENO=1 (4-argument handler); so
    # does the Makefile, so both builds use the same handler signature.
    musl-gcc $DEP_CFLAGS -DINI_HANDLER_LINENO=1 -c -o ini.o ini.c
    rm -f libinih.a; ar rcs libinih.a ini.o
    mkdir -p "$PREFIX/lib" "$PREFIX/include"
    cp libinih.a "$PREFIX/lib/"; cp ini.h "$PREFIX/include/"
    v=$(dpkg-parsechangelog -l debian/changelog -S Version | sed 's/-[^-]*$//')
    write_pc inih inih "$v" "-linih" "" "-I\${includedir}"
}

build_ncurses() {
    cd "$SRC/ncurses"
    rm -rf build-musl; mkdir build-musl; cd build-musl
    # The wide-character library only (hookd top): no programs, no terminfo
    # database of its own. The binary reads the host's terminfo, in the
    # places Debian and RHEL keep it.
    ../configure CC=musl-gcc CFLAGS="$DEP_CFLAGS" --prefix="$PREFIX" \
        --without-shared --with-normal --without-debug --without-profile \
        --without-cxx --without-cxx-binding --without-ada --without-progs --without-tests \
        --without-manpages --enable-widec --disable-db-install --without-gpm --disable-termcap \
        --with-terminfo-dirs=/etc/terminfo:/lib/terminfo:/usr/share/terminfo \
        --with-default-terminfo-dir=/usr/share/terminfo \
        --enable-pc-files --with-pkg-config-libdir="$PREFIX/lib/pkgconfig" --disable-stripping
    $MAKE -j"$JOBS" libs
    $MAKE install.libs
    [ -f "$PREFIX/lib/libncursesw.a" ] || die "ncurses: libncursesw.a not installed"
}

# libpq only (the PostgreSQL backend), with the two internal libraries it
# needs. Without OpenSSL: hookd's TLS is mbedTLS, which libpq cannot use,
# so the packaged binary talks to PostgreSQL without TLS (sslmode=disable
# or prefer; packaging/doc/scaling-postgresql.md says what that means).
build_libpq() {
    # every step checked: this runs on the left of || (set -e does not apply)
    cd "$SRC/postgresql-15" || return 1
    rm -rf build-musl; mkdir build-musl; cd build-musl || return 1
    ../configure CC=musl-gcc CFLAGS="$DEP_CFLAGS" --prefix="$PREFIX" \
        --without-readline --without-zlib --without-icu --without-openssl --without-gssapi \
        --without-ldap --without-lz4 --without-zstd --without-libxml --without-libxslt \
        --without-perl --without-python --without-tcl --without-pam --without-selinux \
        --without-systemd --disable-nls --disable-rpath || return 1
    # errcodes.h and the other generated headers (shipped in the tarball,
    # linked into the build tree) before anything includes them
    $MAKE -C src/backend generated-headers || return 1
    $MAKE -C src/common -j"$JOBS" || return 1
    $MAKE -C src/port -j"$JOBS" || return 1
    $MAKE -C src/interfaces/libpq -j"$JOBS" all-static-lib || return 1
    mkdir -p "$PREFIX/lib" "$PREFIX/include"
    cp src/interfaces/libpq/libpq.a src/common/libpgcommon_shlib.a src/port/libpgport_shlib.a "$PREFIX/lib/" ||
        return 1
    cp ../src/interfaces/libpq/libpq-fe.h ../src/include/postgres_ext.h src/include/pg_config_ext.h \
        "$PREFIX/include/" || return 1
    v=$(sed -n 's/^#define PG_VERSION "\(.*\)"/\1/p' src/include/pg_config.h)
    [ -n "$v" ] || return 1
    write_pc libpq libpq "$v" "-lpq" "-lpgcommon_shlib -lpgport_shlib -lpthread" "-I\${includedir}"
}

# mimalloc replaces musl's malloc in the whole binary (hookd, libcurl,
# mbedTLS, SQLite): musl's allocator hands memory back to the kernel on
# nearly every free (madvise/munmap, each a TLB shootdown across the
# delivery threads) and serialises threads on one lock. One object file
# (src/static.c is the library as a single unit) that defines malloc,
# free and the rest: build_hookd links it as an object, so every
# reference resolves to it and no part of musl's malloc is pulled in.
build_mimalloc() {
    cd "$SRC/mimalloc"
    [ -f src/static.c ] && [ -f src/alloc-override.c ] || die "mimalloc: src/static.c or alloc-override.c missing"
    # __USE_ISOC11: alloc-override.c defines aligned_alloc only under
    # glibc's name for C11; musl's own would hand out mallocng memory
    musl-gcc $DEP_CFLAGS -DNDEBUG -DMI_MALLOC_OVERRIDE -DMI_STATIC_LIB -DMI_SECURE=0 -D__USE_ISOC11=1 \
        -ftls-model=initial-exec -fno-builtin-malloc -Iinclude -c -o mimalloc.o src/static.c
    for f in malloc free calloc realloc aligned_alloc posix_memalign memalign malloc_usable_size; do
        nm mimalloc.o | grep -q " T $f\$" || die "mimalloc: mimalloc.o does not define $f"
    done
    mkdir -p "$PREFIX/lib" "$PREFIX/include"
    cp mimalloc.o "$PREFIX/lib/mimalloc.o"
    cp include/mimalloc.h "$PREFIX/include/"
}

write_pc() { # file name version libs libs.private cflags
    mkdir -p "$PREFIX/lib/pkgconfig"
    cat >"$PREFIX/lib/pkgconfig/$1.pc" <<EOF
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $2
Description: $2 (static, musl; built by packaging/static.sh)
Version: $3
Libs: -L\${libdir} $4
Libs.private: $5
Cflags: $6
EOF
}

build_deps() {
    mkdir -p "$STAMPS" "$PREFIX"
    get_sources
    timed mbedtls build_mbedtls
    timed curl build_curl
    timed sqlite3 build_sqlite3
    timed cjson build_cjson
    timed libinih build_libinih
    timed ncurses build_ncurses
    timed libpq build_libpq
    timed mimalloc build_mimalloc
    for a in libpq.a libpgcommon_shlib.a libpgport_shlib.a mimalloc.o; do
        [ -f "$PREFIX/lib/$a" ] || die "missing $PREFIX/lib/$a"
    done
    for pc in sqlite3 libcurl libcjson inih ncursesw libpq; do
        [ -f "$PREFIX/lib/pkgconfig/$pc.pc" ] || die "missing $PREFIX/lib/pkgconfig/$pc.pc"
    done
}

# ---------------------------------------------------------------- hookd
build_hookd() {
    cd "$TOP"
    t0=$(now)
    say "hookd: building $BUILD/hookd with musl-gcc"
    # make knows hookd's objects, not the prefix: relink after a rebuilt
    # dependency (a RECIPE bump, a changed patch)
    for f in "$PREFIX"/lib/*.a "$PREFIX/lib/mimalloc.o"; do
        if [ -e "$BUILD/hookd" ] && [ "$f" -nt "$BUILD/hookd" ]; then rm -f "$BUILD/hookd"; break; fi
    done
    PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR= \
    $MAKE -j"$JOBS" BUILD="$BUILD" CC=musl-gcc PKG_CONFIG="pkg-config --static" \
        OPT="-O2 -g -ffunction-sections -fdata-sections -ffile-prefix-map=$TOP=." \
        LDFLAGS="-static -pthread -L$PREFIX/lib -Wl,--gc-sections -Wl,--build-id $PREFIX/lib/mimalloc.o" \
        "$BUILD/hookd"
    out=$BUILD/hookd
    file "$out" | grep -q 'statically linked' || die "$out is not statically linked: $(file "$out")"
    if ldd "$out" >/dev/null 2>&1; then die "ldd thinks $out is dynamic"; fi
    check_allocator "$out"
    strip --strip-all --remove-section=.comment -o "$out.stripped.tmp" "$out" && mv "$out.stripped.tmp" "$out.stripped"
    "$out.stripped" --version >/dev/null || die "$out.stripped --version failed"
    say "hookd: built in $(( $(now) - t0 )) s: $out ($(stat -c %s "$out") bytes), $out.stripped ($(stat -c %s "$out.stripped") bytes)"
    say "$(file -b "$out.stripped")"
}

# malloc and free must be mimalloc's (aliases of mi_malloc and mi_free),
# and mimalloc must be the one running: it answers MIMALLOC_VERBOSE
check_allocator() { # binary
    a=$(nm "$1" | awk '$3 == "malloc" { print $1 }')
    b=$(nm "$1" | awk '$3 == "mi_malloc" { print $1 }')
    [ -n "$a" ] && [ "$a" = "$b" ] || die "$1: malloc is not mimalloc's (malloc=$a mi_malloc=$b)"
    a=$(nm "$1" | awk '$3 == "free" { print $1 }')
    b=$(nm "$1" | awk '$3 == "mi_free" { print $1 }')
    [ -n "$a" ] && [ "$a" = "$b" ] || die "$1: free is not mimalloc's (free=$a mi_free=$b)"
    MIMALLOC_VERBOSE=1 "$1" --version 2>&1 >/dev/null | grep -q '^mimalloc: ' ||
        die "$1: mimalloc did not answer MIMALLOC_VERBOSE=1"
}

# ---------------------------------------------------------------- main
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
T0=$(now)
need_tools
build_deps
say "dependencies ready in $(( $(now) - T0 )) s (prefix: $PREFIX)"
[ "${1:-}" = deps ] && exit 0
build_hookd
say "total $(( $(now) - T0 )) s"
