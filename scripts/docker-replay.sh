#!/usr/bin/env bash
# Replays the Dockerfile's steps without Docker, in clean temp folders, so the
# image's recipe is tested where no Docker daemon runs (CI, sandboxes):
#
#   build stage    the repo's tracked files that the Dockerfile COPYs
#                  → npm ci → npm run build (tsc, then the console's esbuild step)
#   runtime stage  package.json + package-lock.json + dist/ only
#                  → npm ci --omit=dev --ignore-scripts
#                  → node dist/src/main.js on Node 24 (the project's own
#                    node_modules/.bin/node; the image is node:24-slim)
#
# Then it checks what Cloud Run relies on: the listening line, /readyz 200, an
# admin API round trip, the console served from dist/console, the lazily loaded
# Firestore and Cloud KMS adapters resolving their clients from production
# dependencies, and SIGTERM → exit 0.
#
# Usage: scripts/docker-replay.sh [--keep]   (npm run test:docker)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_BIN="$ROOT/node_modules/.bin/node"
KEEP=0
[[ "${1:-}" == "--keep" ]] && KEEP=1

say() { printf '[docker-replay] %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

[[ -x "$NODE_BIN" ]] || fail "no $NODE_BIN: run npm install in the repo first"
NODE_VERSION="$("$NODE_BIN" --version)"
[[ "$NODE_VERSION" == v24.* ]] || fail "the runtime image is Node 24; $NODE_BIN is $NODE_VERSION"

# The Dockerfile must still say what this script replays.
DOCKERFILE="$ROOT/Dockerfile"
for needle in 'FROM node:24-slim AS build' 'RUN npm ci && npm run build' 'FROM node:24-slim AS runtime' \
  'RUN npm ci --omit=dev --ignore-scripts' 'COPY --from=build /app/dist ./dist' 'USER node' 'CMD ["node", "--max-semi-space-size=16", "dist/src/main.js"]'; do
  grep -qF "$needle" "$DOCKERFILE" || fail "the Dockerfile no longer contains: $needle (update this script with it)"
done
# The image runs Node with the V8 flags `npm start` uses (one setting, two launchers).
grep -qF '"start": "node --max-semi-space-size=16 dist/src/main.js"' "$ROOT/package.json" \
  || fail "package.json's start script and the Dockerfile's CMD no longer pass the same Node flags"
BUILD_PATHS=(package.json package-lock.json tsconfig.json tsconfig.build.json src providers plugins console scripts/build-console.mjs)
for p in "${BUILD_PATHS[@]}"; do
  grep -qE "^COPY ${p}( |$)|^COPY .*[ ]${p}[ ]" "$DOCKERFILE" || fail "the Dockerfile does not COPY $p any more (update BUILD_PATHS)"
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/keyward-docker-replay.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
  if [[ $KEEP == 1 ]]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# npm itself runs on Node 24 too (npm's shebang finds the first `node` on PATH), as in the image.
export PATH="$(dirname "$NODE_BIN"):$PATH"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
started=$SECONDS

# ---- build stage --------------------------------------------------------------
say "build stage in $WORK/build"
mkdir -p "$WORK/build"
# Tracked files only (what a clean checkout holds), with their working-tree contents.
git -C "$ROOT" ls-files -z -- "${BUILD_PATHS[@]}" | (cd "$ROOT" && tar --null -T - -cf -) | tar -xf - -C "$WORK/build"
(cd "$WORK/build" && npm ci --no-progress --loglevel=error && npm run build --silent) >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; fail "build stage"; }
[[ -f "$WORK/build/dist/src/main.js" ]] || fail "the build produced no dist/src/main.js"
[[ -f "$WORK/build/dist/console/index.html" ]] || fail "the build produced no dist/console/index.html (the console)"
say "build stage done ($((SECONDS - started)) s)"

# ---- runtime stage ------------------------------------------------------------
say "runtime stage in $WORK/app"
mkdir -p "$WORK/app" "$WORK/data"
cp "$WORK/build/package.json" "$WORK/build/package-lock.json" "$WORK/app/"
cp -R "$WORK/build/dist" "$WORK/app/dist"
(cd "$WORK/app" && NODE_ENV=production npm ci --omit=dev --ignore-scripts --no-progress --loglevel=error) >"$WORK/runtime.log" 2>&1 \
  || { tail -40 "$WORK/runtime.log" >&2; fail "runtime stage npm ci"; }
for dev in typescript ava tsx @firestore-emulator/server node; do
  [[ ! -e "$WORK/app/node_modules/$dev" ]] || fail "a dev dependency ($dev) reached the runtime stage"
done
say "runtime stage done ($((SECONDS - started)) s; node_modules $(du -sh "$WORK/app/node_modules" | cut -f1))"

