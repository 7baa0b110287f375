# Reins: one image for the server, the `reins` CLI and the `reins-sensor` node sensor (different commands).
#
#   docker build -t reins:0.1.0 .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=postgres://… reins:0.1.0          # the server (npm start)
#   docker run --rm -e DATABASE_URL=postgres://… reins:0.1.0 reins migrate          # the CLI
#   (the sensor runs as a DaemonSet: deploy/base/sensor/daemonset.yaml, command reins-sensor)
#
# The build needs the network: the Node base images from Docker Hub, the npm registry, and Inspektor Gadget's `ig`
# release from GitHub (stage `ig`). deploy/README.md ("The image") says what is checked without it.
# test/unit/deploy/dockerfile.test.ts keeps the commands here in step with package.json.

ARG NODE_IMAGE=node:20.19-bookworm
ARG NODE_SLIM_IMAGE=node:20.19-bookworm-slim

# ---- build: the full toolchain (TypeScript, Vite), every dependency; then only the production ones are kept.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (npm run build) needs the sources, copied next; dependencies' own scripts run below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm rebuild --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- ig: Inspektor Gadget, the sensor's eBPF engine, pinned to the release the adapter was built against
# (docs/sensor.md, src/sensor/config.ts IG_VERSION). Downloaded from the project's GitHub release at build time.
FROM ${NODE_SLIM_IMAGE} AS ig
ARG IG_VERSION=v0.55.1
# sha256 of ig-linux-<arch>-<version>.tar.gz from the release page; set it for release builds (empty: not checked).
ARG IG_SHA256=
ARG TARGETARCH=amd64
# Where the tarball comes from: the release on GitHub, or a mirror of it (a build without GitHub, deploy/README.md).
ARG IG_URL=https://github.com/inspektor-gadget/inspektor-gadget/releases/download/${IG_VERSION}/ig-linux-${TARGETARCH}-${IG_VERSION}.tar.gz
ADD ${IG_URL} /tmp/ig.tar.gz
RUN if [ -n "${IG_SHA256}" ]; then echo "${IG_SHA256}  /tmp/ig.tar.gz" | sha256sum -c -; fi \
 && tar -C /usr/local/bin -xzf /tmp/ig.tar.gz ig \
 && chmod 0755 /usr/local/bin/ig \
 && rm /tmp/ig.tar.gz

# ---- runtime: slim Node 20, non-root, nothing written under / (read-only root filesystem friendly).
FROM ${NODE_SLIM_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    REINS_DATA_DIR=/var/lib/reins \
    IG_PATH=/usr/bin/ig
WORKDIR /app
# What `npm start`, `reins` and `reins-sensor` load: the built server, CLI, sensor and console (dist/), the bin
# scripts, the production dependencies, and the migrations (read as SQL text from src/store/migrations).
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/bin ./bin
COPY --from=build /src/src/store/migrations ./src/store/migrations
COPY --from=ig /usr/local/bin/ig /usr/bin/ig
# `reins` and `reins-sensor` on PATH; the embedded store's directory (unused with DATABASE_URL) owned by the user.
RUN ln -s /app/bin/reins.mjs /usr/local/bin/reins \
 && ln -s /app/bin/reins-sensor.mjs /usr/local/bin/reins-sensor \
 && mkdir -p /var/lib/reins \
 && chown node:node /var/lib/reins
# The image's `node` user (uid 1000). The sensor's DaemonSet runs it as root (the engine needs it).
USER 1000:1000
EXPOSE 8080 8081 9090
# `npm start`'s command (package.json "start"), without npm: signals reach Node directly, and npm writes nothing.
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz.
CMD ["node", "dist/main.js"]
