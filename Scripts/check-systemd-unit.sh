#!/usr/bin/env bash
# usage: check-systemd-unit.sh UNIT BINARY [MANPATH]
# Checks a copy of UNIT, its ExecStart pointed at BINARY, with `systemd-analyze verify`. verify
# reports a bad value or an unknown key as a message and still exits 0, so any message fails.
# With MANPATH, verify also finds the man page that Documentation= names; without, that is skipped.
# The directives docs/deployment.md ("Install on a host") promises are checked to be there.
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

verify() {
  if [ -n "$manpath" ]; then MANPATH=$manpath systemd-analyze verify "$1" 2>&1
  else systemd-analyze verify --man=no "$1" 2>&1; fi
}

# verify must notice a wrong value, or passing it proves nothing.
sed 's/^ProtectSystem=strict/ProtectSystem=sometimes/' "$work/aasa.service" > "$work/wrong.service"
if [ -z "$(verify "$work/wrong.service" || true)" ]; then
  echo "check-systemd-unit: systemd-analyze verify reports nothing about ProtectSystem=sometimes; cannot check here"
  exit 1
fi

if ! out=$(verify "$work/aasa.service") || [ -n "$out" ]; then
  echo "check-systemd-unit: systemd-analyze verify $unit:"
  echo "$out"
  exit 1
fi
echo "check-systemd-unit: $unit passes systemd-analyze verify$([ -n "$manpath" ] && echo ", man page included")"
