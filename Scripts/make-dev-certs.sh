#!/usr/bin/env bash
# Development certificates with the openssl command, until `aasa serve --dev` makes them itself:
# a CA in certs-dev/ca/ (ca.pem, ca.key; never served) and a leaf certs-dev/aasa-dev.crt/.key
# whose subjectAltNames are every site of the config directory plus localhost, 127.0.0.1, ::1.
# The leaf is re-issued when the list of names changes. Keys are mode 0600.
set -euo pipefail
config=${1:-config}
out=${2:-certs-dev}
mkdir -p "$out/ca"
umask 077

names=()
for dir in "$config"/*/; do
  name=$(basename "$dir")
  case "$name" in .*) continue ;; esac
  names+=("$name")
done
san="DNS:localhost,IP:127.0.0.1,IP:::1"
for n in "${names[@]}"; do san="$san,DNS:$n"; done

if [ ! -s "$out/ca/ca.pem" ] || [ ! -s "$out/ca/ca.key" ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$out/ca/ca.key"
  openssl req -x509 -new -key "$out/ca/ca.key" -sha256 -days 825 -subj "/CN=aasa development CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$out/ca/ca.pem" 2>/dev/null
fi

if [ -s "$out/aasa-dev.crt" ] && [ -s "$out/aasa-dev.key" ] && [ "$(cat "$out/.san" 2>/dev/null)" = "$san" ]; then
  exit 0
fi
openssl ecparam -name prime256v1 -genkey -noout -out "$out/aasa-dev.key"
openssl req -new -key "$out/aasa-dev.key" -subj "/CN=aasa development server" -out "$out/aasa-dev.csr" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' "$san" > "$out/aasa-dev.ext"
openssl x509 -req -in "$out/aasa-dev.csr" -CA "$out/ca/ca.pem" -CAkey "$out/ca/ca.key" -CAcreateserial \
  -days 397 -sha256 -extfile "$out/aasa-dev.ext" -out "$out/aasa-dev.crt" 2>/dev/null
rm -f "$out/aasa-dev.csr" "$out/aasa-dev.ext" "$out/ca/ca.srl"
printf '%s' "$san" > "$out/.san"
chmod 600 "$out"/*.key "$out/ca/ca.key"
echo "certs-dev: issued $out/aasa-dev.crt for $san"
