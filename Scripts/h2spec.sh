#!/usr/bin/env bash
# A strict h2spec run (`h2spec -S`, every case including the strict ones) against `aasa serve`,
# over TLS (ALPN h2) and over h2c on a plain --http listener. `make test-h2spec` calls it; it is
# not part of `make test`, since h2spec is not packaged for Debian and its source cannot be
# fetched from here.
#
# The h2spec binary: $H2SPEC if set, else .build/h2spec, else it is built into .build/h2spec from
# the source folder $H2SPEC_SRC (a checkout of github.com/summerwind/h2spec), in GOPATH mode
# against Debian's golang-go and golang-*-dev packages (installed with apt-get when missing).
#
# The server: AASA_BUILD=debug (default) or release is built with `swift build --product aasa`
# (AASA=path skips the build), given a certificate from `aasa dev-certs` (it covers 127.0.0.1)
# in a temporary folder, the sites of config/, and listeners on 127.0.0.1 with ports from the OS.
# h2spec connects to 127.0.0.1 without SNI (the default certificate) and sends
# :authority 127.0.0.1:PORT, which is no site: those requests are answered 404 "unknown host",
# which is all h2spec needs. Exit 0 only when every case passes on both.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

H2SPEC_TIMEOUT=${H2SPEC_TIMEOUT:-2}
AASA_BUILD=${AASA_BUILD:-debug}
H2SPEC_PACKAGES="golang-go golang-github-spf13-cobra-dev golang-github-spf13-pflag-dev golang-github-fatih-color-dev
  golang-golang-x-net-dev golang-golang-x-sys-dev golang-golang-x-text-dev golang-github-mattn-go-colorable-dev
  golang-github-mattn-go-isatty-dev"

say() { echo "h2spec.sh: $*"; }
die() { echo "h2spec.sh: $*" >&2; exit 1; }

apt_install() {
    local missing="" p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    say "installing:$missing"
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    # shellcheck disable=SC2086
    $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
}

# h2spec from $H2SPEC_SRC into .build/h2spec: GOPATH mode (GO111MODULE=off), so its go.mod is
# ignored and its imports (cobra, pflag, color, x/net/http2 ...) come from /usr/share/gocode.
build_h2spec() {
    local src=$1 out=.build/h2spec gopath version commit
    [ -f "$src/cmd/h2spec/h2spec.go" ] || die "H2SPEC_SRC=$src is not an h2spec source folder (no cmd/h2spec/h2spec.go)"
    # shellcheck disable=SC2086
    apt_install $H2SPEC_PACKAGES
    gopath=$(mktemp -d)
    mkdir -p "$gopath/src/github.com/summerwind/h2spec"
    tar -C "$src" --exclude=.git -cf - . | tar -C "$gopath/src/github.com/summerwind/h2spec" -xf -
    version=$(sed -n 's/^VERSION=//p' "$src/Makefile" 2>/dev/null || true)
    commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
    say "building h2spec ${version:-?} ($commit) from $src into $out"
    mkdir -p .build
    (cd "$gopath/src/github.com/summerwind/h2spec" &&
        GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" CGO_ENABLED=0 \
        go build -trimpath -ldflags "-X main.VERSION=${version:-unknown} -X main.COMMIT=$commit" -o "$ROOT/$out" ./cmd/h2spec) ||
        { rm -rf "$gopath"; die "building h2spec failed"; }
    rm -rf "$gopath"
}

if [ -n "${H2SPEC:-}" ]; then
    [ -x "$H2SPEC" ] || die "H2SPEC=$H2SPEC is not an executable file"
elif [ -x .build/h2spec ]; then
    H2SPEC=.build/h2spec
elif [ -n "${H2SPEC_SRC:-}" ]; then
    build_h2spec "$H2SPEC_SRC"
    H2SPEC=.build/h2spec
else
    die "no h2spec: set H2SPEC to its binary, or H2SPEC_SRC to a checkout of github.com/summerwind/h2spec
  (it is built into .build/h2spec; the source cannot be downloaded from here, so bring it along)"
fi
say "$("$H2SPEC" --version)"

if [ -z "${AASA:-}" ]; then
    case $AASA_BUILD in
        debug|release) ;;
        *) die "AASA_BUILD=$AASA_BUILD: debug or release" ;;
    esac
    say "swift build -c $AASA_BUILD --product aasa"
    swift build -c "$AASA_BUILD" --product aasa
    AASA=.build/$AASA_BUILD/aasa
fi
[ -x "$AASA" ] || die "AASA=$AASA is not an executable file"

work=$(mktemp -d)
server_pid=""
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT

"$AASA" dev-certs --config config --out "$work/certs" > /dev/null
"$AASA" serve --config config --certs "$work/certs" --https 127.0.0.1:0 --http 127.0.0.1:0 \
    --admin off --cdn-watch off --shutdown-grace 1 > "$work/access.log" 2> "$work/server.log" &
server_pid=$!

tls_port="" h2c_port=""
for _ in $(seq 300); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; die "aasa serve exited before it was ready"; }
    if grep -q ' ready: ' "$work/server.log"; then
        tls_port=$(sed -n 's/.* listening https 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/server.log" | head -n1)
        h2c_port=$(sed -n 's/.* listening http 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/server.log" | head -n1)
        break
    fi
    sleep 0.1
done
[ -n "$tls_port" ] && [ -n "$h2c_port" ] || { cat "$work/server.log" >&2; die "aasa serve did not log both listeners within 30 s"; }
say "aasa serve (pid $server_pid): https 127.0.0.1:$tls_port, http (h2c) 127.0.0.1:$h2c_port"

# One run: $1 the name, then h2spec's transport flags. Prints h2spec's failures (if any) and its
# summary line; returns 0 only when every case passed.
failed_runs=0
run() {
    local name=$1 out summary total passed; shift
    out="$work/h2spec-$name.txt"
    "$H2SPEC" -S -o "$H2SPEC_TIMEOUT" -h 127.0.0.1 "$@" > "$out" 2>&1 || true
    summary=$(grep -E '^[0-9]+ tests, [0-9]+ passed, [0-9]+ skipped, [0-9]+ failed$' "$out" | tail -n1 || true)
    if [ -n "$summary" ]; then
        read -r total _ passed _ <<< "$summary"
    fi
    if [ -z "$summary" ] || [ "$passed" != "$total" ]; then
        sed -n '/^Failures:/,$p' "$out"
        [ -n "$summary" ] || tail -n 20 "$out"
        echo "$name: ${summary:-no summary from h2spec}: FAILED"
        failed_runs=$((failed_runs + 1))
    else
        echo "$name: $summary"
    fi
}

run tls -t -k -p "$tls_port"
run h2c -p "$h2c_port"
stop_server

if [ "$failed_runs" != 0 ]; then
    die "$failed_runs of 2 runs had cases that did not pass (strict h2spec, over TLS and h2c)"
fi
say "every case passed over TLS and h2c"
