# Parley: one container runs `npm start`'s line directly (Node as PID 1 handles SIGTERM and
# drains). PARLEY_WORKERS (with DATABASE_URL) runs several processes on one port inside it.
FROM node:24-bookworm-slim

# The MALLOC_ settings are package.json's start script's: glibc gives freed memory back.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072

WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the `prepare` script (web/build.ts), which has nothing to build until web/src is here.
COPY web/build.ts ./web/build.ts
# Production dependencies only; package.json's allowScripts decides which install scripts run.
# Then drop what this image never runs: the `node` package's second Node binary (the image has
# Node 24) and onnxruntime's macOS and Windows builds.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node node_modules/.bin/node \
           node_modules/onnxruntime-node/bin/napi-v6/darwin \
           node_modules/onnxruntime-node/bin/napi-v6/win32 \
 && npm cache clean --force

COPY src ./src
# The web client is built here (esbuild, Preact, marked and DOMPurify are production
# dependencies for this), so the image serves the page without building at start.
COPY web ./web
RUN node web/build.ts && rm -rf web/src
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8000

# Liveness and database reachability; no curl in the slim image, Node's fetch does it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# The node flags of package.json's start script (test/ops/deploy.test.ts keeps them equal).
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=30", "--liftoff-only", "src/start.ts"]
