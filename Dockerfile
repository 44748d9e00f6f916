# aasa: a Swift builder stage, then a slim Debian runtime with only the shared libraries the
# binary needs. Base images are build arguments so the image can be built from locally made
# bases (see Scripts/container-check.sh); by default they are the public images.
ARG BUILDER_IMAGE=docker.io/library/swift:6.3-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${BUILDER_IMAGE} AS build
# Debian stable's packages are not pinned: their versions only change for security fixes.
# hadolint ignore=DL3008
RUN if ! dpkg-query -W libssl-dev libnghttp2-dev libpq-dev >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends libssl-dev libnghttp2-dev libpq-dev \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# SwiftPM wants every declared target's folder, tests included, even to build one product.
COPY Tests ./Tests
# The Swift standard library and Foundation are linked statically: the runtime stage needs no
# Swift toolchain.
RUN swift build -c release --static-swift-stdlib --product aasa \
    && install -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/aasa" /usr/local/bin/aasa

FROM ${RUNTIME_IMAGE}
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl3 libnghttp2-14 libpq5 ca-certificates publicsuffix \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 aasa \
    && useradd --system --uid 10001 --gid aasa --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin aasa \
    && mkdir -p /config /certs
COPY --from=build /usr/local/bin/aasa /usr/local/bin/aasa
USER 10001:10001
ENV AASA_CONFIG=/config \
    AASA_CERTS=/certs \
    AASA_HTTPS=0.0.0.0:8443 \
    AASA_HTTP=0.0.0.0:8080 \
    AASA_ADMIN=0.0.0.0:9090 \
    AASA_DRAIN_DELAY=5
EXPOSE 8443 8080 9090
# `aasa health` asks the admin listener for /healthz: no curl or shell in the image needed.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["aasa", "health"]
ENTRYPOINT ["aasa", "serve"]
