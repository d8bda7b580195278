# Keyward for Cloud Run (docs/cloud-run.md). Two stages: build with every
# dependency, run with production dependencies only. scripts/docker-replay.sh
# replays these steps without Docker (npm run test:docker): keep them in step.

# ---- build: compile src/, providers/, plugins/ to dist/, bundle console/ to dist/console/ ----
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY providers ./providers
COPY plugins ./plugins
COPY console ./console
COPY scripts/build-console.mjs ./scripts/build-console.mjs
# `npm ci` runs the `prepare` script, which builds; the explicit build keeps this stage honest if that ever changes.
RUN npm ci && npm run build

# ---- runtime ------------------------------------------------------------------
FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    KEYWARD_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only, and no install scripts (nothing here needs one; the `prepare` build already ran above).
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force \
 && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
# The image's unprivileged user; /data is the only writable folder it needs (embedded SQLite, local key file).
USER node
EXPOSE 8080
# Node itself is PID 1 (exec form, no shell, no npm): SIGTERM reaches Keyward, which drains and exits 0.
# The young generation capped at 16 MB per semi-space (the same flag as `npm start`): Node 24 otherwise grows it
# to 64 MB under a proxy's allocation rate, and 1,000 streams then peaked at 260–275 MB RSS instead of 165–200
# (bench/results/ab-2026-11-23.md), at no measurable CPU cost.
CMD ["node", "--max-semi-space-size=16", "dist/src/main.js"]
