#!/usr/bin/env bash
# make container-check: builds the Dockerfile with podman from locally made base images and
# checks the result, with no registry:
#   1. debootstrap Debian bookworm (minbase) into a folder; `podman import` it as the runtime base;
#   2. the builder base: that root plus the build packages, the Swift toolchain of this machine
#      (/opt/swift) and its local package copies (/opt/swift-packages, git insteadOf);
#   3. podman build --isolation=chroot with both as build arguments;
#   4. podman create + export of the image into a folder; run its aasa there with chroot as the
#      image's non-root user (10001), serve an example config over HTTP, check a request and
#      `aasa health`.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${CONTAINER_CHECK_DIR:-/var/tmp/aasa-container-check}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$work"

need=()
for p in debootstrap podman curl; do command -v "$p" >/dev/null || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi

if ! podman image exists localhost/aasa-base-runtime:bookworm; then
  rm -rf "$work/runtime"
  debootstrap --variant=minbase bookworm "$work/runtime" "$mirror"
  tar -C "$work/runtime" -c . | podman import - localhost/aasa-base-runtime:bookworm
fi

if ! podman image exists localhost/aasa-base-builder:bookworm; then
  rm -rf "$work/builder"
  cp -a "$work/runtime" "$work/builder"
  cp /etc/resolv.conf "$work/builder/etc/resolv.conf"
  chroot "$work/builder" /bin/sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libpython3-dev libsqlite3-0 \
      libstdc++-12-dev libxml2-dev libz3-dev libncurses6 pkg-config tzdata zlib1g-dev libssl-dev libnghttp2-dev ca-certificates \
      && rm -rf /var/lib/apt/lists/*'
  mkdir -p "$work/builder/opt"
  cp -a /opt/swift "$work/builder/opt/swift"
  cp -a /opt/swift-packages "$work/builder/opt/swift-packages"
  printf '[url "/opt/swift-packages/"]\n\tinsteadOf = https://github.com/\n' > "$work/builder/etc/gitconfig"
  ln -sf /opt/swift/usr/bin/swift /opt/swift/usr/bin/swiftc -t "$work/builder/usr/local/bin/" 2>/dev/null || true
  for tool in swift swiftc swift-build swift-package; do ln -sf "/opt/swift/usr/bin/$tool" "$work/builder/usr/local/bin/$tool"; done
  tar -C "$work/builder" -c . | podman import --change 'ENV PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - localhost/aasa-base-builder:bookworm
fi

podman build --isolation=chroot --format docker \
  --build-arg BUILDER_IMAGE=localhost/aasa-base-builder:bookworm \
  --build-arg RUNTIME_IMAGE=localhost/aasa-base-runtime:bookworm \
  -t localhost/aasa:check .

# The image's config, as podman sees it.
# HEALTHCHECK is kept only in the docker image format (hence --format docker above).
config=$(podman image inspect localhost/aasa:check --format '{{.Config.User}} {{.Config.Entrypoint}} {{json .Config.Healthcheck}}')
echo "$config"
case "$config" in *'"aasa","health"'*) ;; *) echo 'no HEALTHCHECK running aasa health in the image'; exit 1 ;; esac

rm -rf "$work/image" && mkdir -p "$work/image"
id=$(podman create localhost/aasa:check)
podman export "$id" | tar -C "$work/image" -x
podman rm "$id" >/dev/null
cp -r config/. "$work/image/config/"
chown -R 10001:10001 "$work/image/config"
mount --bind /proc "$work/image/proc" 2>/dev/null || true

port=$((20000 + RANDOM % 10000)); admin=$((port + 1))
chroot --userspec=10001:10001 "$work/image" /usr/local/bin/aasa serve --config /config \
  --http "127.0.0.1:$port" --admin "127.0.0.1:$admin" --cdn-watch off > "$work/serve.out" 2> "$work/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; umount "$work/image/proc" 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q 'ready:' "$work/serve.err" && break; sleep 0.1; done
cat "$work/serve.err"
[ "$(stat -c %u /proc/$pid)" = 10001 ] || { echo "the server does not run as user 10001"; exit 1; }
status=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: example.com' "http://127.0.0.1:$port/.well-known/apple-app-site-association")
[ "$status" = 200 ] || { echo "request: got $status"; exit 1; }
chroot --userspec=10001:10001 "$work/image" /usr/local/bin/aasa health --admin "127.0.0.1:$admin"
kill -TERM $pid; wait $pid
echo "container-check: image built, runs as 10001, serves, healthy"