# The Cloud Run adapters are imported lazily; prove they load and build their clients from production dependencies alone.
(cd "$WORK/app" && NODE_ENV=production "$NODE_BIN" --input-type=module -e "
  const { FirestoreStore } = await import('./dist/src/store/firestore/firestore-store.js');
  const { GcpKeyWrapper } = await import('./dist/src/kms/gcp.js');
  const store = await FirestoreStore.connect({ gcpProject: 'replay', firestoreEmulatorHost: '127.0.0.1:9' });
  const kms = await GcpKeyWrapper.connect({ kmsKey: 'projects/p/locations/l/keyRings/r/cryptoKeys/k', kmsEndpoint: '127.0.0.1:9' });
  await store.close();
  await kms.close();
  console.log('adapters ok');
") >"$WORK/adapters.log" 2>&1 || { cat "$WORK/adapters.log" >&2; fail "the Firestore / Cloud KMS adapters do not load in the runtime stage"; }

# ---- run it as the image would ----------------------------------------------------
ADMIN_TOKEN="replay-admin-token-$RANDOM$RANDOM$RANDOM"
say "starting node --max-semi-space-size=16 dist/src/main.js"
(cd "$WORK/app" && exec env -i PATH="$PATH" HOME="$WORK" NODE_ENV=production HOST=127.0.0.1 PORT=0 \
  KEYWARD_DATA_DIR="$WORK/data" KEYWARD_ADMIN_TOKEN="$ADMIN_TOKEN" "$NODE_BIN" --max-semi-space-size=16 dist/src/main.js) >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!

PORT=""
for _ in $(seq 1 150); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then cat "$WORK/server.err" >&2; fail "the server exited during start-up"; fi
  line="$(grep -m 1 '"message":"listening"' "$WORK/server.out" 2>/dev/null || true)"
  if [[ -n "$line" ]]; then
    PORT="$(printf '%s' "$line" | "$NODE_BIN" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).port)')"
    break
  fi
  sleep 0.1
done
[[ -n "$PORT" ]] || fail "no listening line within 15 s"
BASE="http://127.0.0.1:$PORT"
say "listening on $BASE"

status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[[ "$(status "$BASE/healthz")" == 200 ]] || fail "/healthz is not 200"
[[ "$(status "$BASE/readyz")" == 200 ]] || fail "/readyz is not 200"

ORG_JSON="$(curl -sf -X POST "$BASE/v1/orgs" -H "authorization: Bearer $ADMIN_TOKEN" -H 'content-type: application/json' -d '{"name":"replay"}')" \
  || fail "POST /v1/orgs"
ORG_TOKEN="$(printf '%s' "$ORG_JSON" | "$NODE_BIN" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).token)')"
CRED_JSON="$(curl -sf -X POST "$BASE/v1/credentials" -H "authorization: Bearer $ORG_TOKEN" -H 'content-type: application/json' \
  -d '{"provider":"openai","api_key":"sk-replay-0123456789abcdef"}')" || fail "POST /v1/credentials"
CRED_ID="$(printf '%s' "$CRED_JSON" | "$NODE_BIN" -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).id)')"
[[ "$(status -H "authorization: Bearer $ORG_TOKEN" "$BASE/v1/credentials/$CRED_ID")" == 200 ]] || fail "GET /v1/credentials/$CRED_ID"
[[ "$(status "$BASE/v1/openapi.json")" == 200 ]] || fail "/v1/openapi.json is not 200"
# The console's page and the script it names, from dist/console in the image.
CONSOLE_HTML="$(curl -sf "$BASE/console")" || fail "GET /console"
CONSOLE_JS="$(printf '%s' "$CONSOLE_HTML" | grep -o '/console/console\.[A-Za-z0-9]*\.js' | head -1)"
[[ -n "$CONSOLE_JS" && "$(status "$BASE$CONSOLE_JS")" == 200 ]] || fail "the console's script is not served"
curl -s -D - -o /dev/null "$BASE/console" | grep -qi "^content-security-policy: default-src 'self'" || fail "GET /console has no strict CSP"
say "admin API round trip ok"

kill -TERM "$SERVER_PID"
set +e
wait "$SERVER_PID"
code=$?
set -e
SERVER_PID=""
[[ $code == 0 ]] || { cat "$WORK/server.err" >&2; fail "SIGTERM: exit code $code, expected 0"; }
grep -q '"message":"stopped"' "$WORK/server.out" || fail "no 'stopped' log line after SIGTERM"
if grep -q 'sk-replay-0123456789abcdef' "$WORK/server.out" "$WORK/server.err"; then fail "the stored key appeared in the logs"; fi
say "SIGTERM → exit 0"
say "ok ($((SECONDS - started)) s)"
