# poppy-twin: the REST server and its twins (README "Kubernetes"). Two stages: the production dependencies are
# installed in the first; the final image has them, the sources it runs, and no dev dependency, and runs as `node`.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

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
RUN mkdir -p /records && chown node:node /records
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--import", "tsx", "src/main.ts"]
CMD ["--host", "0.0.0.0", "--port", "8080", "--records-dir", "/records"]
