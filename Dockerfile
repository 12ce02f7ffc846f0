# poppy-twin: the REST server and its twins (docs/classroom.md, "Kubernetes"). Two stages: the production dependencies are
# installed in the first (no `prepare` there: the sources are not in that stage); the final image has them, the
# sources, the build made from them (scripts/build.js, dist/), no dev dependency, and runs the build as `node`.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY robots ./robots
COPY urdf ./urdf
COPY examples ./examples
COPY scenarios ./scenarios
COPY bin ./bin
COPY scripts ./scripts
RUN node scripts/build.js && mkdir -p /records && chown node:node /records
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/poppy-twin.js"]
CMD ["--host", "0.0.0.0", "--port", "8080", "--records-dir", "/records"]
