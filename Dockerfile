# SPDX-License-Identifier: Apache-2.0
# Multi-stage build. The build stage installs and builds exactly as the README's first command
# does (scripts/install-deps.sh --run, then scripts/demo.sh's own build into build-demo/), so
# scripts/container-check.sh can run the demo in this stage's image: a fresh Debian root that
# proves the demo's package list. The runtime stage is a small image with the binaries, a
# default config and a non-root user. scripts/container-check.sh builds and runs both (with
# podman, no daemon).
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh --run && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash scripts/demo.sh --build-only \
 && cmake --build build-demo -j2 --target idemgate-loadtest \
 && strip build-demo/bin/idemgate build-demo/bin/idemgate-loadtest build-demo/bin/order-service

FROM debian:bookworm-slim AS runtime
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh --runtime && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin idemgate
COPY --from=build /src/build-demo/bin/idemgate /usr/local/bin/idemgate
COPY --from=build /src/build-demo/bin/idemgate-loadtest /usr/local/bin/idemgate-loadtest
COPY --from=build /src/build-demo/bin/order-service /usr/local/bin/order-service
COPY config/docker.yaml /etc/idemgate/idemgate.yaml
USER idemgate
EXPOSE 8080 8079
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8079/healthz || exit 1
# SIGTERM starts the drain (timeouts.drain, 25 s in config/docker.yaml). `docker stop` waits only
# 10 s before SIGKILL unless told otherwise: docker-compose.yml sets stop_grace_period: 35s; with
# `docker run`, pass --stop-timeout 35.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/idemgate"]
CMD ["--config", "/etc/idemgate/idemgate.yaml"]
