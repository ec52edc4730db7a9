# Build: compile the release binary with the dependencies cached in their own layer.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
RUN mkdir src && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
    && cargo build --release --locked && rm -rf src
COPY src ./src
COPY migrations ./migrations
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --bin order-service

# Run: a slim image with the binary only (migrations are embedded in it).
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 app
COPY --from=build /src/target/release/order-service /usr/local/bin/order-service
USER app
ENV HTTP_ADDR=0.0.0.0:8080 LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD curl -fsS http://127.0.0.1:8080/health/ready || exit 1
ENTRYPOINT ["order-service"]
CMD ["serve"]
