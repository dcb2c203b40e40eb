# CPU image that builds tfm and runs its tests with the same scripts a developer runs.
# CUDA variant: docker build --build-arg BASE=nvidia/cuda:13.0.0-runtime-ubuntu24.04 \
#   --build-arg TORCH_VARIANT=full -t tfm:cuda .
ARG BASE=debian:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv python3-pip git sudo && rm -rf /var/lib/apt/lists/*
WORKDIR /src/tfm
COPY scripts/bootstrap scripts/versions.env scripts/
# Dependencies first, so code edits do not reinstall LibTorch. `docker build` sees no GPU, so a
# CUDA image asks for the full LibTorch install explicitly (--build-arg TORCH_VARIANT=full).
ARG TORCH_VARIANT=cpu
RUN TFM_TORCH_VARIANT=${TORCH_VARIANT} scripts/bootstrap
COPY . .
RUN scripts/build && scripts/test
# `tfm serve` inside: docker run -p 8080:8080 -v $PWD:/models tfm serve --model /models/avg.pt --host 0.0.0.0
EXPOSE 8080
ENTRYPOINT ["/src/tfm/build/tfm"]
