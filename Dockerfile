# CPU image that builds tfm and runs its tests with the same scripts a developer runs.
# CUDA variant: docker build --build-arg BASE=nvidia/cuda:13.0.0-devel-ubuntu24.04 -t tfm:cuda .
ARG BASE=debian:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv python3-pip git sudo && rm -rf /var/lib/apt/lists/*
WORKDIR /src/tfm
COPY scripts/bootstrap scripts/versions.env scripts/
# Dependencies first, so code edits do not reinstall LibTorch.
RUN scripts/bootstrap
COPY . .
RUN scripts/build && scripts/test
ENTRYPOINT ["/src/tfm/build/tfm"]
