#!/usr/bin/env bash
# usage: check-systemd-unit.sh UNIT BINARY [MANPATH]
# Checks a copy of UNIT, its ExecStart pointed at BINARY, with `systemd-analyze verify`. verify
# reports a bad value or an unknown key as a message and still exits 0, so any message fails.
# With MANPATH, verify also finds the man page that Documentation= names; without, that is skipped.
# The directives docs/deployment.md ("Install on a host") promises are checked to be there.
# The socket unit beside UNIT (aasa.socket, which the service requires) is verified with it: it
# names its socket https, and the service then names no --https address (a usage error).
set -euo pipefail
unit=$1 binary=$2 manpath=${3:-}

if ! command -v systemd-analyze >/dev/null; then
  echo "check-systemd-unit: skipped: systemd-analyze is not installed (Debian package systemd)"
  exit 0
fi
[ -x "$binary" ] || { echo "check-systemd-unit: $binary is not an executable (build first)"; exit 1; }

for directive in 'User=aasa' 'AmbientCapabilities=CAP_NET_BIND_SERVICE' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
                 'ReadOnlyPaths=/etc/aasa/config /etc/aasa/certs' '#ReadWritePaths=' 'Restart=on-failure' \
                 'ExecReload=/bin/kill -HUP $MAINPID'; do
  grep -qxF -- "$directive" "$unit" || grep -q "^${directive//\$/\\\$}" "$unit" \
    || { echo "check-systemd-unit: $unit lacks $directive"; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s|^ExecStart=[^ ]*|ExecStart=$binary|" "$unit" > "$work/aasa.service"
socket=$(dirname "$unit")/aasa.socket
[ -f "$socket" ] || { echo "check-systemd-unit: no $socket beside $unit (the service requires it)"; exit 1; }
cp "$socket" "$work/aasa.socket"
grep -qxF 'FileDescriptorName=https' "$socket" || { echo "check-systemd-unit: $socket does not name its socket https"; exit 1; }
grep -qxF 'Requires=aasa.socket' "$unit" || { echo "check-systemd-unit: $unit does not require aasa.socket"; exit 1; }
if sed -n '/^ExecStart=/,/^[A-Z]/p' "$unit" | grep -q -- '--https'; then
  echo "check-systemd-unit: $unit names an --https address, but aasa.socket passes that listener"; exit 1
fi

verify() {
  if [ -n "$manpath" ]; then MANPATH=$manpath systemd-analyze verify "$@" 2>&1
  else systemd-analyze verify --man=no "$@" 2>&1; fi
}

# verify must notice a wrong value, or passing it proves nothing.
sed 's/^ProtectSystem=strict/ProtectSystem=sometimes/' "$work/aasa.service" > "$work/wrong.service"
if [ -z "$(verify "$work/wrong.service" || true)" ]; then
  echo "check-systemd-unit: systemd-analyze verify reports nothing about ProtectSystem=sometimes; cannot check here"
  exit 1
fi

# And a wrong value in the socket unit.
sed 's/^ListenStream=.*/ListenStream=not-a-port/' "$work/aasa.socket" > "$work/wrong.socket"
if [ -z "$(verify "$work/wrong.socket" || true)" ]; then
  echo "check-systemd-unit: systemd-analyze verify reports nothing about ListenStream=not-a-port; cannot check here"
  exit 1
fi
rm "$work/wrong.service" "$work/wrong.socket"

if ! out=$(verify "$work/aasa.service" "$work/aasa.socket") || [ -n "$out" ]; then
  echo "check-systemd-unit: systemd-analyze verify $unit $socket:"
  echo "$out"
  exit 1
fi
echo "check-systemd-unit: $unit and $socket pass systemd-analyze verify$([ -n "$manpath" ] && echo ", man page included")"
