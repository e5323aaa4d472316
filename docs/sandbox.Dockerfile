# The image DockerSandbox runs, for engines that reach a registry:
#   docker build -t fstools-sandbox:latest -f docs/sandbox.Dockerfile docs
# The same packages as scripts/docker-engine's offline build (debootstrap): a shell,
# coreutils and util-linux (setsid) from the base image, python3 for deepagents' file
# operations, ripgrep for search. Add the project's own toolchain on top.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 ripgrep \
    && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man
WORKDIR /workspace
