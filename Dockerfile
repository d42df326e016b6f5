# Mailroom in a container: one executable on a slim Debian base.
#   docker build -t mailroom .
#   docker run -d --name mailroom -p 8825:8825 -v mailroom-data:/data mailroom
#   docker exec mailroom mailroom keys create --role Administrator --name admin

# Build stage: Node 22 + npm (dependencies need Node >= 22.19) fetch the pinned Bun (a devDependency), which compiles the binary.
FROM node:22-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Final stage: the binary, a non-root user and a data volume. Nothing else is needed at run
# time: migrations, the web page and the API docs are embedded in the executable.
FROM debian:bookworm-slim
RUN groupadd --system --gid 10001 mailroom \
 && useradd --system --uid 10001 --gid mailroom --home-dir /data --no-create-home --shell /usr/sbin/nologin mailroom \
 && mkdir /data \
 && chown mailroom:mailroom /data
COPY --from=build /src/dist/mailroom /usr/local/bin/mailroom
ENV MAILROOM_DATA_DIR=/data \
    MAILROOM_HTTP_LISTEN=0.0.0.0:8825
VOLUME ["/data"]
WORKDIR /data
USER mailroom
EXPOSE 8825
# Exec form: the binary is PID 1 and receives SIGTERM from `docker stop` itself; it handles
# it and exits 0. The command is a CMD so `docker run IMAGE keys list` also works.
ENTRYPOINT ["/usr/local/bin/mailroom"]
CMD ["serve"]
