# Pinwheel in a container: the same steps as the README's `scripts/demo`.
#   docker build -t pinwheel . && docker run --rm -p 8080:8080 pinwheel

# Build stage: Swift 6 on Debian bookworm, plus what scripts/setup installs for building.
FROM swift:6.2-bookworm AS build
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libwebsockets-dev libwebsockets-evlib-ev libisal-dev libnats-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product pinwheel --static-swift-stdlib \
 && install -D "$(swift build -c release --show-bin-path)/pinwheel" /opt/pinwheel/bin/pinwheel
COPY web /opt/pinwheel/web
COPY data /opt/pinwheel/data
# MapLibre GL JS for the MapLibre layer's example, from PyPI's maplibre wheel (scripts/setup does the same).
COPY scripts/vendor-maplibre ./scripts/
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip \
 && python3 scripts/vendor-maplibre /opt/maplibre-gl

# Run stage: bookworm-slim with the libwebsockets, ISA-L and NATS client runtimes, Debian's Leaflet and curl
# for the health check.
FROM debian:bookworm-slim
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libwebsockets17 libwebsockets-evlib-ev libisal2 libnats3.4 libjs-leaflet curl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/pinwheel /opt/pinwheel
COPY --from=build /opt/maplibre-gl /usr/local/share/javascript/maplibre-gl
# pinwheel finds web/ and data/ beside its own bin/ folder.
WORKDIR /opt/pinwheel
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
USER nobody
CMD ["/opt/pinwheel/bin/pinwheel", "serve", "--host", "0.0.0.0", "--port", "8080", "--movers", "500", "--movers-rate", "200"]
