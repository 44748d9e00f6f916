#!/usr/bin/env bash
# usage: check-install.sh DESTDIR PREFIX
# Checks what `make install DESTDIR=... PREFIX=...` put where: nothing outside DESTDIR/PREFIX; the
# binary runs; the man page renders without warnings and names every command; each completion
# script parses in its own shell (a shell that is not installed is skipped, and said so); the
# unit passes systemd-analyze verify with its ExecStart and man page as installed.
set -euo pipefail
dest=$1 prefix=$2
root=$dest$prefix
fail() { echo "check-install: $*"; exit 1; }

expected="bin/aasa
lib/systemd/system/aasa.service
lib/systemd/system/aasa.socket
share/bash-completion/completions/aasa
share/fish/vendor_completions.d/aasa.fish
share/man/man1/aasa.1
share/zsh/site-functions/_aasa"
[ -d "$root" ] || fail "nothing under $root"
stray=$(find "$dest" -type f ! -path "$root/*")
[ -z "$stray" ] || fail "installed outside PREFIX: $stray"
found=$(cd "$root" && find . -type f | sed 's|^\./||' | sort)
[ "$found" = "$expected" ] || fail "installed files differ from the expected layout:
$found"

[ -x "$root/bin/aasa" ] || fail "bin/aasa is not executable"
version=$("$root/bin/aasa" --version) || fail "bin/aasa --version failed"
echo "check-install: bin/aasa $version"

page=$root/share/man/man1/aasa.1
if command -v groff >/dev/null; then
  warnings=$(groff -mandoc -ww -z "$page" 2>&1) || fail "groff cannot format the man page: $warnings"
  [ -z "$warnings" ] || fail "groff warns about the man page: $warnings"
  text=$(groff -mandoc -Tutf8 "$page" 2>/dev/null | col -bx)
else
  echo "check-install: groff is not installed; the man page is read as source"
  text=$(cat "$page")
fi
for command in serve validate match check entitlements health; do
  grep -qw "$command" <<<"$text" || fail "the man page does not mention $command"
done
grep -q -- "--format" <<<"$text" || fail "the man page lacks the options"
echo "check-install: man page renders and names every command"

bash -c "source '$root/share/bash-completion/completions/aasa' && complete -p aasa" >/dev/null \
  || fail "the bash completion does not register for aasa"
for shell in zsh fish; do
  file=$root/share/zsh/site-functions/_aasa
  [ "$shell" = fish ] && file=$root/share/fish/vendor_completions.d/aasa.fish
  if command -v "$shell" >/dev/null; then
    "$shell" -n "$file" || fail "$shell cannot parse $file"
  else
    echo "check-install: $shell is not installed; $file is not parsed"
  fi
done
head -1 "$root/share/zsh/site-functions/_aasa" | grep -qx '#compdef aasa' || fail "_aasa does not start with #compdef aasa"
if command -v fish >/dev/null; then
  fish -c "source '$root/share/fish/vendor_completions.d/aasa.fish'; complete -C 'aasa '" | grep -q '^validate' \
    || fail "aasa.fish does not offer validate after 'aasa '"
fi
echo "check-install: bash, zsh and fish completions parse"

unit=$root/lib/systemd/system/aasa.service
grep -qx "ExecStart=$prefix/bin/aasa serve --config /etc/aasa/config --certs /etc/aasa/certs \\\\" "$unit" \
  || fail "the unit's ExecStart is not $prefix/bin/aasa"
"$(dirname "$0")/check-systemd-unit.sh" "$unit" "$root/bin/aasa" "$root/share/man"
