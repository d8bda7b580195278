# Keyward for Cloud Run (docs/operate/cloud-run.md). Two stages: build with every
# dependency, run with production dependencies only. `npm run test:docker`
# (scripts/docker/) builds these stages as Docker would, without a Docker engine:
# the context filtered by .dockerignore, each stage from its own COPY lines, its
# RUN steps run in it; then runs the image. Every COPY source must be in the
# build context: .dockerignore decides (it keeps scripts/ out but for this one file).

# ---- build: compile src/, providers/, plugins/ to dist/, bundle console/ to dist/console/ ----
# sdk/ (@keyward/sdk) is a devDependency linked from the lockfile: the types the providers and plugins import.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY tsconfig.json tsconfig.build.json ./
COPY sdk ./sdk
COPY src ./src
COPY providers ./providers
COPY plugins ./plugins
COPY console ./console
COPY scripts/build-console.mjs ./scripts/build-console.mjs
# `npm ci` runs the `prepare` script, which builds; the explicit build keeps this stage honest if that ever changes.
RUN npm ci && npm run build

# ---- runtime ------------------------------------------------------------------
FROM node:24-slim AS runtime
# KEYWARD_METRICS_PORT: /metrics only on 127.0.0.1:9464, for a sidecar collector in the same instance
# (docs/operate/cloud-run.md, Managed Service for Prometheus); the public port does not serve it.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    KEYWARD_DATA_DIR=/data \
    KEYWARD_METRICS_PORT=9464
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, and no install scripts (nothing here needs one; the `prepare` build already ran above).
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force \
 && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
# Node's compile cache, filled now (src/boot/warm-compile-cache.ts): a new instance starts from the bytecode of its
# ~300 modules instead of compiling them, about 35 ms less to /readyz (bench/README.md). Keyed by each file's
# content and Node's version, so it only ever matches this image; the node user may add to it.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
RUN node dist/src/boot/warm-compile-cache.js && chown -R node:node /app/.node-compile-cache
# The image's unprivileged user; /data is the only writable folder it needs (embedded SQLite, local key file).
USER node
EXPOSE 8080
# Node itself is PID 1 (exec form, no shell, no npm): SIGTERM reaches Keyward, which drains and exits 0.
# The young generation capped at 16 MB per semi-space (the same flag as `npm start`): Node 24 otherwise grows it
# to 64 MB under a proxy's allocation rate, and 1,000 streams then peaked at 260–275 MB RSS instead of 165–200
# (bench/results/ab-2026-11-23.md), at no measurable CPU cost.
CMD ["node", "--max-semi-space-size=16", "dist/src/main.js"]
