# SPDX-License-Identifier: Apache-2.0
# Multi-stage build: compile on debian:bookworm with the same install script CI uses (only its
# compiler and -dev packages), then a small runtime image with the binaries, a default config and
# a non-root user. scripts/container-check.sh builds and runs it (with podman, no daemon).
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh --compile && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DIDEMGATE_BUILD_TESTS=OFF -DIDEMGATE_BUILD_BENCH=OFF \
 && cmake --build build -j2 --target idemgate idemgate-loadtest order-service \
 && strip build/bin/idemgate build/bin/idemgate-loadtest build/bin/order-service

FROM debian:bookworm-slim AS runtime
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh --runtime && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin idemgate
COPY --from=build /src/build/bin/idemgate /usr/local/bin/idemgate
COPY --from=build /src/build/bin/idemgate-loadtest /usr/local/bin/idemgate-loadtest
COPY --from=build /src/build/bin/order-service /usr/local/bin/order-service
COPY config/docker.yaml /etc/idemgate/idemgate.yaml
USER idemgate
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9090/healthz || exit 1
# SIGTERM starts the drain (timeouts.drain, 25 s in config/docker.yaml). `docker stop` waits only
# 10 s before SIGKILL unless told otherwise: docker-compose.yml sets stop_grace_period: 35s; with
# `docker run`, pass --stop-timeout 35.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/idemgate"]
CMD ["--config", "/etc/idemgate/idemgate.yaml"]
