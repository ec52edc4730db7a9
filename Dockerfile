# The service image. Compiling the dependencies takes most of a build and they change far less
# often than the sources, so they get a layer of their own: cargo-chef derives a recipe
# (manifests, lock file, target skeletons) from the workspace, the dependencies are compiled from
# that recipe, and only then are the sources copied in. Because the recipe is derived, not
# written by hand, the dependency layer cannot drift from the manifests, and it is rebuilt only
# when they change. `.ci/dockerfile-build-check.py` runs the build stages below in CI.

# Tools: the toolchain and cargo-chef, shared by the planner and the builder.
FROM rust:1.95-bookworm AS chef
RUN cargo install cargo-chef --locked --version 0.1.78
WORKDIR /app

# Plan: the recipe of the whole workspace (the service and the members it declares: the bench, the
# test kit).
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# Build: the service's dependencies from the recipe, then the service itself.
FROM chef AS builder
COPY --from=planner /app/recipe.json recipe.json
# Patched dependencies (vendor/README.md) are sources the recipe does not carry.
COPY vendor vendor
RUN cargo chef cook --release --locked --recipe-path recipe.json --package order-service --bin order-service
COPY . .
# The build context has no `.git` (.dockerignore): the commit is given as a build argument, e.g.
# `--build-arg ORDER_SERVICE_REVISION=$(git rev-parse --short=12 HEAD)`, else `unknown`
# (docs/operations/upgrading.md "Which release is running").
ARG ORDER_SERVICE_REVISION=unknown
RUN cargo build --release --locked --package order-service --bin order-service

# Run: a slim image with the binary only (migrations are embedded in it).
FROM debian:bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 app
COPY --from=builder /app/target/release/order-service /usr/local/bin/order-service
USER app
ENV HTTP_ADDR=0.0.0.0:8080 LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD curl -fsS http://127.0.0.1:8080/health/ready || exit 1
ENTRYPOINT ["order-service"]
CMD ["serve"]
